"""Property tests of helpers.timing's readings: each sentence agrees with the numbers it was given.

Edge cases fed: equal values, tiny and huge rates, one-element inputs, NaN spreads, noisy rows, caches
that hold some, all or none of the working sets. The cases the issue found are reproduced by name.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from helpers import timing

SIDES = [64, 128, 256, 512, 1024, 2048, 4096]
rate = st.floats(min_value=1e-3, max_value=1e5, allow_nan=False, allow_infinity=False)
spread = st.one_of(st.floats(min_value=0.0, max_value=20.0), st.just(math.nan), st.just(timing.BUSY_SPREAD))
limit = st.sampled_from([0.05, 0.25, 0.5, 1.0])


@st.composite
def sweeps(draw, min_size=1):
    """{size: GFLOP/s} and {size: spread} over some of SIDES."""
    sizes = draw(st.lists(st.sampled_from(SIDES), min_size=min_size, max_size=6, unique=True))
    same = draw(st.booleans())  # every rate equal: ties everywhere
    value = draw(rate)
    rates = {n: value if same else draw(rate) for n in sizes}
    return rates, {n: draw(spread) for n in sizes}


def _steady(spreads, lim):
    return {n for n, s in spreads.items() if s <= lim}


# ---------------------------------------------------------------- the cases
def test_roofline_reading_does_not_say_a_working_set_above_the_cache_fits_it():
    # 03 printed "Arrays that fit a cache can run above it, as the 1, 4 and 16 MiB ones did" beside an 8 MiB
    # cache: three 16 MiB arrays take 48 MiB, and even 1 MiB arrays take 3 MiB.
    lines = timing.roofline_reading("CPU", 166.0, 16.7, {512: 22.7, 1024: 47.6, 2048: 27.0, 4096: 16.7}, 2048, 55.0,
                                    8 * 2**20)
    assert "as the 1 MiB ones did here (working set 3 MiB" in lines[1]
    assert "4 and 16 MiB ones ran above it too although their working set (12 and 48 MiB) exceeds" in lines[1]
    assert "as the 1, 4 and 16 MiB" not in lines[1]


def test_sweep_reading_does_not_headline_a_row_the_noise_line_flagged():
    # 03 headlined "fastest 49 GFLOP/s = 61 % of the peak" from a row with a 1436 % spread.
    text = timing.sweep_reading("CPU", {128: 20.0, 512: 38.0, 2048: 49.0}, 80.0, {128: 0.1, 512: 0.2, 2048: 14.36})
    assert text.startswith("CPU peaks at n = 512 with 38 GFLOP/s, 48% of the peak (n = 2048 left out: its spread, "
                           "1436%, is above 50%).")
    closing = timing.closing_note({"matmul_gflops": {"CPU": {"128": 20.0, "512": 38.0, "2048": 49.0}},
                                   "matmul_spread": {"CPU": {"128": 0.1, "512": 0.2, "2048": 14.36}},
                                   "peak_gflops": {"CPU": 80.0}})
    assert closing == ["Matmul on CPU (TensorFlow): at best 38 GFLOP/s (n = 512), 48% of its peak 80, among the sizes "
                       "with a spread within 50%."]


def test_sweep_reading_does_not_call_a_single_leftover_row_a_peak():
    # 03's learner run: "NumPy on the CPU peaks at n = 512 with 3 GFLOP/s" after four noisy rows were dropped.
    rates = {128: 5.0, 256: 170.0, 512: 3.0, 1024: 4.0, 2048: 4.0}
    spreads = {128: 0.52, 256: 89.18, 512: 0.1, 1024: 0.78, 2048: 1.67}
    text = timing.sweep_reading("NumPy on the CPU", rates, 395.0, spreads, 0.5)
    assert "peaks at" not in text and "too few steady rows to read a peak" in text
    assert text.startswith("NumPy on the CPU: only n = 512 was steady (3 GFLOP/s, 1% of the peak)")
    assert "n = 128, n = 256, n = 1024 and n = 2048 left out" in text
    closing = timing.closing_note({"matmul_gflops": {"CPU": rates}, "matmul_spread": {"CPU": spreads},
                                   "peak_gflops": {"CPU": 395.0}, "noise_limit": 0.5})
    assert closing == ["Matmul on CPU (TensorFlow): only n = 512 was steady, 3 GFLOP/s, 1% of its peak 395: too few "
                       "steady rows (under 2) to read a best size."]


def test_published_figures_carry_their_sources_and_say_what_804_percent_means():
    text = timing.speedup_table({"CPU": 3.0}) + "\n".join(timing.published_sources())
    assert "design brief" not in text and "seed" not in text
    assert "804 % faster = 9.04x" in text and "8.04x" not in text and "100 % + 804 % = 9.04x" in text
    assert timing.AZURE_DEPLOYMENT in text and timing.AZURE_RAPIDS in text and "marko-kovacevic.com" in text
    trees = next(p for p in timing.PUBLISHED_SPEEDUPS if p["speedup"] == "23.2x")
    assert "not deep learning" in trees["differs"]
    serving = next(p for p in timing.PUBLISHED_SPEEDUPS if "804" in p["speedup"])
    assert "inference" in serving["what"] and "XGBoost" not in serving["differs"]
    assert round(1 + 8.04, 2) == 9.04 and round(198.2 / 14.4, 2) == 13.76


# ---------------------------------------------------------------- roofline_reading
@given(sides=st.lists(st.sampled_from(SIDES), min_size=1, max_size=5, unique=True),
       rates=st.lists(rate, min_size=5, max_size=5), cache_mib=st.sampled_from([1, 3, 8, 12, 32, 48, 200, 1024]),
       equal=st.booleans())
def test_roofline_reading_names_as_fitting_only_working_sets_within_the_cache(sides, rates, cache_mib, equal):
    gbs = {side: (rates[0] if equal else r) for side, r in zip(sorted(sides), rates, strict=False)}
    cache = cache_mib * 2**20
    lines = timing.roofline_reading("CPU", 300.0, gbs[max(gbs)], gbs, 1024, 100.0, cache)
    text = lines[1]
    last = max(gbs)
    ws_last = timing.working_set_bytes(last)
    assert f"{gbs[min(gbs)]:,.1f} GB/s on {4 * min(gbs) ** 2 / 2**20:,.4g} MiB arrays" in text
    if ws_last > cache:
        assert "exceeds the" in text and "fits the" not in text.split(".")[1]
        named = re.search(r"as the ([\d., and]+) MiB ones did here", text)
        for mib in (re.findall(r"[\d.]+", named.group(1)) if named else []):
            side = next(s for s in gbs if f"{4 * s**2 / 2**20:,.4g}" == mib)
            assert timing.working_set_bytes(side) <= cache, (mib, cache_mib, text)
            assert gbs[side] >= timing.ABOVE * gbs[last], text
        beyond = re.search(r"The ([\d., and]+) MiB ones ran above it too", text)
        for mib in (re.findall(r"[\d.]+", beyond.group(1)) if beyond else []):
            side = next(s for s in gbs if f"{4 * s**2 / 2**20:,.4g}" == mib)
            assert timing.working_set_bytes(side) > cache and gbs[side] >= timing.ABOVE * gbs[last], text
        if equal or len(gbs) == 1:
            assert "ran above" not in text and "did here" not in text
    else:
        assert "fits the" in text and "exceeds" not in text and f"{ws_last / 2**20:,.4g} MiB" in text


@given(peak=rate, matmul=rate, n=st.sampled_from(SIDES), bandwidth=st.one_of(st.none(), rate))
def test_roofline_reading_calls_a_matmul_memory_bound_only_left_of_the_bend(peak, matmul, n, bandwidth):
    lines = timing.roofline_reading("GPU", peak, bandwidth, {512: 10.0, 4096: 9.0}, n, matmul, datasheet=True)
    bend = peak / bandwidth if bandwidth else None
    if bend is not None and n / 6 <= bend:
        assert "bounds it too" in lines[-1] and "compute-bound" not in lines[-1]
    else:
        assert "compute-bound" in lines[-1]
        assert f"{matmul / peak:.0%}" in lines[-1]
        assert ("does not mean near the peak" in lines[-1]) == (matmul / peak < 0.8)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_roofline_reading_refuses_a_bad_peak(bad):
    with pytest.raises(ValueError, match="peak"):
        timing.roofline_reading("CPU", bad, 10.0, {512: 10.0}, 512, 50.0)


@given(sides=st.lists(st.sampled_from(SIDES), min_size=1, max_size=5, unique=True),
       cache_mib=st.sampled_from([1, 8, 32, 1024]))
def test_elementwise_table_says_fits_exactly_when_the_working_set_is_within_the_cache(sides, cache_mib):
    table = timing.elementwise_table({"CPU": {s: 10.0 for s in sides}}, cache_mib * 2**20)
    for side, line in zip(sorted(sides), table.splitlines()[1:], strict=True):
        fits = timing.working_set_bytes(side) <= cache_mib * 2**20
        assert (" yes " in line) == fits and f"{3 * 4 * side**2 / 2**20:,.4g} MiB" in line


@pytest.mark.parametrize("side, arrays", [(0, 3), (-4, 3), (2.5, 3), (True, 3), (64, 0), (64, 1.5)])
def test_working_set_bytes_refuses_bad_arguments(side, arrays):
    with pytest.raises(ValueError, match="side=|arrays="):
        timing.working_set_bytes(side, arrays)


# ---------------------------------------------------------------- sweep_reading, steady_rates, closing_note
@given(sweep=sweeps(), lim=limit, peak=st.one_of(st.none(), rate))
def test_sweep_reading_headlines_only_a_steady_size_and_its_own_rate(sweep, lim, peak):
    rates, spreads = sweep
    text = timing.sweep_reading("CPU", rates, peak, spreads, lim)
    steady = _steady(spreads, lim)
    if not steady:
        assert "no size was steady enough" in text and "peaks at" not in text
        return
    if len(steady) < timing.MIN_STEADY_ROWS:  # a single leftover row is not a peak
        (only,) = steady
        assert "peaks at" not in text and "too few steady rows to read a peak" in text
        assert text.startswith(f"CPU: only n = {only} was steady ({rates[only]:,.0f} GFLOP/s")
        return
    match = re.match(r"CPU peaks at n = (\d+) with ([\d,]+) GFLOP/s", text)
    best_n = int(match.group(1))
    assert best_n in steady, (text, spreads)
    assert match.group(2) == f"{max(rates[n] for n in steady):,.0f}"
    for n in set(rates) - steady:
        assert f"n = {n}" in text.split(" left out")[0], "a noisy size is named as left out"
    if peak:
        assert f"{rates[best_n] / peak:.0%} of the peak" in text
    if "falls back to" in text:
        largest = max(steady)
        assert rates[largest] < timing.FALL * rates[best_n]
    if "calling the op costs more" in text:
        assert rates[min(steady)] < 0.5 * rates[best_n]


@given(sweep=sweeps(), lim=limit)
def test_steady_rates_keeps_exactly_the_rows_within_the_limit(sweep, lim):
    rates, spreads = sweep
    assert set(timing.steady_rates(rates, spreads, lim)) == _steady(spreads, lim)
    assert timing.steady_rates(rates, None, lim) == rates
    assert timing.steady_rates({str(n): g for n, g in rates.items()}, {str(n): s for n, s in spreads.items()},
                               lim).keys() == {str(n) for n in _steady(spreads, lim)}


@given(sweep=sweeps(), lim=limit, peak=rate)
def test_closing_note_headlines_the_fastest_steady_matmul(sweep, lim, peak):
    rates, spreads = sweep
    r = {"matmul_gflops": {"CPU": {str(n): g for n, g in rates.items()}},
         "matmul_spread": {"CPU": {str(n): s for n, s in spreads.items()}}, "peak_gflops": {"CPU": peak},
         "noise_limit": lim}
    (line,) = timing.closing_note(r)
    steady = _steady(spreads, lim)
    if not steady:
        assert "no size was steady enough" in line
        return
    if len(steady) < timing.MIN_STEADY_ROWS:
        (only,) = steady
        assert "at best" not in line and "too few steady rows" in line and f"only n = {only} was steady" in line
        return
    match = re.match(r"Matmul on CPU \(TensorFlow\): at best ([\d,]+) GFLOP/s \(n = (\d+)\)", line)
    assert int(match.group(2)) in steady and match.group(1) == f"{max(rates[n] for n in steady):,.0f}"


@given(cpu=st.floats(min_value=0.01, max_value=1e4), gpu=st.floats(min_value=0.01, max_value=1e4))
def test_closing_note_and_speedup_table_quote_the_ratio_they_were_given(cpu, gpu):
    (line,) = timing.closing_note({"text_epoch_s": {"CPU": cpu, "GPU": gpu}})
    assert f"{cpu / gpu:.2f}x as fast as the CPU" in line
    word = re.search(r"\((faster|as fast|slower)\)", line).group(1)
    assert word == ("faster" if cpu > gpu else "as fast" if cpu == gpu else "slower")
    assert f"{cpu / gpu:.2f}x" in timing.speedup_table({"CPU": cpu, "GPU": gpu})
    assert "not measured here" in timing.speedup_table({"CPU": cpu})


@given(d=st.floats(min_value=1e-6, max_value=10.0), factor=st.floats(min_value=1.0, max_value=1e4))
def test_closing_note_calls_a_naive_reading_too_short_only_when_it_is(d, factor):
    (line,) = timing.closing_note({"dispatch_only_s": d, "synced_s": d * factor})
    assert ("too short" in line) == (factor >= timing.TOO_SHORT)


# ---------------------------------------------------------------- noise_reading
@given(spreads=st.dictionaries(st.sampled_from([f"n = {n}" for n in SIDES]), spread, min_size=1), lim=limit)
def test_noise_reading_flags_exactly_the_spreads_above_the_limit(spreads, lim):
    text = timing.noise_reading(spreads, limit=lim)
    noisy = [label for label, s in spreads.items() if not s <= lim]
    assert f"{lim:.0%}" in text
    if noisy:
        assert "rerun the cell" in text and "steady enough" not in text
        assert all(f"{label} (" in text for label in noisy)
        assert all(f"{label} (" not in text for label in spreads if label not in noisy)
    else:
        assert "steady enough to compare" in text and "rerun" not in text


@given(sweep=sweeps(min_size=2))
def test_noise_reading_flags_a_curve_only_when_a_larger_size_falls_below_the_share(sweep):
    rates, _ = sweep
    text = timing.noise_reading({"x": 0.0}, {"CPU": rates})
    sizes = sorted(rates)
    falls = any(rates[n] < timing.FALL * max(rates[m] for m in sizes[:i]) for i, n in enumerate(sizes) if i)
    assert ("falls at a larger size" in text) == falls


@pytest.mark.parametrize("bad", [0, -0.5, math.nan, math.inf])
def test_noise_reading_refuses_a_limit_that_is_not_a_positive_share(bad):
    with pytest.raises(ValueError, match="limit="):
        timing.noise_reading({"a": 0.1}, limit=bad)


# ---------------------------------------------------------------- async_reading
@given(naive=st.floats(min_value=1e-6, max_value=1.0), factors=st.lists(st.floats(min_value=1.0, max_value=1e4),
                                                                         min_size=3, max_size=3),
       device=st.sampled_from(["CPU", "GPU"]))
def test_async_reading_calls_a_reading_too_short_only_when_it_is(naive, factors, device):
    synced, numpy_row, host = "sync_devices()", ".numpy()", "async_wait() (host queue only)"
    times = {synced: (naive, naive * factors[0]), numpy_row: (naive, naive * factors[1]),
             host: (naive, naive * factors[2])}
    lines = timing.async_reading(times, synced, [host], device=device)
    ratio = factors[0]
    assert ("too short" in lines[0]) == (ratio >= timing.TOO_SHORT)
    if ratio >= timing.TOO_SHORT:
        assert f"{ratio:,.0f}x too short" in lines[0]
    assert ("each waited for the work" in lines[1]) == (min(factors[:2]) >= timing.TOO_SHORT)
    assert host not in lines[1]
    if device == "GPU":
        assert ("still running them" in lines[2]) == (factors[2] < timing.FALL * factors[0])


@given(t=st.tuples(st.floats(min_value=-1.0, max_value=1.0), st.floats(min_value=-1.0, max_value=1.0)))
def test_async_reading_refuses_a_row_that_is_not_zero_below_naive_below_waited(t):
    assume(not 0 < t[0] <= t[1])
    with pytest.raises(ValueError, match="times="):
        timing.async_reading({"a": t}, synced="a")


# ---------------------------------------------------------------- clock_note and bound_peak
@given(fastest=rate, os_peak=st.one_of(st.none(), rate), equal=st.booleans())
def test_clock_note_says_beats_only_when_the_fastest_is_above_the_os_clock_peak(fastest, os_peak, equal):
    if equal and os_peak is not None:
        fastest = os_peak
    text = timing.clock_note(fastest, os_peak)
    if os_peak is None:
        assert "reports no clock" in text
    elif fastest > os_peak:
        assert f"{fastest:,.0f} GFLOP/s beats {os_peak:,.0f} GFLOP/s" in text and "boost" in text
    else:
        assert "needs no boost" in text and "beats" not in text


@given(peak=st.one_of(st.none(), rate), fastest=rate)
def test_bound_peak_always_bounds_the_fastest_and_says_so_only_when_it_raised_it(peak, fastest):
    bound, source = timing.bound_peak(peak, "made-up source.", fastest)
    assert bound >= fastest
    assert ("Raised to the fastest" in source) == (peak is not None and fastest > peak)
    assert ("stands in" in source) == (peak is None)


# ---------------------------------------------------------------- the learner-run review (issue 16 follow-up)
def test_roofline_reading_says_cached_sizes_ran_slower_when_they_did():
    # 03 printed "The sizes whose working set fits the cache (3 and 12 MiB) ran no more than 1.1x that rate"
    # beside 28.2 and 20.1 GB/s against 40.7 GB/s on the largest arrays: slower, not about as fast.
    lines = timing.roofline_reading("CPU", 573.0, 40.7, {512: 28.2, 1024: 20.1, 2048: 39.0, 4096: 40.7}, 2048, 200.0,
                                    32 * 2**20)
    assert "The 1 and 4 MiB ones ran slower than that although their working set fits the cache (28.2 GB/s and " \
           "20.1 GB/s)" in lines[1]
    assert "a call on them took 112 µs and 626 µs" in lines[1] and "fixed cost of each call" in lines[1]
    assert "no more than" not in lines[1]


@given(rates=st.lists(rate, min_size=2, max_size=5), cache_mib=st.sampled_from([1, 8, 32, 1024]),
       equal=st.booleans())
def test_roofline_reading_never_calls_a_slower_cached_size_about_as_fast(rates, cache_mib, equal):
    sides = SIDES[2:2 + len(rates)]
    gbs = {side: (rates[-1] if equal else r) for side, r in zip(sides, rates, strict=True)}
    cache = cache_mib * 2**20
    text = timing.roofline_reading("CPU", 300.0, gbs[sides[-1]], gbs, 1024, 100.0, cache)[1]
    last = gbs[sides[-1]]
    if timing.working_set_bytes(sides[-1]) <= cache:
        return  # the last size fits: no comparison with main memory's rate
    fits = [s for s in sides if timing.working_set_bytes(s) <= cache]
    slower = [s for s in fits if gbs[s] < last]
    named = re.search(r"The ([\d., and]+) MiB ones ran slower than that", text)
    named_mib = re.findall(r"[\d.]+", named.group(1)) if named else []
    assert named_mib == [f"{4 * s**2 / 2**20:,.4g}" for s in slower], (text, gbs)
    for s in slower:
        assert f"{gbs[s]:,.1f} GB/s" in text
        assert timing._duration(timing.working_set_bytes(s) / (gbs[s] * 1e9)) in text
    within = re.search(r"The ([\d., and]+) MiB ones, whose working set fits the cache .*?ran within", text)
    for mib in (re.findall(r"[\d.]+", within.group(1)) if within else []):
        side = next(s for s in sides if f"{4 * s**2 / 2**20:,.4g}" == mib)
        assert last <= gbs[side] < timing.ABOVE * last, (text, gbs)


@given(sweep=sweeps(min_size=2), lim=limit)
def test_every_fall_the_sweep_reading_points_to_is_on_the_noise_line(sweep, lim):
    # 03 printed "At n = 2048 it falls back to 82 GFLOP/s ... see the noise line" while the noise line named
    # only n = 512 of that curve: the noise line now lists every size whose rate falls.
    rates, spreads = sweep
    text = timing.sweep_reading("NumPy", rates, None, spreads, lim)
    noise = timing.noise_reading({}, {"NumPy": rates})
    fell = re.search(r"At n = (\d+) it falls back to", text)
    if fell:
        assert f"NumPy at n = {fell.group(1)} (" in noise, (text, noise)
    for i, n in enumerate(sorted(rates)[1:], 1):
        if rates[n] < timing.FALL * max(rates[m] for m in sorted(rates)[:i]):
            assert f"NumPy at n = {n} (" in noise
        else:
            assert f"NumPy at n = {n} (" not in noise


def test_noise_reading_names_every_size_whose_rate_falls():
    text = timing.noise_reading({}, {"NumPy (CPU)": {256: 252.0, 512: 11.0, 1024: 240.0, 2048: 82.0}})
    assert "NumPy (CPU) at n = 512 (11, down from 252" in text and "NumPy (CPU) at n = 2048 (82, down from 252" in text


SYNC, HOST_ROW = "sync_devices()", "context.async_wait() (host queue only)"


def test_async_reading_flags_a_noisy_host_queue_row_on_a_cpu_instead_of_reading_it():
    # 03 printed async_wait 722 ms against 1,410 ms for sync_devices() for the same ten matmuls on a CPU,
    # beside "on a CPU that queue runs the ops themselves": a gap the repeats' spread shows to be noise.
    times = {SYNC: (0.002, 1.410), HOST_ROW: (0.007, 0.722)}
    lines = timing.async_reading(times, SYNC, [HOST_ROW], spreads={SYNC: 0.1, HOST_ROW: 0.9}, limit=0.5)
    assert "the repeats spread 90% (context.async_wait() (host queue only)) of their median (above 50%): too " \
           "noisy to compare" in " ".join(lines)
    quiet = timing.async_reading(times, SYNC, [HOST_ROW], spreads={SYNC: 0.1, HOST_ROW: 0.1}, limit=0.5)
    assert "too noisy" not in " ".join(quiet)


@given(spreads=st.lists(spread, min_size=3, max_size=3), lim=limit, device=st.sampled_from(["CPU", "GPU"]),
       factor=st.floats(min_value=0.1, max_value=1.0))
def test_async_reading_reads_no_row_the_spread_flags(spreads, lim, device, factor):
    times = {SYNC: (0.001, 1.0), ".numpy()": (0.001, 1.1), HOST_ROW: (0.001, max(0.001, factor))}
    given_spreads = dict(zip(times, spreads, strict=True))
    lines = timing.async_reading(times, SYNC, [HOST_ROW], device=device, spreads=given_spreads, limit=lim)
    text = " ".join(lines)
    assert "too short" in lines[0] and "its own naive reading" in lines[1]
    noisy_sync, noisy_host = not given_spreads[SYNC] <= lim, not given_spreads[HOST_ROW] <= lim
    assert ("read these times as rough" in lines[0]) == noisy_sync
    if noisy_sync:
        assert f"spread {given_spreads[SYNC]:.0%} of their median (above {lim:.0%})" in lines[0]
    assert ("too noisy to compare" in text) == (noisy_sync or noisy_host)
    if noisy_sync or noisy_host:
        assert "so an empty queue means finished work" not in text and "still running them" not in text


def test_the_page_states_the_calls_per_wait_rule_benchmark_uses():
    # The review read the page's rule ("enough calls that the wait is at most 5% of the batch") against the
    # table's per-call time and the wait measured on the page (58.8 µs and 18.8 µs: 7 calls), while the row held
    # 3: benchmark applies the rule to its own estimates, one warm-up call and the fastest of three idle waits.
    import json
    from pathlib import Path

    from helpers import bench

    assert bench.calls_for(call_s=58.8e-6, sync_s=18.8e-6) == 7  # the rule itself, on the review's numbers
    nb = json.loads((Path(__file__).parents[1] / "notebooks" / "03_cpu_vs_gpu_timing.ipynb").read_text())
    page = " ".join("".join(c["source"]) for c in nb["cells"]).replace("\n", " ")
    assert f"at most {bench.SYNC_SHARE:.0%} of the batch" in page
    assert "**last warm-up call**" in page and "**fastest of three waits**" in page
    assert "the fastest of three idle waits" in page  # the printout beside the measured wait says so too


@given(numpy_spread=spread, device_spread=spread, synced_spread=spread, lim=limit)
def test_closing_note_reads_no_copy_or_async_time_flagged_noisy(numpy_spread, device_spread, synced_spread, lim):
    # 03's closing note quoted "1.93 ms with a tensor already on /CPU:0" from a row whose spread (146%) the
    # copy cell had flagged.
    r = {"noise_limit": lim, "dispatch_only_s": 0.001, "synced_s": 1.0, "synced_spread": synced_spread,
         "copy_s": {"device": "/CPU:0", "numpy_input": 0.0199, "device_input": 0.00193,
                    "numpy_input_spread": numpy_spread, "device_input_spread": device_spread}}
    async_line, copy_line = timing.closing_note(r)
    copy_noisy = not (numpy_spread <= lim and device_spread <= lim)
    assert ("not read" in copy_line) == copy_noisy
    assert ("1.93 ms" in copy_line) == (not copy_noisy)
    assert ("rough" in async_line) == (not synced_spread <= lim)
