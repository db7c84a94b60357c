"""The Colab bootstrap cell: fetches the course when `google.colab` is there and `helpers` is not."""

import subprocess
import sys
import venv
from pathlib import Path

from helpers import colab

ROOT = Path(__file__).resolve().parent.parent
AFTER = """
import importlib.util, json, helpers, helpers.data
print(json.dumps({"helpers": helpers.__file__, "data_ok": helpers.data.verify_all(),
                  "tensorflow": importlib.util.find_spec("tensorflow") is not None}))
"""


def test_bootstrap_clones_the_course_and_makes_helpers_and_data_importable(tmp_path):
    # A Python without helpers and without TensorFlow, as on a fresh Colab kernel minus TF.
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    fake = tmp_path / "fake" / "google" / "colab"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    course = tmp_path / "course"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "fake"),
           "COURSE_REPO_URL": str(ROOT), "COURSE_DIR": str(course)}
    probe = subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('helpers') is None)"],
                           capture_output=True, text=True, env=env, check=True, cwd=tmp_path)
    assert probe.stdout.strip() == "True", "helpers must not be importable before the bootstrap"
    out = subprocess.run([python, "-c", colab.BOOTSTRAP_CELL + "\n" + AFTER],
                         capture_output=True, text=True, env=env, check=True, cwd=tmp_path)
    import json

    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["helpers"] == str(course / "helpers" / "__init__.py")
    assert found["data_ok"] is True and (course / "data" / "MANIFEST").exists()
    assert found["tensorflow"] is False, "the bootstrap must not install TensorFlow"
    # A second run in a new kernel reuses the clone.
    again = subprocess.run([python, "-c", colab.BOOTSTRAP_CELL + "\n" + AFTER],
                           capture_output=True, text=True, env={**env, "COURSE_REPO_URL": "/nonexistent"}, check=True,
                           cwd=tmp_path)
    assert json.loads(again.stdout.strip().splitlines()[-1])["data_ok"] is True


def test_bootstrap_does_nothing_outside_colab(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "COURSE_DIR": str(tmp_path / "course"), "COURSE_REPO_URL": "/nonexistent"}
    subprocess.run([sys.executable, "-c", colab.BOOTSTRAP_CELL], env=env, check=True, cwd=tmp_path)
    assert not (tmp_path / "course").exists()


def test_colab_links_name_the_repository_once():
    assert colab.REPO in colab.REPO_URL and colab.REPO in colab.colab_url("00_environment_check.ipynb")
    import pytest

    with pytest.raises(ValueError, match="notebook="):
        colab.colab_url("notebooks/00.ipynb")
