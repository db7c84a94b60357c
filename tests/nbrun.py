"""Run a course notebook under papermill in a temporary folder and return what it recorded."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

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


def run_notebook(name: str, workdir: Path, smoke: bool = True, timeout: int = 600, **params: Any) -> Run:
    """Execute notebooks/<name> with papermill in `workdir` (its scratch folder too)."""
    import nbformat
    import papermill as pm

    workdir.mkdir(parents=True, exist_ok=True)
    results_path = workdir / "results.json"
    env_before = dict(os.environ)
    os.environ["COURSE_SCRATCH"] = str(workdir / "scratch")
    os.environ.setdefault("MPLBACKEND", "Agg")
    start = time.perf_counter()
    try:
        pm.execute_notebook(
            str(NOTEBOOKS / name), str(workdir / name),
            parameters={"SMOKE": smoke, "RESULTS_PATH": str(results_path), **params},
            cwd=str(workdir), kernel_name="python3", progress_bar=False, execution_timeout=timeout,
        )
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    seconds = time.perf_counter() - start
    results = json.loads(results_path.read_text())
    return Run(results, nbformat.read(workdir / name, as_version=4), seconds, workdir)
