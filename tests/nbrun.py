"""Run a course notebook under papermill in a temporary folder and return what it recorded."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
GPU_PATH_STARTUP = Path(__file__).resolve().parent / "gpu_path" / "keras_resolves_as_on_a_gpu.py"

# Teaching order (README outline). A notebook's "Next" link points at the following name.
COURSE = [
    "00_environment_check.ipynb",
    "01_deep_learning_basics.ipynb",
    "02_gpu_detection_and_placement.ipynb",
    "03_cpu_vs_gpu_timing.ipynb",
    "04_input_pipelines.ipynb",
    "05_batch_size_and_learning_rate.ipynb",
    "06_mixed_precision.ipynb",
    "07_multi_gpu_mirrored_strategy.ipynb",
    "08_gpu_clusters.ipynb",
    "09_choosing_a_gpu.ipynb",
]


def present() -> list[str]:
    """The notebooks of the course that exist so far, in teaching order."""
    return [n for n in COURSE if (NOTEBOOKS / n).exists()]


@dataclass
class Run:
    results: dict[str, Any]
    notebook: Any  # the executed nbformat notebook
    seconds: float
    workdir: Path

    def outputs_text(self) -> str:
        """All text the executed notebook showed (stdout, results, errors), joined."""
        parts = []
        for cell in self.notebook.cells:
            for out in cell.get("outputs", []):
                if "text" in out:
                    parts.append(out["text"])
                for key in ("text/plain", "text/markdown", "text/html"):
                    if key in out.get("data", {}):
                        parts.append(out["data"][key])
        return "\n".join(parts)

    def stderr_text(self) -> str:
        return stderr_text(self.notebook)


def stderr_text(notebook: Any) -> str:
    """All stderr text an executed notebook shows (red on the learner's page), joined."""
    return "\n".join(out.get("text", "") for cell in notebook.cells
                     for out in cell.get("outputs", []) if out.get("name") == "stderr")


def copy_course(target: Path) -> Path:
    """Copy the course as git sees it (tracked and untracked, not ignored files) into `target`.

    The tests run notebooks from such a copy in a folder whose name has a space (as
    ``~/Documents/ML course/`` on a laptop), with its ``helpers`` first on the kernel's path.
    """
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)
    return target


def kernel_environment(workdir: Path, course: Path | None = None, gpu_path: bool = False) -> dict[str, str]:
    """The environment a test kernel gets: what a learner's JupyterLab kernel would have.

    * The caller's environment (a test's ``CUDA_VISIBLE_DEVICES`` or ``TF_ENABLE_ONEDNN_OPTS`` reaches
      the kernel), without ``PYTEST_CURRENT_TEST`` (with it, ipykernel leaves file descriptor 2 alone, so
      C++ log lines that reach a learner's page would never reach the test's) and without the
      ``TF_CPP_MIN_LOG_LEVEL`` and ``MPLBACKEND=Agg`` that tests/conftest.py sets for the test process (a
      learner's kernel has neither: it logs as TensorFlow does and draws its figures inline).
    * `course`: that copy's ``helpers`` come first on ``PYTHONPATH``.
    * `gpu_path`: an IPython profile whose start-up file makes Keras resolve ``jit_compile="auto"``
      as on a GPU machine (:data:`GPU_PATH_STARTUP`).
    """
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "TF_CPP_MIN_LOG_LEVEL")}
    env["COURSE_SCRATCH"] = str(workdir / "scratch")
    env.pop("MPLBACKEND", None)  # ipykernel then draws inline, as for a learner: plt.show() leaves a PNG on the page
    if course is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(course), env.get("PYTHONPATH")]))
    if gpu_path:
        startup = workdir / "ipython" / "profile_default" / "startup"
        startup.mkdir(parents=True, exist_ok=True)
        shutil.copy2(GPU_PATH_STARTUP, startup / GPU_PATH_STARTUP.name)
        env["IPYTHONDIR"] = str(workdir / "ipython")
    return env


@contextlib.contextmanager
def kernel_environ(env: dict[str, str]) -> Iterator[None]:
    """Make `env` the whole process environment while kernels start (they copy it), then restore the caller's."""
    before = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


def where_the_kernel_died(output: Path) -> str:
    """The cell papermill marked as running in the notebook it saved when its kernel died."""
    try:
        cells = json.loads(output.read_text()).get("cells", [])
    except (OSError, ValueError):
        return "a cell papermill did not save"
    for i, cell in enumerate(cells):
        if cell.get("metadata", {}).get("papermill", {}).get("status") == "running":
            first = "".join(cell.get("source", "")).strip().splitlines()
            return f"cell {i} ({first[0][:80] if first else 'empty'})"
    return "a cell papermill had not marked as running"


def once_more_if_the_kernel_dies(execute: Callable[[], Any], output: Path) -> None:
    """Run `execute` (a papermill run writing `output`); if its kernel dies, warn where and run it once more.

    A dead kernel is a crash of the process (TensorFlow's C++ runtime, seen once in CI on the Colab-era
    TensorFlow 2.20 in notebook 04, not in its next 6 runs there), not a Python error in a cell: those
    fail at once. A second death in a row fails the test, with the cell of each death.
    """
    try:
        execute()
        return
    except Exception as error:  # nbclient's DeadKernelError: matched by name, nbclient is imported lazily
        if type(error).__name__ != "DeadKernelError":
            raise
        first = where_the_kernel_died(output)
    warnings.warn(f"the kernel died in {first} of {output.name}; running the notebook once more", RuntimeWarning,
                  stacklevel=2)
    try:
        execute()
    except Exception as error:
        if type(error).__name__ == "DeadKernelError":
            raise RuntimeError(f"the kernel died twice in {output.name}: in {first}, then in "
                               f"{where_the_kernel_died(output)}") from error
        raise


def run_notebook(name: str, workdir: Path, smoke: bool = True, timeout: int = 600, course: Path | None = None,
                 gpu_path: bool = False, **params: Any) -> Run:
    """Execute notebooks/<name> with papermill in `workdir` (its scratch folder too).

    `course` runs the notebook of that copy of the course, with its helpers; `gpu_path` makes Keras
    compile as on a GPU machine (:func:`kernel_environment`).
    """
    import nbformat
    import papermill as pm

    workdir.mkdir(parents=True, exist_ok=True)
    results_path = workdir / "results.json"
    start = time.perf_counter()
    with kernel_environ(kernel_environment(workdir, course, gpu_path)):
        once_more_if_the_kernel_dies(lambda: pm.execute_notebook(
            str((course or ROOT) / "notebooks" / name), str(workdir / name),
            parameters={"SMOKE": smoke, "RESULTS_PATH": str(results_path), **params},
            cwd=str(workdir), kernel_name="python3", progress_bar=False, execution_timeout=timeout,
        ), workdir / name)
    seconds = time.perf_counter() - start
    results = json.loads(results_path.read_text())
    return Run(results, nbformat.read(workdir / name, as_version=4), seconds, workdir)
