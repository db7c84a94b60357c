"""The Colab cell: fetches the course when `google.colab` is loaded, says one sentence when it cannot."""

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from helpers import colab

ROOT = Path(__file__).resolve().parent.parent
AFTER = """
import importlib.util, json, helpers, helpers.data
print(json.dumps({"helpers": helpers.__file__, "data_ok": helpers.data.verify_all(),
                  "tensorflow": importlib.util.find_spec("tensorflow") is not None}))
"""


def fake_colab_python(tmp_path):
    """A Python without helpers and without TensorFlow, with a fake google.colab (and pynvml) to import."""
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(tmp_path / "venv")
    fake = tmp_path / "fake" / "google" / "colab"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")  # no google/__init__.py: google.protobuf must still import
    for module in ("pynvml", "xprof", "kubernetes_validate"):  # present, so the cell installs nothing
        (tmp_path / "fake" / f"{module}.py").write_text("")
    return tmp_path / "venv" / "bin" / "python", {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "fake")}


def test_bootstrap_clones_the_course_and_makes_helpers_and_data_importable(tmp_path):
    python, env = fake_colab_python(tmp_path)
    course = tmp_path / "course"
    env.update(COURSE_REPO_URL=str(ROOT), COURSE_DIR=str(course))
    probe = subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('helpers') is None)"],
                           capture_output=True, text=True, env=env, check=True, cwd=tmp_path)
    assert probe.stdout.strip() == "True", "helpers must not be importable before the bootstrap"
    code = "import google.colab\n" + colab.BOOTSTRAP_CELL + "\n" + AFTER  # Colab's kernel has imported it
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=tmp_path)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["helpers"] == str(course / "helpers" / "__init__.py")
    assert found["data_ok"] is True and (course / "data" / "MANIFEST").exists()
    assert found["tensorflow"] is False, "the bootstrap must not install TensorFlow"
    # A second run in a new kernel reuses the clone.
    again = subprocess.run([python, "-c", code], capture_output=True, text=True,
                           env={**env, "COURSE_REPO_URL": "/nonexistent"}, check=True, cwd=tmp_path)
    assert json.loads(again.stdout.strip().splitlines()[-1])["data_ok"] is True


def test_a_failed_clone_shows_one_sentence_not_a_traceback(tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    code = colab.BOOTSTRAP_CELL.replace('if "google.colab" in sys.modules or on_kaggle:', "if True:")
    assert code != colab.BOOTSTRAP_CELL
    shell = InteractiveShell.instance()
    env = {"COURSE_REPO_URL": str(tmp_path / "missing.git"), "COURSE_DIR": str(tmp_path / "course")}
    script = f"import os\nos.environ.update({env!r})\n{code}"
    runner = (f"from IPython.core.interactiveshell import InteractiveShell\n"
              f"InteractiveShell.instance().run_cell({script!r})\n")
    out = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True, cwd=tmp_path)
    shown = out.stdout + out.stderr
    assert "Could not fetch the course from" in shown and "COURSE_REPO_URL" in shown, shown
    assert "Traceback" not in shown and "CalledProcessError" not in shown, shown
    assert not (tmp_path / "course").exists()
    del shell


def test_bootstrap_does_nothing_outside_colab(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "COURSE_DIR": str(tmp_path / "course"), "COURSE_REPO_URL": "/nonexistent"}
    subprocess.run([sys.executable, "-c", colab.BOOTSTRAP_CELL], env=env, check=True, cwd=tmp_path)
    assert not (tmp_path / "course").exists()


def test_ensure_installs_the_pinned_package_only_on_a_hosted_runtime_and_only_when_missing(tmp_path, monkeypatch):
    calls = []

    def fake_run(args, capture_output, text):
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, "", "")

    monkeypatch.setattr(colab.subprocess, "run", fake_run)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("tensorflow==2.21.0\nnvidia-ml-py==13.615.71\nxprof==2.24.2  # reads traces\n"
                            "kubernetes-validate==1.37.0\n")
    installed = set()
    monkeypatch.setattr(colab.importlib.util, "find_spec", lambda name: object() if name in installed else None)
    assert colab.ensure("xprof", requirements, runtime=None) is False and calls == [], "off Colab/Kaggle: only look"
    assert colab.ensure("xprof", requirements, runtime="kaggle") is False  # pip 'worked' but nothing appeared
    assert calls[-1][-1] == "xprof==2.24.2" and "tensorflow" not in " ".join(calls[-1])
    assert "--quiet" in calls[-1]
    calls.clear()
    installed.add("kubernetes_validate")
    assert colab.ensure("kubernetes_validate", requirements, runtime="colab") is True and calls == []
    with pytest.raises(ValueError, match="module='tensorflow'"):
        colab.ensure("tensorflow", requirements)


def test_a_failed_install_says_one_sentence_and_returns_false(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(colab.subprocess, "run", lambda args, capture_output, text: subprocess.CompletedProcess(
        args, 1, "", "Collecting xprof\nERROR: Could not find a version that satisfies the requirement xprof"))
    monkeypatch.setattr(colab.importlib.util, "find_spec", lambda name: None)
    assert colab.ensure("xprof", tmp_path / "none.txt", runtime="kaggle") is False
    shown = capsys.readouterr().out
    assert shown.count("\n") == 1 and "Could not install xprof on Kaggle" in shown and "Internet" in shown, shown


def test_the_bootstrap_cell_installs_nothing():
    assert "pip" not in colab.BOOTSTRAP_CELL and "prepare" not in colab.BOOTSTRAP_CELL


def test_hosted_runtime_is_colab_by_module_and_kaggle_by_its_variable():
    assert colab.hosted({}, {"google.colab": object()}) == "colab"
    assert colab.hosted({"KAGGLE_KERNEL_RUN_TYPE": "Batch"}, {}) == "kaggle"
    assert colab.hosted({"KAGGLE_URL_BASE": "x"}, {}) is None


def test_on_kaggle_a_failed_clone_names_the_internet_setting(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "KAGGLE_KERNEL_RUN_TYPE": "Interactive",
           "COURSE_REPO_URL": str(tmp_path / "missing.git"), "COURSE_DIR": str(tmp_path / "course")}
    runner = ("from IPython.core.interactiveshell import InteractiveShell\n"
              f"InteractiveShell.instance().run_cell({colab.BOOTSTRAP_CELL!r})\n")
    out = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True, cwd=tmp_path, env=env)
    shown = out.stdout + out.stderr
    assert "turn on Internet in the notebook's Settings" in shown and "Traceback" not in shown, shown


def test_kaggle_badge_points_at_the_same_file_as_colab():
    line = colab.badges("03_cpu_vs_gpu_timing.ipynb")
    assert "Open in Kaggle" in line and colab.kaggle_url("03_cpu_vs_gpu_timing.ipynb") in line
    assert colab.kaggle_url("03_cpu_vs_gpu_timing.ipynb").endswith(colab.source_url("03_cpu_vs_gpu_timing.ipynb"))


def test_colab_links_name_the_repository_once():
    assert colab.REPO in colab.REPO_URL and colab.REPO in colab.colab_url("00_environment_check.ipynb")
    with pytest.raises(ValueError, match="notebook="):
        colab.colab_url("notebooks/00.ipynb")


def test_the_readme_carries_the_colab_and_kaggle_badges():
    readme = (ROOT / "README.md").read_text()
    assert colab.kaggle_url("00_environment_check.ipynb") in readme
    assert colab.colab_url("00_environment_check.ipynb") in readme
