"""Each notebook on a Colab-like runtime (make test-colab): opened alone, it fetches the course and runs.

Runs only under `.venv-colab` (tools/colab_env.py): Python 3.12 with Colab's older TensorFlow and
Keras, a fake `google.colab` loaded at start-up, and no `helpers` installed. Each committed notebook
is put alone into a fresh folder, as Colab opens it; its Colab cell clones the course from a local
bare clone of HEAD (COURSE_REPO_URL) into COURSE_DIR, and the notebook runs in smoke mode. Its
claims are asserted as in `make test`.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import nbrun
import pytest

pytestmark = [pytest.mark.colab, pytest.mark.skipif("google.colab" not in sys.modules,
                                                    reason="only in the Colab-like runtime (make test-colab)")]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def bare_clone(tmp_path_factory):
    target = tmp_path_factory.mktemp("remote") / "course.git"
    subprocess.run(["git", "clone", "--bare", "--quiet", str(ROOT), str(target)], check=True)
    return target


def test_the_runtime_is_colab_like():
    import keras
    import tensorflow as tf

    assert sys.version_info[:2] == (3, 12)
    assert tf.__version__.startswith("2.20.") and keras.__version__.startswith("3.13."), (tf.__version__,
                                                                                         keras.__version__)
    assert importlib.util.find_spec("helpers") is None, "helpers must come from the notebook's Colab cell"


@pytest.mark.parametrize("name", nbrun.present())
def test_notebook_fetches_the_course_and_runs_alone(name, tmp_path, bare_clone, monkeypatch):
    import nbformat
    import papermill as pm

    folder = tmp_path / "opened"
    folder.mkdir()
    # The notebook alone, as Colab opens it from the repository: the committed version, like the helpers.
    shown = subprocess.run(["git", "--git-dir", str(bare_clone), "show", f"HEAD:notebooks/{name}"], capture_output=True)
    if shown.returncode:
        pytest.skip(f"{name} is not committed yet")
    (folder / name).write_bytes(shown.stdout)
    course = tmp_path / "content" / "gpu-deep-learning-notebooks"
    monkeypatch.setenv("COURSE_REPO_URL", str(bare_clone))
    monkeypatch.setenv("COURSE_DIR", str(course))
    monkeypatch.setenv("COURSE_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("COURSE_SMOKE", raising=False)
    results_path = tmp_path / "results.json"
    pm.execute_notebook(str(folder / name), str(tmp_path / name), parameters={"SMOKE": True,
                        "RESULTS_PATH": str(results_path)}, cwd=str(folder), kernel_name="python3",
                        progress_bar=False, execution_timeout=900)
    assert (course / "helpers" / "__init__.py").exists(), "the Colab cell did not fetch the course"
    results = json.loads(results_path.read_text())
    run = nbrun.Run(results, nbformat.read(tmp_path / name, as_version=4), 0.0, tmp_path)
    # Some claims ask the helpers (for example whether a worker still runs): use the copy the notebook fetched.
    monkeypatch.syspath_prepend(str(course))
    importlib.import_module(f"claims.nb{name[:2]}").check(run)
    assert os.listdir(folder) == [name], f"{name} wrote next to itself: {os.listdir(folder)}"
