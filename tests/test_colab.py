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

    code = colab.BOOTSTRAP_CELL.replace('if "google.colab" in sys.modules:', "if True:")
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


def test_prepare_installs_the_pinned_packages_only_when_missing(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(colab.subprocess, "run", lambda args, check: calls.append(args))
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("tensorflow==2.21.0\nnvidia-ml-py==13.615.71\ntensorboard-plugin-profile==2.24.2\n"
                            "kubernetes-validate==1.37.0\n")
    monkeypatch.setattr(colab.importlib.util, "find_spec", lambda name: None)
    wanted = ["nvidia-ml-py==13.615.71", "tensorboard-plugin-profile==2.24.2", "kubernetes-validate==1.37.0"]
    assert colab.prepare(requirements) == wanted
    assert calls and calls[0][-3:] == wanted and "tensorflow==" not in " ".join(calls[0])
    calls.clear()
    monkeypatch.setattr(colab.importlib.util, "find_spec", lambda name: object())
    assert colab.prepare(requirements) == [] and calls == []


def test_colab_links_name_the_repository_once():
    assert colab.REPO in colab.REPO_URL and colab.REPO in colab.colab_url("00_environment_check.ipynb")
    with pytest.raises(ValueError, match="notebook="):
        colab.colab_url("notebooks/00.ipynb")
