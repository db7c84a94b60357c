"""`make bench`'s last steps (matmul rates, the plot, RESULTS.md) run on a small size, so a broken call
fails here in seconds rather than after the bench's 15 minutes of notebook runs."""

from __future__ import annotations

import importlib.util
import json
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
    assert "summed (make test runs each twice in one kernel" in text and "| 3 |" in text


def test_the_suites_section_reports_each_suite_against_its_target_and_replaces_the_old_one():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import suites

    data = {"measured": "2026-11-24", "commit": "abc1234", "machine": "a CPU, 2 logical cores",
            "suites": {"make test": {"seconds": 359.0, "ok": True, "counts": {"passed": 2700}},
                       "CI script (.ci/run)": {"seconds": 721.0, "ok": False, "counts": {"passed": 30, "failed": 1},
                                               "targets_s": {"make test": 359}}}}
    lines = suites.section(data)  # figures from before the CPU work was measured: n/a, not a made-up floor
    assert "| make test | 6.0 min (359 s) | 6 min | 2700 passed | passed, target met | n/a | n/a |" in lines
    assert ("| CI script (.ci/run) | 12.0 min (721 s) | 12 min | 30 passed, 1 failed | FAILED, target MISSED | n/a "
            "| n/a |") in lines
    old = "# Benchmarks\n\n" + suites.HEADING + "\n\nstale figures\n\n## Matmul\nkept\n"
    new = suites.splice(old, lines)
    assert "stale figures" not in new and new.endswith("## Matmul\nkept\n") and new.count(suites.HEADING) == 1
    # With the CPU work: the floor is the work over the cores, read against the target on both sides of it.
    data["cores"] = 2
    data["suites"]["make test"]["core_seconds"] = 600  # 600 / 2 = 300 s: below the 6 min target
    data["suites"]["CI script (.ci/run)"].update(core_seconds=1442, targets_core_s={"make test": 610})  # 721 s > 720
    lines = suites.section(data)
    assert ("| make test | 6.0 min (359 s) | 6 min | 2700 passed | passed, target met | 600 core-s (84% of the cores) "
            "| 5.0 min (300 s), below the target |") in lines
    assert any(line.endswith("| 1442 core-s (100% of the cores) | 12.0 min (721 s), above the target |")
               for line in lines), lines
    assert "`make test` 359 s (610 core-s)" in "\n".join(lines)
    assert "divided by the 2 cores" in "\n".join(lines)
    assert suites._counts("=== 5 passed, 2 skipped in 3.1s ===\n=== 1 failed, 4 passed in 1s ===") == {
        "passed": 9, "skipped": 2, "failed": 1}


def test_a_failed_suite_run_keeps_the_last_figures(tmp_path, monkeypatch):
    """A CI script stopped by a failing test after `make test` is not the CI script's time: nothing is written."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import suites

    monkeypatch.setattr(suites, "SUITES_JSON", tmp_path / "suites.json")
    failed = {"suites": {"make test": {"seconds": 300.0, "ok": True}, "CI script (.ci/run)": {"seconds": 321.0,
                                                                                            "ok": False}}}
    assert suites.record(failed) is False and not suites.SUITES_JSON.exists()
    failed["suites"]["CI script (.ci/run)"]["ok"] = True
    assert suites.record(failed) is True and json.loads(suites.SUITES_JSON.read_text()) == failed
