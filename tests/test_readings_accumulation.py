"""Property tests for notebook 05's gradient-accumulation readings: each sentence agrees with its numbers.

``helpers.batching.equivalence_line``, ``accumulation_memory_lines`` and ``accumulation_time_line`` decide on the
figures as they print them; hypothesis feeds them equal values, values at the threshold, zero, tiny and huge ones,
and each test reads the printed figures back and checks the verdict against the rule the sentence states.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from helpers import batching

small = st.floats(0, 1, allow_nan=False)
positive_ints = st.integers(1, 2**17)


def sci(text: str, after: str) -> float:
    """The number in scientific notation that follows `after` in `text`."""
    return float(re.search(re.escape(after) + r" (\d\.\de[+-]\d+)", text).group(1))


# ---------------------------------------------------------------- equivalence_line
@given(positive_ints, positive_ints, st.integers(1, 64), st.integers(1, 100), small, small, small,
       st.one_of(st.none(), small))
@example(512, 128, 4, 8, 2.8e-4, 0.0, 2.8e-4, None)  # exactly at the tolerance: the same updates
@example(512, 128, 4, 8, 2.84e-4, 0.0, 2.76e-4, None)  # different, but equal as printed: decided as printed
@example(512, 128, 4, 8, 0.0, 0.0, 0.0, 0.0)  # all zero: bit-identical runs
@example(512, 128, 4, 8, 1e-3, 1e-3, 2.8e-4, 3e-6)  # both above
def test_equivalence_line_says_same_exactly_when_both_printed_figures_are_within_the_tolerance(
        batch, micro, steps, updates, drift, gap, tol, reorder):
    line = batching.equivalence_line(batch, micro, steps, updates, drift, gap, tol, reorder)
    shown_drift = sci(line, "the weights differ by")
    shown_gap = sci(line, "the held-out losses by at most")
    shown_tol = sci(line, "float32 tolerance")
    assert math.isclose(shown_drift, drift, rel_tol=0.06, abs_tol=1e-300) or drift < 1e-99
    same = shown_drift <= shown_tol and shown_gap <= shown_tol
    assert ("made the same updates as the large batch" in line) is same, line
    assert ("not the same updates" in line) is (not same), line
    if not same:  # the sentence names what was above, and only that
        assert ("the weights' drift" in line) is (shown_drift > shown_tol), line
        assert ("the loss gap" in line) is (shown_gap > shown_tol), line
    assert (f"gradient_accumulation_steps={steps}" in line and f"batch {batch}" in line
            and f"{steps} steps of {micro}" in line and f"After {updates} updates" in line)
    assert ("For scale" in line) is (reorder is not None), line
    if reorder is not None:  # the control is read, by the rule stated beside it
        shown_reorder = sci(line, "in another order) drifts")
        if shown_reorder == 0:
            assert "bit for bit" in line or "no ratio to read" in line, line
        else:
            ratio = float(re.search(r"accumulation's drift is ([\d.e+-]+)x that", line).group(1))
            assert math.isclose(ratio, shown_drift / shown_reorder, rel_tol=0.1, abs_tol=0.006), line
            assert ("more than 10x" in line) is (ratio > 10), line
            assert ("less than 1/10" in line) is (ratio < 0.1), line
            assert ("within 10x either way" in line) is (0.1 <= ratio <= 10), line


@given(small, st.floats(1e-12, 1, allow_nan=False), st.floats(1.5, 100))
@example(3.4e-5, 2.9e-6, 10.0)  # this CPU, oneDNN on: 12x, more than 10x
@example(5.0e-7, 1.7e-5, 10.0)  # oneDNN off: 0.029x, less than 1/10
@example(2.9e-5, 2.9e-6, 10.0)  # exactly 10x as printed: within
@example(2.95e-5, 2.9e-6, 10.0)  # 10.17x, printed "10x": decided as printed, within
def test_equivalence_line_reads_the_reversed_control_by_its_stated_factor(drift, reorder, scale):
    line = batching.equivalence_line(512, 128, 4, 8, drift, 0.0, 2.8e-4, reorder, scale=scale)
    ratio = float(re.search(r"accumulation's drift is ([\d.e+-]+)x that", line).group(1))
    assert math.isclose(ratio, sci(line, "the weights differ by") / sci(line, "in another order) drifts"),
                        rel_tol=0.1, abs_tol=0.006), line
    assert (f"more than {scale:g}x" in line) is (ratio > scale), line
    assert (f"less than 1/{scale:g}" in line) is (ratio < 1 / scale), line
    assert (f"within {scale:g}x either way" in line) is (1 / scale <= ratio <= scale), line


@pytest.mark.parametrize("kwargs", [dict(batch=0), dict(steps=1.5), dict(weight_drift=-1e-6),
                                    dict(tolerance=math.nan), dict(loss_gap=math.inf), dict(reorder_drift=-1.0),
                                    dict(scale=1.0)])
def test_equivalence_line_refuses_bad_numbers_naming_them(kwargs):
    args = dict(batch=512, micro=128, steps=4, updates=8, weight_drift=1e-5, loss_gap=0.0, tolerance=2.8e-4,
                reorder_drift=None) | kwargs
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        batching.equivalence_line(**args)


# ---------------------------------------------------------------- accumulation_memory_lines
mib_bytes = st.floats(0.05 * 2**20, 1e12, allow_nan=False)


@given(positive_ints, positive_ints, st.integers(2, 4096), mib_bytes, mib_bytes, st.one_of(st.none(), mib_bytes),
       st.one_of(st.none(), mib_bytes), st.floats(0.01, 0.99))
@example(2048, 512, 4, 92.3 * 2**20, 81.1 * 2**20, 351.4 * 2**20, 256 * 2**20, 0.2)  # this CPU
@example(2048, 512, 4, 100 * 2**20, 120 * 2**20, None, 256 * 2**20, 0.2)  # exactly 20 % above: within
@example(2048, 512, 4, 100 * 2**20, 256 * 2**20, None, 256 * 2**20, 0.2)  # exactly the capacity: fits
@example(2048, 512, 4, 100 * 2**20, 256.04 * 2**20, None, 256 * 2**20, 0.2)  # printed 256.0: fits as printed
def test_accumulation_memory_lines_follow_their_rules_on_the_printed_figures(target, micro, steps, micro_peak,
                                                                             acc_peak, large_peak, capacity, near):
    lines = batching.accumulation_memory_lines(target, micro, steps, micro_peak, acc_peak, large_peak,
                                               "OOM when allocating tensor", capacity, "this GPU", near=near)
    assert len(lines) == 3
    large, acc, plain = lines
    if large_peak is None:
        assert "did not fit: OOM when allocating tensor" in large
    else:
        shown = float(re.search(r"peaked at ([\d.]+) MiB", large).group(1))
        assert shown == float(f"{large_peak / 2**20:.1f}")
        if capacity is not None:
            assert ("more than this GPU holds" in large) is (shown > float(f"{capacity / 2**20:.1f}")), large
    shown_acc = float(re.search(r"at a peak of ([\d.]+) MiB", acc).group(1))
    assert shown_acc == float(f"{acc_peak / 2**20:.1f}")
    if capacity is None:
        assert "it fits" not in acc and "smaller micro-batch" not in acc
    else:
        assert ("it fits" in acc) is (shown_acc <= float(f"{capacity / 2**20:.1f}")), acc
        assert ("use a smaller micro-batch" in acc) is (shown_acc > float(f"{capacity / 2**20:.1f}")), acc
    shown_micro = float(re.search(r"peaked at ([\d.]+) MiB", plain).group(1))
    within = shown_micro > 0 and abs(shown_acc - shown_micro) / shown_micro <= near
    near_text = f"{near:.0%}".replace("%", " %")
    assert (f"within {near_text}" in plain) is within, plain
    assert (f"more than {near_text}" in plain) is (not within), plain
    # above, below or the same, in words, never a signed percentage
    assert ("% above it" in plain) is (shown_acc > shown_micro), plain
    assert ("% below it" in plain) is (shown_acc < shown_micro), plain
    assert ("the same as it" in plain) is (shown_acc == shown_micro), plain
    assert not re.search(r"[+-]\d+ ?%", plain), plain
    if "% above it" in plain or "% below it" in plain:
        shown_pct = re.search(r"peak is (less than 1|\d+) % ", plain).group(1)
        pct = abs(shown_acc - shown_micro) / shown_micro * 100
        assert (pct < 0.5) if shown_pct == "less than 1" else abs(int(shown_pct) - pct) <= 0.5 + 1e-9, plain
    assert f"{steps} steps of {micro}" in acc and f"batch {target}" in acc


@pytest.mark.parametrize("kwargs", [dict(micro_peak=0), dict(accumulated_peak=-1.0), dict(large_peak=math.inf),
                                    dict(capacity=0), dict(near=1.5), dict(weights=0), dict(weights=1.5)])
def test_accumulation_memory_lines_refuse_bad_numbers_naming_them(kwargs):
    args = dict(target=2048, micro=512, steps=4, micro_peak=1e8, accumulated_peak=1e8, large_peak=None,
                large_error="OOM", capacity=None, where="this GPU") | kwargs
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        batching.accumulation_memory_lines(**args)


# ---------------------------------------------------------------- accumulation_time_line
seconds = st.floats(1e-6, 1e3, allow_nan=False)


@given(positive_ints, positive_ints, st.integers(2, 512), seconds, seconds, st.integers(1, 100),
       st.floats(1.01, 3.0), st.one_of(st.none(), st.floats(1, 100)))
@example(512, 128, 4, 0.025, 0.0275, 7, 1.1, None)  # exactly 1.1x as printed: within
@example(512, 128, 4, 0.025, 0.02275, 7, 1.1, 1.0)  # 0.91x: within, 1 / 1.1 = 0.909
@example(512, 128, 4, 0.0314, 0.0401, 2, 1.1, 1.3)  # this CPU's smoke run
@example(512, 128, 4, 1e-6, 1e-6, 1, 1.1, None)  # below the printed precision: both shown as 0.1 ms
def test_accumulation_time_line_reads_the_printed_ratio_by_its_rule(batch, micro, steps, s_large, s_acc, timed,
                                                                    slower, slowest):
    line = batching.accumulation_time_line(batch, micro, steps, s_large, s_acc, timed, slower=slower,
                                           slowest=slowest)
    assert (f"the slowest {slowest:.1f}x its median" in line) if slowest is not None else ("slowest" not in line)
    large_ms, acc_ms = (float(v) for v in re.search(r"took ([\d.]+) ms as one step and ([\d.]+) ms", line).groups())
    ratio = float(re.search(r": ([\d.]+)x the time", line).group(1))
    assert math.isclose(ratio, acc_ms / large_ms, abs_tol=0.006), line
    assert (f"above {slower}x" in line) is (ratio > slower), line
    assert (f"below 1/{slower}" in line) is (ratio < 1 / slower), line
    assert (f"within {slower}x either way" in line) is (1 / slower <= ratio <= slower), line
    assert f"medians of {timed} timed updates" in line and f"{steps} steps of {micro}" in line


@pytest.mark.parametrize("kwargs", [dict(s_large=0), dict(s_accumulated=math.nan), dict(slower=1.0),
                                    dict(slowest=0.5)])
def test_accumulation_time_line_refuses_bad_numbers_naming_them(kwargs):
    args = dict(batch=512, micro=128, steps=4, s_large=0.02, s_accumulated=0.03, timed=7) | kwargs
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        batching.accumulation_time_line(**args)


@given(st.floats(1, 1e4, allow_nan=False), st.floats(1, 1e4, allow_nan=False), st.integers(1, 10**8))
@example(92.3, 81.1, 12810)  # this CPU: 12 % below, 11.2 MiB, far more than 50 KiB of accumulators
@example(92.3, 92.4, 12810)  # 0.1 MiB = 102.4 KiB: just more than twice 50.0 KiB
@example(92.3, 92.3, 12810)  # the same as printed
@example(100.0, 100.1, 30000)  # 0.1 MiB against 2 x 117.2 KiB: no more than the accumulators
def test_accumulation_memory_lines_size_the_accumulators_and_explain_a_lower_peak(micro_mib, acc_mib, weights):
    plain = batching.accumulation_memory_lines(2048, 1024, 2, micro_mib * 2**20, acc_mib * 2**20, None, "OOM", None,
                                               "this GPU", near=0.2, weights=weights)[-1]
    kib = float(re.search(r"4 B x ([\d,]+) = ([\d.]+) KiB", plain).group(2))
    assert f"4 B x {weights:,} =" in plain and math.isclose(kib, 4 * weights / 1024, abs_tol=0.05), plain
    gap = float(re.search(r"the peaks differ by ([\d.]+) MiB", plain).group(1))
    shown = [float(v) for v in re.findall(r"peak(?:ed at| is)[^;]*?([\d.]+) MiB", plain)][:1]
    assert math.isclose(gap, abs(float(f"{acc_mib:.1f}") - float(f"{micro_mib:.1f}")), abs_tol=0.051), (plain, shown)
    assert ("more than twice that" in plain) is (gap * 1024 > 2 * kib), plain
    assert ("at most twice that" in plain) is (gap * 1024 <= 2 * kib), plain
    lower = float(f"{acc_mib:.1f}") < float(f"{micro_mib:.1f}")
    if "more than twice that" in plain:  # a lower peak is never put down to the accumulators
        assert ("they cannot lower a peak" in plain) is lower, plain
