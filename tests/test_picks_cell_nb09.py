"""Notebook 09's picks (cell "Of the GPUs the job fits, fastest"), run as written on the page: a GPU the job does not
fit is never the fastest nor the least-energy pick, however fast its rate."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from types import SimpleNamespace

from claims import nb09

import helpers

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "09_choosing_a_gpu.ipynb"


def picks_cell() -> str:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    return next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith("v100, a100 = by_name"))


def test_the_picks_skip_a_gpu_the_job_does_not_fit():
    table = helpers.gpus.specs()
    images = 1e8
    run_cost = helpers.gpus.run_cost(images, table, {}, job_bytes=20e9)  # does not fit the T4
    rated = [n for n in run_cost if run_cost[n]["hours"] is not None]
    fastest_overall = min(rated, key=lambda n: run_cost[n]["hours"])
    run_cost["Tesla T4"].update(hours=0.01, kwh=0.001)  # a made-up T4: fastest, most frugal, too small
    assert not run_cost["Tesla T4"]["fits"] and fastest_overall != "Tesla T4"
    recorded = {}
    namespace = {"by_name": {g["name"]: g for g in table}, "run_cost": run_cost, "images_to_train": images,
                 "cpu_rate": 5.0, "spreads": {"CPU:0": 0.02}, "NOISE_LIMIT": 0.5, "epochs": 90, "example": "job",
                 "results": SimpleNamespace(update=lambda **kw: recorded.update(kw))}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(picks_cell(), namespace)
    assert recorded["picks"]["fastest"] != "Tesla T4" and recorded["picks"]["frugal"] != "Tesla T4", recorded["picks"]
    assert "Of the GPUs the job fits, fastest: " + recorded["picks"]["fastest"] in out.getvalue()
    fits = {n: c["fits"] for n, c in run_cost.items()}
    nb09.picks(SimpleNamespace(results={"run_cost": run_cost, "picks": recorded["picks"], "fits": fits}))
