"""Property tests of the readings of notebook 03's compilation section (helpers.timing): each sentence agrees
with the numbers it was given.

Edge cases fed: equal times, gaps just inside and outside the noise band, NaN and huge spreads, XLA faster,
slower and tied, first calls faster than warm steps, CPU-only and GPU device lists.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import timing

MODES = timing.MODES
seconds = st.floats(min_value=1e-6, max_value=5.0, allow_nan=False, allow_infinity=False)
spread = st.one_of(st.floats(min_value=0.0, max_value=3.0), st.just(math.nan), st.just(0.5))
limit = st.sampled_from([0.05, 0.25, 0.5, 1.0])


def _band(a, sa, b, sb):
    return max(a * sa, b * sb)


# ---------------------------------------------------------------- payoff_steps
@given(fg=seconds, sg=seconds, fx=seconds, sx=seconds)
def test_payoff_steps_is_the_first_step_at_which_xla_is_not_behind(fg, sg, fx, sx):
    n = timing.payoff_steps(fg, sg, fx, sx)
    if fx <= fg:
        assert n == 1
    elif sx >= sg:
        assert n is None
    else:
        assert isinstance(n, int) and n >= 2
        total = lambda first, steady, k: first + (k - 1) * steady  # noqa: E731
        slack = 1e-9 * (fx + fg + n * (sx + sg))
        assert total(fx, sx, n) <= total(fg, sg, n) + slack
        assert total(fx, sx, n - 1) > total(fg, sg, n - 1) - slack


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_payoff_steps_refuses_times_that_are_not_positive(bad):
    with pytest.raises(ValueError, match="positive, finite seconds"):
        timing.payoff_steps(bad, 0.1, 0.2, 0.05)


# ---------------------------------------------------------------- compile_reading
@st.composite
def modes(draw):
    same = draw(st.booleans())
    steady = draw(seconds)
    return ({m: draw(seconds) for m in MODES}, {m: steady if same else draw(seconds) for m in MODES},
            {m: draw(spread) for m in MODES})


@given(case=modes(), lim=limit)
def test_compile_reading_states_each_first_call_in_steady_steps(case, lim):
    first, steady, spreads = case
    rule = timing.compile_reading(first, steady, spreads, lim)[0]
    assert rule.startswith("Rule: ")
    for m in MODES:
        counted = f"{m}: first call {timing._duration(first[m])} = {first[m] / steady[m]:,.0f} steady steps"
        if spreads[m] <= lim:
            assert counted in rule
        else:  # a noisy warm step is never the unit of a reading
            assert counted not in rule and f"{m}: first call {timing._duration(first[m])}, not counted" in rule


@given(case=modes(), lim=limit)
def test_compile_reading_says_saved_within_noise_or_slower_exactly_by_the_iqr_rule(case, lim):
    first, steady, spreads = case
    lines = timing.compile_reading(first, steady, spreads, lim)
    xla = lines[-1]
    g, x = steady["tf.function"], steady["tf.function + XLA"]
    if not (spreads["tf.function"] <= lim and spreads["tf.function + XLA"] <= lim):
        assert "not read" in xla and "saved" not in xla
        return
    band = _band(x, spreads["tf.function + XLA"], g, spreads["tf.function"])
    if abs(g - x) <= band:
        assert "within noise" in xla and "saved" not in xla
    elif x < g:
        assert f"XLA saved {timing._duration(g - x)} per step" in xla
        n = timing.payoff_steps(first["tf.function"], g, first["tf.function + XLA"], x)
        assert (f"earned back after {n:,} steps" in xla) if n > 1 else ("ahead from the first step" in xla)
    else:
        assert "slower" in xla and "never pays off" in xla


@given(case=modes(), lim=limit)
def test_compile_reading_compares_eager_and_graph_only_when_both_are_steady(case, lim):
    first, steady, spreads = case
    line = timing.compile_reading(first, steady, spreads, lim)[1]
    e, g = steady["eager"], steady["tf.function"]
    if not (spreads["eager"] <= lim and spreads["tf.function"] <= lim):
        assert "not read" in line
    elif abs(e - g) <= _band(g, spreads["tf.function"], e, spreads["eager"]):
        assert "within noise" in line
    elif g < e:
        assert f"{e / g:,.2f}x as fast" in line
    else:
        assert "slower" in line


def test_compile_reading_refuses_missing_modes():
    with pytest.raises(ValueError, match="exactly the modes"):
        timing.compile_reading({"eager": 1.0}, {"eager": 1.0}, {"eager": 0.1})


# ---------------------------------------------------------------- spe_reading
@given(one=seconds, many=seconds, s1=spread, sk=spread, k=st.sampled_from([2, 8, 32]), lim=limit)
def test_spe_reading_calls_a_saving_only_beyond_the_larger_iqr(one, many, s1, sk, k, lim):
    text = timing.spe_reading({1: one, k: many}, {1: s1, k: sk}, lim)
    if not (s1 <= lim and sk <= lim):
        assert "not read" in text and "saved" not in text
    elif abs(one - many) <= _band(many, sk, one, s1):
        assert "within noise" in text and "saved" not in text
    elif many < one:
        assert f"steps_per_execution={k} saved {timing._duration(one - many)} per step" in text
        assert f"{(one - many) / one:.0%} of the step" in text
    else:
        assert "slower" in text and "saved nothing" in text


def test_spe_reading_reads_keys_from_json_and_refuses_without_one():
    assert "saved" in timing.spe_reading({"1": 0.001, "32": 0.0004}, {"1": 0.01, "32": 0.01})
    with pytest.raises(ValueError, match="give 1"):
        timing.spe_reading({8: 0.001, 32: 0.0004}, {8: 0.01, 32: 0.01})


# ---------------------------------------------------------------- auto_jit_reading
@given(resolved=st.booleans(), types=st.lists(st.sampled_from(["CPU", "GPU", "TPU"]), min_size=1, max_size=4))
def test_auto_jit_reading_states_the_choice_and_matches_it_with_the_devices(resolved, types):
    text = timing.auto_jit_reading(resolved, types)
    assert f"resolved to {resolved} (XLA {'on' if resolved else 'off'})" in text
    cpu_only = set(types) == {"CPU"}
    assert ("does not follow its stock rule" in text) == (cpu_only and resolved)
    if cpu_only and not resolved:
        assert "CPU-only machine" in text and "Colab GPU would time XLA" in text


@pytest.mark.parametrize("resolved, types", [(1, ["CPU"]), ("auto", ["CPU"]), (True, []), (False, [None])])
def test_auto_jit_reading_refuses_bad_arguments(resolved, types):
    with pytest.raises(ValueError):
        timing.auto_jit_reading(resolved, types)


# ---------------------------------------------------------------- launch_reading
@given(case=modes(), ops=st.integers(min_value=2, max_value=1000), lim=limit)
def test_launch_reading_gives_the_per_op_cost_and_applies_the_noise_rule(case, ops, lim):
    _, chain, spreads = case
    lines = timing.launch_reading(chain, spreads, ops, lim)
    noisy = [m for m in MODES if not spreads[m] <= lim]
    for m, where in (("eager", "eager"), ("tf.function", "in a graph")):
        figure = f"{chain[m] / ops * 1e6:,.3g} µs {where}"
        if m in noisy:  # a noisy row's figure is named as not read, never given
            assert figure not in lines[0] and f"{m}" in lines[0].split("; ")[-1] and "not read" in lines[0]
        else:
            assert figure in lines[0]
    assert ("x more when Python hands" in lines[0]) == (not {"eager", "tf.function"} & set(noisy))
    g, x = chain["tf.function"], chain["tf.function + XLA"]
    if {"tf.function", "tf.function + XLA"} & set(noisy):
        assert "not read" in lines[-1]
    elif abs(g - x) <= _band(x, spreads["tf.function + XLA"], g, spreads["tf.function"]):
        assert "within noise" in lines[-1]
    elif x < g:
        assert re.search(rf"{g / x:,.1f}x as fast", lines[-1])
    else:
        assert "slower here" in lines[-1]


@pytest.mark.parametrize("ops", [1, 0, 2.5, True])
def test_launch_reading_refuses_a_bad_op_count(ops):
    chain = dict.fromkeys(MODES, 1e-3)
    with pytest.raises(ValueError, match="ops="):
        timing.launch_reading(chain, dict.fromkeys(MODES, 0.1), ops)


def test_the_published_gpu_launch_figures_carry_their_source():
    assert timing.GPU_LAUNCH_US["waiting after each launch"] > timing.GPU_LAUNCH_US["kernel"]
    assert "developer.nvidia.com/blog/cuda-graphs" in timing.GPU_LAUNCH_SOURCE


# ---------------------------------------------------------------- closing_note's compilation lines
@given(case=modes(), lim=limit, calls=st.integers(min_value=2, max_value=9))
def test_closing_note_lists_the_compilation_figures_and_marks_noisy_ones(case, lim, calls):
    first, steady, spreads = case
    r = {"noise_limit": lim, "compile_first_s": first, "compile_steady_s": steady, "compile_spread": spreads,
         "trace_counts": {"Python float": calls, "tensor": 1}, "retrace_calls": calls,
         "launch_s": steady, "launch_spread": spreads, "launch_ops": 200}
    lines = timing.closing_note(r)
    step = next(line for line in lines if line.startswith("Training step"))
    for m in MODES:
        part = f"{m} {timing._duration(first[m])} then {timing._duration(steady[m])} per warm step"
        assert part in step and ((part + " (noisy)") in step) == (not spreads[m] <= lim)
    assert f"Retracing, traces in {calls} calls: Python float: {calls}; tensor: 1." in lines
    launch = next(line for line in lines if line.startswith("Launch overhead"))
    for m in MODES:
        assert (f"{m} {steady[m] / 200 * 1e6:,.3g} µs" in launch) == (spreads[m] <= lim)
