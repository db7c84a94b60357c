"""Property tests of helpers.precision's reading functions: each sentence agrees with the figures it was given.

speed_reading, gpu_speed_reading: "faster" only when the policy's median step is shorter by the stated margin,
"slower" only when it is longer by it, the ratio quoted is the one given (rounded as printed), both medians are
quoted as printed, no sentence credits oneDNN when it is off or Tensor Cores a GPU does not have.
fp16_note_reading: the sentence follows the conditions (oneDNN on/off, float16 in oneDNN, the note seen or not).
tensor_core_note: silent exactly where Tensor Cores exist (compute capability 7.0 and later).
memory_gap_reading: "within" exactly when the shares of float32's bytes are that close, loss scaling credited only when
the unscaled float16 step lands within that of bfloat16, the points and shares quoted are the ones given.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from helpers import precision

times = st.floats(min_value=1e-7, max_value=1e3, allow_nan=False, allow_infinity=False)
margins = st.sampled_from([1.0, 1.05, 1.1, 1.25, 2.0])
flag_sets = st.sets(st.sampled_from(["avx2", "avx512f", "avx512bw", "avx512_bf16", "amx_bf16", "avx512_fp16",
                                     "amx_fp16", "avx512_vnni"]))
capabilities = st.one_of(st.none(), st.tuples(st.integers(3, 10), st.integers(0, 9)))
mixed = st.sampled_from(["mixed_float16", "mixed_bfloat16"])


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}"


def _head_agrees(line: str, policy: str, t32: float, t: float, within: float) -> None:
    ratio = t32 / t
    words = re.match(rf"{policy} ran (.*?) float32 on this (CPU|GPU) \(measured: median step (\S+) ms against "
                     r"(\S+) ms", line)
    assert words, line
    said, _, quoted, quoted32 = words.groups()
    assert quoted == _ms(t) and quoted32 == _ms(t32), line
    assert "e+" not in quoted + quoted32 and "e-" not in quoted + quoted32, line
    if said.endswith("faster than"):
        assert ratio > 1 and ratio >= within and said == f"{ratio:.1f}x faster than", (ratio, line)
    elif said.endswith("slower than"):
        assert ratio < 1 and 1 / ratio >= within and said == f"{1 / ratio:.1f}x slower than", (ratio, line)
    else:
        assert said == "about as fast as" and (ratio == 1 or max(ratio, 1 / ratio) < within), (ratio, line)
        assert f"within {within:g}x" in line


@given(flags=flag_sets, t32=times, t16=st.one_of(st.none(), times), tb16=st.one_of(st.none(), times),
       onednn=st.sampled_from([None, True, False]), within=margins)
def test_speed_reading_agrees_with_the_medians_and_the_flags(flags, t32, t16, tb16, onednn, within):
    assume(t16 is not None or tb16 is not None)
    step_s = {"float32": t32, "mixed_float16": t16, "mixed_bfloat16": tb16}
    lines = precision.speed_reading(flags, step_s, onednn=onednn, within=within)
    policies = [p for p in ("mixed_bfloat16", "mixed_float16") if step_s[p] is not None]
    assert len(lines) == len(policies)
    for policy, line in zip(policies, lines, strict=True):
        _head_agrees(line, policy, t32, step_s[policy], within)
        names = precision.BF16_FLAGS if policy == "mixed_bfloat16" else precision.FP16_FLAGS
        has = [n for n in names if n in flags]
        if has:
            assert f"The CPU has {' and '.join(has)}" in line and "lacks" not in line
        else:
            assert "The CPU lacks" in line and "in hardware" not in line
        if onednn is False:
            assert "oneDNN kernels use" not in line
        if "faster than" not in line.split("(measured", 1)[0]:
            assert "which TensorFlow's oneDNN kernels use" not in line and "the gain comes" not in line


@given(cc=capabilities, t32=times, t16=st.one_of(st.none(), times), tb16=st.one_of(st.none(), times),
       within=margins)
def test_gpu_speed_reading_agrees_with_the_medians_and_the_compute_capability(cc, t32, t16, tb16, within):
    assume(t16 is not None or tb16 is not None)
    step_s = {"float32": t32, "mixed_float16": t16, "mixed_bfloat16": tb16}
    lines = precision.gpu_speed_reading(cc, step_s, within=within)
    policies = [p for p in ("mixed_float16", "mixed_bfloat16") if step_s[p] is not None]
    tf32 = cc is not None and cc >= (8, 0)
    assert len(lines) == len(policies) + tf32
    for policy, line in zip(policies, lines[:len(policies)], strict=True):
        _head_agrees(line, policy, t32, step_s[policy], within)
        needs = (7, 0) if policy == "mixed_float16" else (8, 0)
        if cc is None:
            assert "unknown" in line
        elif cc >= needs:
            assert "Tensor Cores" in line and "below" not in line
        else:
            assert f"is below {needs[0]}.{needs[1]}: no" in line and " has float16 Tensor" not in line
    if tf32:
        assert "TF32" in lines[-1] and f"{cc[0]}.{cc[1]}" in lines[-1]
    else:
        assert not any("TF32" in line for line in lines)


@given(t=st.sampled_from([0.0, -1.0, math.nan, math.inf, -math.inf]), policy=st.sampled_from(
    ["float32", "mixed_float16", "mixed_bfloat16"]))
def test_speed_readings_refuse_times_that_are_not_positive_finite(t, policy):
    step_s = {"float32": 0.01, "mixed_float16": 0.02, "mixed_bfloat16": 0.03, policy: t}
    with pytest.raises(ValueError, match="step_s"):
        precision.speed_reading(set(), step_s)
    with pytest.raises(ValueError, match="step_s"):
        precision.gpu_speed_reading((7, 5), step_s)


@given(t=times, within=margins)
def test_equal_medians_read_about_as_fast(t, within):
    for line in precision.speed_reading({"avx512_bf16"}, {"float32": t, "mixed_bfloat16": t}, within=within):
        head = line.split("(measured", 1)[0]
        assert "about as fast as" in head and "faster" not in head and "slower" not in head
    for line in precision.gpu_speed_reading((8, 0), {"float32": t, "mixed_float16": t}, within=within)[:1]:
        assert "about as fast as" in line.split("(measured", 1)[0]


@given(gpu=st.booleans(), fp16=st.booleans(), seen=st.booleans(), flags=flag_sets,
       env=st.sampled_from([{}, {"TF_ENABLE_ONEDNN_OPTS": "0"}, {"TF_ENABLE_ONEDNN_OPTS": "1"}]))
def test_fp16_note_reading_follows_the_conditions(gpu, fp16, seen, flags, env):
    on, why = precision.onednn_state(flags, env, "Linux", "x86_64")
    due = on and not fp16 and not gpu
    note = "oneDNN supports DT_HALF only on platforms with AVX-512." if (seen and due) else None
    line = precision.fp16_note_reading(note, on, why, fp16, due, on_gpu=gpu)
    assert why in line  # the reason for oneDNN's state is quoted as given
    if note:
        assert note in line and "once per process" in line
    elif due:
        assert "met a float16 tensor before" in line
    elif gpu:
        assert "went to the GPU" in line
    elif not on:
        assert "oneDNN is off" in line and "once per process" not in line
    else:
        assert "oneDNN can compute float16" in line
    assert "not at all where" not in line
    with pytest.raises(ValueError, match="note_due"):
        precision.fp16_note_reading(note, on, why, fp16, not due, on_gpu=gpu)


@given(cc=capabilities)
def test_tensor_core_note_is_silent_exactly_where_tensor_cores_exist(cc):
    note = precision.tensor_core_note(cc)
    if cc is None:
        assert "unknown" in note
    elif cc >= (7, 0):
        assert note == ""
    else:
        assert note.startswith(f"Compute capability {cc[0]}.{cc[1]} has no Tensor Cores")


# ---------------------------------------------------------------- memory_gap_reading
peaks = st.floats(min_value=1.0, max_value=1e12, allow_nan=False, allow_infinity=False)
closes = st.sampled_from([0.01, 0.03, 0.05, 0.1])


@given(peaks, st.floats(0.05, 1.5), st.floats(0.05, 1.5), st.floats(0.05, 1.5), closes)
def test_memory_gap_reading_follows_the_shares_it_was_given(f32, s16, sbf, sun, close):
    peak = {"float32": f32, "mixed_float16": s16 * f32, "mixed_bfloat16": sbf * f32}
    unscaled = sun * f32
    text = precision.memory_gap_reading(peak, unscaled, close=close)
    share16, sharebf, shareun = (peak["mixed_float16"] / f32, peak["mixed_bfloat16"] / f32, unscaled / f32)
    gap, gap_un = round(abs(sharebf - share16) * 100, 1), round(abs(sharebf - shareun) * 100, 1)  # as printed
    points = f"{close * 100:.3g} points"
    assert f"are {gap:.1f} points apart" in text, text  # the gap quoted is the one given
    if gap <= close * 100:
        assert f"within {points}, as their equal activations" in text and "loss scaling" not in text, text
        return
    assert "yet their shares" in text and f"{shareun:.1%} of float32's bytes" in text, text
    assert f"{gap_un:.1f} points from mixed_bfloat16's {sharebf:.1%}" in text, text
    if gap_un <= close * 100:  # credit loss scaling only when the unscaled float16 step lands by bfloat16's
        assert f"within {points}: the gap comes with the loss-scaling step" in text, text
        assert "does not explain" not in text
    else:
        assert f"more than {points}: this run does not explain the gap" in text, text
        assert "comes with the loss-scaling step" not in text


@given(peaks, closes)
def test_memory_gap_reading_equal_peaks_read_the_same(f32, close):
    peak = dict.fromkeys(("float32", "mixed_float16", "mixed_bfloat16"), f32)
    text = precision.memory_gap_reading(peak, f32, close=close)
    assert "are 0.0 points apart" in text and "yet" not in text, text


def test_memory_gap_reading_at_the_boundary_and_on_bad_input():
    peak = {"float32": 100.0, "mixed_float16": 50.0, "mixed_bfloat16": 53.0}  # exactly 3 points: within
    assert "3.0 points apart, within 3 points" in precision.memory_gap_reading(peak, 53.0, close=0.03)
    peak["mixed_bfloat16"] = 54.0  # 4 points; the unscaled step exactly 3 points from bfloat16: within
    assert "the gap comes with the loss-scaling step" in precision.memory_gap_reading(peak, 51.0, close=0.03)
    assert "does not explain" in precision.memory_gap_reading(peak, 50.0, close=0.03)
    for bad in ({"float32": 100.0}, {"float32": 0.0, "mixed_float16": 1.0, "mixed_bfloat16": 1.0},
                {"float32": float("nan"), "mixed_float16": 1.0, "mixed_bfloat16": 1.0}):
        with pytest.raises(ValueError, match="peak"):
            precision.memory_gap_reading(bad, 1.0)
    with pytest.raises(ValueError, match="unscaled"):
        precision.memory_gap_reading({"float32": 1.0, "mixed_float16": 1.0, "mixed_bfloat16": 1.0}, -1.0)
    for close in (0, 1, -0.1, float("nan"), "3"):
        with pytest.raises(ValueError, match="close"):
            precision.memory_gap_reading({"float32": 1.0, "mixed_float16": 1.0, "mixed_bfloat16": 1.0}, 1.0,
                                         close=close)
