"""Notebook 03's claims refuse a sweep line that calls a single leftover steady row a peak.

A learner run printed "NumPy on the CPU peaks at n = 512 with 3 GFLOP/s" after four noisy rows were
dropped. The GPU-shaped fixture is given such a NumPy sweep: the old sentence fails the shared claims,
the sentence ``helpers.timing.sweep_reading`` prints now passes them.
"""

from __future__ import annotations

import copy

import pytest
from test_claims_any_hardware import gpu_run

from helpers import timing

claims = pytest.importorskip("claims.nb03")


def _one_steady_numpy_row(sentence: str | None) -> object:
    run = gpu_run("03")
    r = copy.deepcopy(run.results)
    limit = r["noise_limit"]
    sizes = list(r["numpy_spread"])
    r["numpy_spread"] = {n: (limit / 2 if i == 0 else limit * 3) for i, n in enumerate(sizes)}
    label = "NumPy on the CPU"
    new = sentence or timing.sweep_reading(label, r["numpy_gflops"], r["peak_gflops"]["CPU"], r["numpy_spread"],
                                           limit)
    lines = [("Reading: " + new) if line.startswith(f"Reading: {label}") else line
             for line in run.outputs_text().splitlines()]
    run.results, text = r, "\n".join(lines)
    run.outputs_text = lambda: text
    return run


def test_the_claims_pass_the_sentence_printed_now():
    claims.shared(_one_steady_numpy_row(None))


def test_the_claims_refuse_a_single_row_called_a_peak():
    run = _one_steady_numpy_row(None)
    n = next(iter(run.results["numpy_gflops"]))
    old = f"NumPy on the CPU peaks at n = {n} with 3 GFLOP/s, 1% of the peak (others left out)."
    with pytest.raises(AssertionError, match="peaks at"):
        claims.shared(_one_steady_numpy_row(old))
