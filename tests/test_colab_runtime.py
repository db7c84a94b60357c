"""Each notebook on a Colab-like or Kaggle-like runtime: opened alone, it fetches the course and runs.

Runs only under `.venv-colab` (tools/colab_env.py): Python 3.12 with Colab's older TensorFlow and
Keras, and no `helpers` installed. `make test-colab` loads a fake `google.colab` at start-up;
`make test-kaggle` loads nothing of Colab's and sets Kaggle's `KAGGLE_KERNEL_RUN_TYPE`; `make test-hosted` runs both
in one session on both cores (each Kaggle run's kernel gets Kaggle's variables). Each committed
notebook is put alone into a fresh folder, as the runtime opens it; its first cell clones the course
from a local bare clone of HEAD (COURSE_REPO_URL) into COURSE_DIR, and the notebook runs in smoke
mode. Its claims are asserted as in `make test`.
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

RUNTIME = ("kaggle" if os.environ.get("COURSE_FAKE_RUNTIME") == "kaggle" and "KAGGLE_KERNEL_RUN_TYPE" in os.environ
           else "colab" if "google.colab" in sys.modules else None)
# `make test-hosted` runs both runtimes in one session (COURSE_HOSTED_RUNTIMES=colab,kaggle): the pytest process is
# the Colab-like one, and each Kaggle run's kernel gets Kaggle's variables instead (the venv's start-up line loads
# the fake google.colab only when COURSE_FAKE_RUNTIME is not "kaggle").
RUNTIMES = ([r for r in os.environ.get("COURSE_HOSTED_RUNTIMES", "").split(",") if r] if RUNTIME == "colab" else []) \
    or ([RUNTIME] if RUNTIME else ["colab"])
KAGGLE_ENV = {"COURSE_FAKE_RUNTIME": "kaggle", "KAGGLE_KERNEL_RUN_TYPE": "Interactive"}
pytestmark = [pytest.mark.colab, pytest.mark.skipif(RUNTIME is None, reason="only in the hosted-runtime venv "
                                                                            "(make test-colab, make test-kaggle)")]


def as_runtime(runtime: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the processes this test starts (kernels, probes) those of `runtime`, and the claims see its variables."""
    if runtime not in ("colab", "kaggle"):
        raise ValueError(f"runtime={runtime!r}: use 'colab' or 'kaggle' (COURSE_HOSTED_RUNTIMES)")
    for key, value in KAGGLE_ENV.items():
        if runtime == "kaggle":
            monkeypatch.setenv(key, value)
        else:
            monkeypatch.delenv(key, raising=False)


ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def bare_clone(tmp_path_factory):
    target = tmp_path_factory.mktemp("remote") / "course.git"
    subprocess.run(["git", "clone", "--bare", "--quiet", str(ROOT), str(target)], check=True)
    return target


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_runtime_is_colab_or_kaggle_like(runtime, monkeypatch):
    import keras
    import tensorflow as tf

    assert sys.version_info[:2] == (3, 12)
    as_runtime(runtime, monkeypatch)
    probe = subprocess.run([sys.executable, "-c", "import sys; print('google.colab' in sys.modules)"],
                           capture_output=True, text=True, check=True)  # what a kernel of this runtime imports
    assert probe.stdout.strip() == str(runtime == "colab"), f"{runtime}: google.colab loaded: {probe.stdout}"
    assert tf.__version__.startswith("2.20.") and keras.__version__.startswith("3.13."), (tf.__version__,
                                                                                         keras.__version__)
    assert importlib.util.find_spec("helpers") is None, "helpers must come from the notebook's Colab cell"


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", nbrun.present())
def test_notebook_fetches_the_course_and_runs_alone(name, runtime, tmp_path, bare_clone, monkeypatch):
    import nbformat
    import papermill as pm

    folder = tmp_path / ("working" if runtime == "kaggle" else "opened")  # Kaggle's kernels start in /kaggle/working
    folder.mkdir()
    # The notebook alone, as Colab opens it from the repository: the committed version, like the helpers.
    shown = subprocess.run(["git", "--git-dir", str(bare_clone), "show", f"HEAD:notebooks/{name}"], capture_output=True)
    if shown.returncode:
        pytest.skip(f"{name} is not committed yet")
    (folder / name).write_bytes(shown.stdout)
    course = tmp_path / ("kaggle temp" if runtime == "kaggle" else "content") / "gpu-deep-learning-notebooks"
    as_runtime(runtime, monkeypatch)
    monkeypatch.setenv("COURSE_REPO_URL", str(bare_clone))
    monkeypatch.setenv("COURSE_DIR", str(course))
    monkeypatch.setenv("COURSE_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("COURSE_SMOKE", raising=False)
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)  # the kernel forwards C++ stderr, as a real one does
    results_path = tmp_path / "results.json"
    nbrun.once_more_if_the_kernel_dies(lambda: pm.execute_notebook(
        str(folder / name), str(tmp_path / name), parameters={"SMOKE": True, "RESULTS_PATH": str(results_path)},
        cwd=str(folder), kernel_name="python3", progress_bar=False, execution_timeout=900), tmp_path / name)
    assert (course / "helpers" / "__init__.py").exists(), f"the first cell did not fetch the course on {runtime}"
    results = json.loads(results_path.read_text())
    run = nbrun.Run(results, nbformat.read(tmp_path / name, as_version=4), 0.0, tmp_path)
    # Some claims ask the helpers (for example whether a worker still runs): use the copy the notebook fetched.
    monkeypatch.syspath_prepend(str(course))
    importlib.import_module(f"claims.nb{name[:2]}").check(run)
    assert os.listdir(folder) == [name], f"{name} wrote next to itself: {os.listdir(folder)}"
