"""Property tests of helpers.bench's printed summary: the numbers in it are the result's own."""

from __future__ import annotations

import statistics

from hypothesis import given
from hypothesis import strategies as st

from helpers import bench

times = st.lists(st.floats(min_value=1e-9, max_value=100.0), min_size=1, max_size=12)


@given(times=times, warmup=st.integers(0, 5), calls=st.integers(1, 1000), same=st.booleans())
def test_bench_result_prints_its_own_median_iqr_min_and_counts(times, warmup, calls, same):
    if same:
        times = [times[0]] * len(times)
    r = bench.BenchResult(times, warmup, calls)
    text = str(r)
    assert text.startswith(f"median {bench._fmt(statistics.median(times))}")
    assert f"IQR {bench._fmt(r.iqr)}" in text and f"min {bench._fmt(min(times))}" in text
    assert f"{len(times)} repeats" in text and f"after {warmup} warm-up" in text
    assert ("per call" in text) == (calls > 1) and (f"{calls} back-to-back calls" in text) == (calls > 1)
    assert r.iqr >= 0 and r.spread >= 0
    if same:
        assert r.iqr == 0 and r.spread == 0


@given(seconds=st.floats(min_value=1e-12, max_value=1e6))
def test_fmt_picks_the_unit_the_number_is_in(seconds):
    text = bench._fmt(seconds)
    value, unit = text.split(" ")
    scale = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}[unit]
    assert abs(float(value) * scale - seconds) <= 0.005 * seconds
    assert (unit == "s") == (seconds >= 1) and (unit == "ms") == (1e-3 <= seconds < 1)
