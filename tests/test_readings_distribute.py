"""Property tests of the sentences helpers.distribute writes: each agrees with the numbers it was given."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import distribute

rates = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False, allow_infinity=False)
ratios = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False)
bad_numbers = st.sampled_from([0.0, -1.0, float("nan"), float("inf"), -float("inf")])


def _rate(value):
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


# --------------------------------------------------------------------------- ratio_words
@given(ratio=ratios, band=st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.5]))
def test_ratio_words_never_says_faster_when_slower_and_quotes_the_printed_ratio(ratio, band):
    words = distribute.ratio_words(ratio, band)
    limit = round(1 + band, 2)
    number = float(re.search(r"(\d+\.\d\d)x", words).group(1))
    if words.endswith("faster"):
        assert ratio > 1 or band == 0 and round(ratio, 2) >= 1
        assert number == round(ratio, 2) >= limit
    elif words.endswith("slower"):
        assert ratio < 1 or band == 0 and round(1 / ratio, 2) >= 1
        assert number == round(1 / ratio, 2) >= limit
    else:
        assert words.startswith("about as fast")
        assert number == round(ratio, 2) and round(ratio, 2) < limit and round(1 / ratio, 2) < limit


@pytest.mark.parametrize("ratio, words", [(1.0, "about as fast (1.00x)"), (1.05, "1.05x faster"),
                                          (1.0449, "about as fast (1.04x)"), (1.0451, "1.05x faster"),
                                          (1 / 1.05, "1.05x slower"), (0.96, "about as fast (0.96x)")])
def test_ratio_words_at_the_boundary_follows_the_printed_figure(ratio, words):
    assert distribute.ratio_words(ratio) == words


@given(bad=bad_numbers)
def test_ratio_words_refuses_what_is_not_a_rate(bad):
    with pytest.raises(ValueError, match="ratio="):
        distribute.ratio_words(bad)


# --------------------------------------------------------------------------- throughput_reading
@given(same=rates, n=rates, one=rates, replicas=st.integers(1, 64), per=st.integers(1, 1024))
def test_throughput_reading_quotes_the_rates_and_agrees_with_them(same, n, one, replicas, per):
    text = distribute.throughput_reading({"1_same_global": same, "N": n, "1": one}, replicas, per, "this CPU")
    first, second = text.splitlines()
    assert f"Global batch fixed at {per * replicas}:" in first
    assert f"trained at {_rate(n)} samples/s, 1 replica at {_rate(same)}:" in first
    words = distribute.ratio_words(n / same)
    assert f": {words} (rates within 5% of each other count as about as fast)" in first
    if "faster" in first:
        assert n > same
    if "slower" in first:
        assert n < same
    assert f"a speed-up of {n / one:.2f}x" in second
    assert second.endswith(f"a scaling efficiency of {round(100 * n / one / replicas)}%.")
    assert f"1 replica at {_rate(one)} (batch {per})" in second


@given(rate=rates, replicas=st.integers(1, 8))
def test_throughput_reading_of_equal_rates_says_about_as_fast_and_one_over_n(rate, replicas):
    text = distribute.throughput_reading({"1_same_global": rate, "N": rate, "1": rate}, replicas, 64, "x")
    assert "about as fast (1.00x)" in text and "a speed-up of 1.00x" in text
    assert f"scaling efficiency of {round(100 / replicas)}%" in text


@given(bad=bad_numbers, key=st.sampled_from(["1_same_global", "N", "1"]))
def test_throughput_reading_refuses_zero_negative_and_nan_naming_the_rate(bad, key):
    rates_given = {"1_same_global": 100.0, "N": 100.0, "1": 100.0, key: bad}
    with pytest.raises(ValueError, match=re.escape(f"samples_per_s[{key!r}]")):
        distribute.throughput_reading(rates_given, 2, 64, "x")


def test_throughput_reading_refuses_bad_counts():
    for replicas, per in ((0, 64), (2, 0), (True, 64), (2.0, 64)):
        with pytest.raises(ValueError):
            distribute.throughput_reading({"1_same_global": 1, "N": 1, "1": 1}, replicas, per, "x")


# --------------------------------------------------------------------------- scaling_reading
@given(speedup=st.floats(min_value=1e-3, max_value=200, allow_nan=False), replicas=st.integers(2, 64),
       batch_gain=st.one_of(st.floats(min_value=1e-3, max_value=200, allow_nan=False),
                            st.sampled_from([1.0, 1.2, 1.2049, 1.2051, 1.76, 1.03])),
       kind=st.sampled_from(["CPU", "GPU"]), gpu_count=st.integers(0, 16), cores=st.integers(1, 64),
       filled_idle=st.sampled_from([1.0, 1.2, 1.5]), near_ideal=st.sampled_from([0.8, 0.9, 0.95]))
def test_scaling_reading_applies_its_stated_rules_to_the_printed_figures(speedup, replicas, batch_gain, kind,
                                                                         gpu_count, cores, filled_idle, near_ideal):
    text = distribute.scaling_reading(speedup, batch_gain, replicas, kind, gpu_count, cores,
                                      filled_idle=filled_idle, near_ideal=near_ideal)
    shown, percent = round(speedup, 2), round(100 * speedup / replicas)
    assert f"a speed-up of {shown:.2f}x, a scaling efficiency of {percent}%." in text
    split = kind == "CPU" or replicas > gpu_count
    assert ("logical CPUs" in text) == (kind == "CPU")
    assert ("has its own GPU" in text) == (not split)
    gain = round(batch_gain, 2)
    rule = "the rule here for a per-replica batch that leaves part of the hardware idle"
    idle = split and gain > filled_idle
    assert (f"That is above {filled_idle:.2f}x, {rule}" in text) == idle
    assert (f"That is not above {filled_idle:.2f}x, {rule}" in text) == (split and not idle)
    if split:
        # The expectation comes from this run's own numbers: one device on the global batch.
        assert f"measured at {gain:.2f}x the rate of one device on the per-replica batch" in text
        best = gain if idle else 1.0
        expected = f"{best:.2f}x" if idle else "1x"
        assert f"the best to expect is a speed-up of about {expected} (an efficiency of about {best / replicas:.0%})" \
            in text
        assert ("about 1x" in text) == (not idle)
        # A shortfall from that best is called overhead; a run at or above it is not.
        assert (f"The gap to {best:.2f}x is overhead" in text) == (shown < best)
        assert (f"at or above {best:.2f}x" in text) == (shown >= best)
    else:
        assert "the best to expect" not in text and "overhead, not a limit" not in text
    assert ("short of the ideal" in text) == (not split and percent < round(100 * near_ideal))
    assert ("near the ideal" in text) == (not split and round(100 * near_ideal) <= percent <= 100)
    if kind == "CPU":
        assert f"same {cores} core{'s' if cores != 1 else ''} " in text
    assert "7.70x on 8x A100" in text and "DeepLearningExamples" in text


def test_scaling_reading_reads_the_reviewed_run_against_one_device_on_the_global_batch():
    # One replica: 58,636 samples/s on batch 128, 33,319 on batch 64 (1.76x); 2 replicas of 64: 1.03x.
    text = distribute.scaling_reading(1.03, 58636 / 33319, 2, "CPU", 0, 2)
    assert "about 1x" not in text
    assert "the best to expect is a speed-up of about 1.76x (an efficiency of about 88%)" in text
    assert "The gap to 1.76x is overhead, not a limit of the hardware" in text


@given(reduce_ms=st.floats(min_value=0, max_value=1e3), step_ms=st.floats(min_value=1e-3, max_value=1e3))
def test_scaling_reading_quotes_the_all_reduce_share_it_was_given(reduce_ms, step_ms):
    text = distribute.scaling_reading(0.9, 1.0, 2, "CPU", 0, 2, all_reduce_ms=reduce_ms, step_ms=step_ms)
    assert f"took {reduce_ms:.3f} ms, {reduce_ms / step_ms:.0%} of one {step_ms:.2f} ms step" in text


def test_scaling_reading_leaves_out_an_unmeasured_or_nan_all_reduce():
    for reduce_ms, step_ms in ((None, 5.0), (1.0, None), (float("nan"), 5.0), (1.0, 0.0), (1.0, float("nan"))):
        assert "one all-reduce" not in distribute.scaling_reading(1.0, 1.0, 2, "CPU", 0, 2, reduce_ms, step_ms)


@given(bad=bad_numbers)
def test_scaling_reading_refuses_a_speedup_that_is_no_rate(bad):
    with pytest.raises(ValueError, match="speedup="):
        distribute.scaling_reading(bad, 1.0, 2, "CPU", 0, 2)
    with pytest.raises(ValueError, match="batch_gain="):
        distribute.scaling_reading(1.0, bad, 2, "CPU", 0, 2)


def test_scaling_reading_refuses_bad_replicas_and_kind():
    for args in ((1.0, 0, "CPU"), (1.0, 2.0, "CPU"), (1.0, 2, "TPU")):
        with pytest.raises(ValueError):
            distribute.scaling_reading(args[0], 1.0, *args[1:], 0, 2)


# --------------------------------------------------------------------------- devices_reading
@given(n=st.integers(1, 16), asked=st.integers(1, 16), kind=st.sampled_from(["CPU", "GPU"]),
       gpu_count=st.integers(0, 16), extra=st.one_of(st.none(), st.integers(0, 16)))
def test_devices_reading_counts_what_it_was_given(n, asked, kind, gpu_count, extra):
    devices = [f"/device:{kind}:{i}" for i in range(n)]
    available = None if extra is None else n + extra
    text = distribute.devices_reading(asked, devices, kind, gpu_count, available=available)
    assert text.startswith(f"{n} replica{'s' if n != 1 else ''} on {n} ")
    assert ", ".join(devices) in text
    assert ("logical CPU" in text.split(":")[0]) == (kind == "CPU")
    assert ("one replica each" in text) == (kind == "GPU" and n <= gpu_count)
    assert ("Kernel > Restart" in text) == (n < asked)
    if n < asked:
        assert f"N_REPLICAS is {asked}" in text and f"goes on with {n} replica(s)" in text
    assert ("This kernel has" in text) == (available is not None and available > n)
    if available is not None and available > n:
        assert f"This kernel has {available} " in text and f"the other {available - n} take no part" in text


def test_devices_reading_refuses_no_devices_and_an_unknown_kind():
    with pytest.raises(ValueError, match="devices="):
        distribute.devices_reading(2, [], "CPU", 0)
    with pytest.raises(ValueError, match="kind="):
        distribute.devices_reading(2, ["/device:TPU:0"], "TPU", 0)


# --------------------------------------------------------------------------- all-reduce measured
seconds = st.floats(min_value=1e-7, max_value=10.0, allow_nan=False, allow_infinity=False)


@given(measured=seconds, fixed=seconds, bytes_term=seconds, shared=st.booleans(),
       within=st.sampled_from([1.0, 1.5, 2.0, 3.0, 10.0]), comparable=st.sampled_from([0.5, 1.0, 2.0]))
def test_prediction_reading_tests_the_bytes_only_where_they_show_and_follows_the_printed_ratio(
        measured, fixed, bytes_term, shared, within, comparable):
    text = distribute.prediction_reading("the model's gradients", measured, fixed, bytes_term, shared, within,
                                         comparable)
    m, f, b = (round(v * 1e3, 3) for v in (measured, fixed, bytes_term))
    assert f"measured {m:.3f} ms" in text and f"fixed cost {f:.3f} ms" in text and f"predicts {b:.3f} ms" in text
    if b < comparable * f or b == 0:  # the fixed cost hides the bytes: no verdict on the ring
        assert "does not test the ring's arithmetic" in text and "matches" not in text and "ratio" not in text
        assert f"at least {comparable:g}x the fixed cost" in text
        return
    assert f"within {within:g}x either way" in text
    extra = round(m - f, 3)
    if extra <= 0:
        assert "no more than the fixed cost" in text and "does not match" in text
        return
    ratio = float(re.search(r"ratio ([\d.]+):", text).group(1))
    assert ratio == round(extra / b, 2) and f"= {extra:.3f} ms for the bytes" in text
    if ratio > within:
        assert "slower than the bytes term" in text and "matches" not in text
        assert ("share one device's memory" in text) == shared
    elif ratio * within < 1:
        assert "faster than the bytes term" in text and "matches" not in text
    else:
        assert f"matches (the rule: within {within:g}x either way)" in text


@pytest.mark.parametrize("measured, verdict", [(3.0, "matches"), (3.01, "slower"), (1.5, "matches"),
                                               (1.49, "faster"), (0.9, "no more than the fixed cost")])
def test_prediction_reading_at_the_boundary(measured, verdict):  # fixed 1 ms, bytes 1 ms: the rest is the bytes
    assert verdict in distribute.prediction_reading("x", measured / 1e3, 1e-3, 1e-3, False, 2.0)


@pytest.mark.parametrize("bytes_ms, tested", [(0.999, False), (1.0, True), (0.026, False)])
def test_prediction_reading_leaves_bytes_below_the_fixed_cost_untested(bytes_ms, tested):
    text = distribute.prediction_reading("x", 1.5e-3, 1e-3, bytes_ms / 1e3, True)
    assert ("does not test the ring's arithmetic" in text) != tested, text


@given(bad=bad_numbers)
def test_prediction_reading_refuses_what_is_not_a_time(bad):
    with pytest.raises(ValueError, match="measured_s="):
        distribute.prediction_reading("x", bad, 1.0, 1.0, True)
    with pytest.raises(ValueError, match="fixed_s="):
        distribute.prediction_reading("x", 1.0, bad, 1.0, True)
    with pytest.raises(ValueError, match="matches_within="):
        distribute.prediction_reading("x", 1.0, 1.0, 1.0, True, 0.5)
    with pytest.raises(ValueError, match="bytes_s="):
        distribute.prediction_reading("x", 1.0, 1.0, -1.0, True)
    assert "does not test" in distribute.prediction_reading("x", 1.0, 1.0, 0.0, True)  # one replica: no bytes


@given(times=st.dictionaries(st.sampled_from(["default", "hierarchical", "one device", "nccl"]),
                             st.one_of(seconds, st.just("failed: no kernel")), min_size=1),
       band=st.sampled_from([0.0, 0.05, 0.2]))
def test_choices_lines_name_the_fastest_of_the_printed_times_and_the_near_ones(times, band):
    lines = distribute.choices_lines(times, band)
    assert len(lines) == len(times) + 1
    ran = {k: round(v * 1e3, 3) for k, v in times.items() if not isinstance(v, str)}
    for name, value in times.items():
        line = next(line for line in lines[:-1] if line.startswith(name + " "))
        assert (value in line) if isinstance(value, str) else line.endswith(f"{ran[name]:.3f} ms")
    last = lines[-1]
    if not ran:
        assert last == "None of the choices ran here."
        return
    best = re.search(r"Fastest here: (.+?) \(", last).group(1)
    assert ran[best] == min(ran.values())
    near = [k for k in ran if k != best and ran[k] <= ran[best] * (1 + band)]
    if near:
        assert "about as fast" in last and all(k in last.split("(the rule here):")[1] for k in near)
    else:
        assert "about as fast" not in last


@given(single=st.floats(0.01, 100), penalty=st.floats(0.0001, 10), replicas=st.integers(1, 8),
       gap=st.floats(0, 1e-3), tolerance=st.sampled_from([1e-6, 1e-5, 1e-3]))
def test_regularization_reading_calls_a_match_only_within_the_tolerance(single, penalty, replicas, gap, tolerance):
    scaled = single * (1 + gap)
    unscaled = single + (replicas - 1) * penalty
    text = distribute.regularization_reading(single, scaled, unscaled, replicas, tolerance)
    first = text.split("Without it")[0]
    assert ("matches" in first) == (gap <= tolerance or abs(scaled - single) / single <= tolerance)
    second = text.split("Without it")[1]
    assert ("matches" in second) == (abs(unscaled - single) / single <= tolerance)
    assert f"at most {tolerance:.0e} is a match" in text
    assert f"One device: {single:.6f}" in text and f"{scaled:.6f}" in text and f"{unscaled:.6f}" in text


@given(bad=bad_numbers)
def test_regularization_reading_refuses_bad_losses(bad):
    with pytest.raises(ValueError, match="single="):
        distribute.regularization_reading(bad, 1.0, 1.0, 2, 1e-5)
