"""Notebook 09's activation-term cells, run as written on the page on made-up peaks: the reading agrees with them.

The peaks at three batch sizes give two slopes; the page reads one per-image cost only when they agree within its
stated rule, and says "not constant" with both slopes otherwise. Properties: the verdict is the rule applied to
the numbers, the sentence quotes them, and the claims of ``claims.nb09.activation_term`` accept what was printed.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from claims import nb09
from hypothesis import given, settings
from hypothesis import strategies as st

import helpers

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "09_choosing_a_gpu.ipynb"
MIB = 2**20
PARTS = {"weights": 102546848, "weight_copies": 0, "gradients": 102334368, "optimizer_state": 204668736,
         "activations": 218552960}  # the estimate at batch 8 (96 px), in bytes


def cell(prefix: str) -> str:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    return next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith(prefix))


def run_cells(peaks, batch=8):
    batches = (batch, 2 * batch, 3 * batch)
    estimate = helpers.gpus.MemoryEstimate(**PARTS)
    results = {}
    namespace = {"child": SimpleNamespace(answer={"steady": {str(n): p for n, p in zip(batches, peaks, strict=True)}}),
                 "batches": batches, "batch": batch, "estimate": estimate, "device": "CPU:0", "results": results}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for prefix in ("MIB = 2**20", "SLOPE_AGREEMENT", '# for the tests\nresults["activation_check"]'):
            exec(cell(prefix), namespace)
    text = out.getvalue()
    run = SimpleNamespace(results={"activation_check": results["activation_check"],
                                   "estimate_parts": {**PARTS, "total": estimate.total}}, outputs_text=lambda: text)
    return run, text


def peaks_for(fixed_mib, slope1_mib, slope2_mib, batch=8):
    p1 = (fixed_mib + batch * slope1_mib) * MIB
    return [round(p1), round(p1 + batch * slope1_mib * MIB), round(p1 + batch * (slope1_mib + slope2_mib) * MIB)]


@settings(max_examples=60, deadline=None)
@given(fixed=st.floats(100, 600), s1=st.floats(16, 90), s2=st.floats(16, 90), batch=st.sampled_from([2, 4, 8]))
def test_the_reading_follows_the_slopes_rule_and_quotes_the_numbers(fixed, s1, s2, batch):
    run, text = run_cells(peaks_for(fixed, s1, s2, batch), batch)
    a = run.results["activation_check"]
    if not 0.5 <= a["ratio"] <= 4.0:  # outside the claims' plausibility band: not a run the page can produce
        return
    nb09.activation_term(run)  # the claims accept the sentence and the figures
    apart = abs(a["slopes"][1] - a["slopes"][0]) / min(a["slopes"])
    assert a["constant"] == (apart <= a["agreement"])
    if a["constant"]:
        assert "one line fits" in text and "Extrapolated to batch 0" in text
    else:
        assert "not constant" in text and "no verdict" in text and "Extrapolated" not in text
        assert "holds" not in text.split("Reading:")[1]  # no verdict, and no fixed part quoted as measured
    assert "measured" not in text.split("Reading:")[1].replace("measured on", "")  # the intercept is extrapolated


@pytest.mark.parametrize("s1, s2, constant", [
    (30.1, 39.1, False),  # the reviewer's batches 4/8/12 at 96 px: the first pair alone read 1.16x, "holds"
    (40.5, 42.3, True),  # the reviewer's batches 8/16/24
    (39.99, 48.04, True),  # this CPU, batches 8/16/24, after a warm-up at each size: 20 % apart
    (30.0, 38.0, False),  # 27 % apart
    (40.0, 49.9, True),  # just under 25 % apart: one line
])
def test_the_reviewers_slopes_get_the_verdict_the_rule_gives(s1, s2, constant):
    run, text = run_cells(peaks_for(390.0, s1, s2, batch=8 if s1 > 35 else 4), 8 if s1 > 35 else 4)
    nb09.activation_term(run)
    assert run.results["activation_check"]["constant"] is constant, text
    assert ("no verdict on the activation term" in text) is not constant


def test_a_peak_that_does_not_grow_gets_no_verdict():
    run, text = run_cells([700 * MIB, 700 * MIB, 1100 * MIB])
    assert not run.results["activation_check"]["constant"] and "inf% above the smaller" in text
