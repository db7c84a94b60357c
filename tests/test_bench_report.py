"""`make bench`'s last steps (matmul rates, the plot, RESULTS.md) run on a small size, so a broken call
fails here in seconds rather than after the bench's 15 minutes of notebook runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_matmul_rates_plot_and_report_work_on_a_small_size(tmp_path):
    bench = load_bench()
    rates = bench.matmul_rates([64])
    assert rates["tf"][64] > 0 and rates["numpy"][64] > 0
    bench.plot(rates, tmp_path / "matmul.png")
    assert (tmp_path / "matmul.png").stat().st_size > 0
    timer = {"reference": 0.02, "helper": 0.021, "naive": 0.001}
    times = {"measured": "2026-11-24", "machine": "a CPU, 2 logical cores",
             "learner_s": {"00_x.ipynb": {"onednn": 4.0, "eigen": 130.0}}}
    text = bench.report(times, {"00_x.ipynb": 3.0}, {"one part": 1.0}, timer, rates)
    assert "| 00_x.ipynb | 4.0 | 130.0 | MISSED |" in text and "| 64 |" in text
    assert "summed (make test runs each 3 times" in text and "| 3 |" in text
