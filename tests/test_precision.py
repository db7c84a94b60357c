"""Tests for helpers.precision: spacing, plots, the step timer, native stderr, and the speed readings."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

from helpers import cpu, precision

# Made-up /proc/cpuinfo texts (helpers.cpu reads the flags from them).
ZEN4 = "model name\t: AMD EPYC 9B14\nflags\t\t: fpu avx2 fma avx512f avx512_bf16\n"
SAPPHIRE = "model name\t: Intel Xeon 8480\nflags\t\t: avx2 avx512f avx512_bf16 avx512_fp16 amx_bf16 amx_tile\n"
OLD = "model name\t: Intel Xeon E5-2690 v4\nflags\t\t: avx2 fma f16c\n"


# ---------------------------------------------------------------- formats
def test_spacing_matches_each_formats_epsilon_at_one():
    assert precision.spacing([1.0], "float32")[0] == np.finfo(np.float32).eps
    assert precision.spacing([1.0], "float16")[0] == np.finfo(np.float16).eps
    assert precision.spacing([1.0], "bfloat16")[0] == ml_dtypes.finfo(ml_dtypes.bfloat16).eps
    assert precision.spacing([1.0], "tf32")[0] == precision.TF32["eps"] == 2.0**-10


def test_spacing_is_nan_outside_a_formats_range_and_refuses_unknown_formats():
    gaps = precision.spacing([70000.0, 1e-20], "float16")
    assert np.isnan(gaps[0])  # overflows float16
    assert gaps[1] == 2.0**-24  # the subnormal step: 1e-20 rounds to 0, whose gap is the smallest subnormal
    assert np.isnan(precision.spacing([1e-40], "tf32")[0])  # below TF32's normal range
    with pytest.raises(ValueError, match="float16"):
        precision.spacing([1.0], "float8")


def test_plots_draw_and_refuse_empty_input():
    ax = precision.plot_spacing()
    assert {line.get_label() for line in ax.lines} >= {"float32", "tf32", "bfloat16", "float16"}
    ax = precision.plot_gradient_magnitudes(np.array([0.0, 1e-9, -1e-4, 0.5]), 2.0**15)
    assert len(ax.patches) > 0
    with pytest.raises(ValueError, match="non-zero"):
        precision.plot_gradient_magnitudes(np.zeros(3), 2.0**15)
    with pytest.raises(ValueError, match="scale"):
        precision.plot_gradient_magnitudes(np.ones(3), 0)


# ---------------------------------------------------------------- plumbing
def test_native_stderr_catches_file_descriptor_2_and_restores_it():
    with precision.native_stderr() as caught:
        os.write(2, b"E0000 util.cc:131] oneDNN supports DT_HALF only ...\n")
    assert "DT_HALF" in caught.text
    with precision.native_stderr() as quiet:
        pass
    assert quiet.text == ""


def test_step_timer_keeps_the_median_without_the_first_step():
    timer = precision.step_timer()
    assert timer.median is None
    timer.times = [5.0, 0.1, 0.3, 0.2]  # the first step traces and compiles
    assert timer.median == 0.2


def test_step_timer_times_a_real_fit():
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    timer = precision.step_timer()
    model.fit(np.ones((40, 3)), np.ones(40), batch_size=8, epochs=2, verbose=0, callbacks=[timer])
    assert len(timer.times) == 10 and timer.median > 0


# ---------------------------------------------------------------- speed readings
def test_speed_reading_on_a_cpu_with_bfloat16_but_no_float16_instructions():
    lines = precision.speed_reading(cpu.flags(ZEN4), {"float32": 0.06, "mixed_bfloat16": 0.03,
                                                      "mixed_float16": 0.35})
    bf16, fp16 = lines
    assert bf16.startswith("mixed_bfloat16 ran 2.0x faster than float32") and "avx512_bf16" in bf16
    assert fp16.startswith("mixed_float16 ran 5.8x slower than float32") and "no float16 arithmetic" in fp16


def test_speed_reading_when_bfloat16_instructions_do_not_pay_off_on_a_small_model():
    bf16 = precision.speed_reading(cpu.flags(ZEN4), {"float32": 0.06, "mixed_bfloat16": 0.061})[0]
    assert "about as fast as" in bf16 and "this model is small" in bf16


def test_speed_reading_on_a_cpu_with_float16_and_amx():
    lines = precision.speed_reading(cpu.flags(SAPPHIRE), {"float32": 0.06, "mixed_bfloat16": 0.02,
                                                          "mixed_float16": 0.03})
    assert "avx512_bf16 and amx_bf16" in lines[0]
    assert lines[1].startswith("mixed_float16 ran 2.0x faster") and "avx512_fp16" in lines[1]


def test_speed_reading_on_a_cpu_without_16_bit_instructions():
    lines = precision.speed_reading(cpu.flags(OLD), {"float32": 0.05, "mixed_bfloat16": 0.3})
    assert lines == [lines[0]] and "6.0x slower" in lines[0] and "no bfloat16 arithmetic" in lines[0]
    faster = precision.speed_reading(cpu.flags(OLD), {"float32": 0.05, "mixed_bfloat16": 0.04})[0]
    assert "half the bytes" in faster and "not from faster arithmetic" in faster


def test_speed_reading_refuses_incomplete_or_unknown_figures():
    with pytest.raises(ValueError, match="float32"):
        precision.speed_reading(set(), {"mixed_float16": 0.1})
    with pytest.raises(ValueError, match="unknown"):
        precision.speed_reading(set(), {"float32": 0.1, "float8": 0.1})
    with pytest.raises(ValueError, match="at least one"):
        precision.speed_reading(set(), {"float32": 0.1})


def test_gpu_speed_reading_follows_the_compute_capability():
    t4 = precision.gpu_speed_reading((7, 5), {"float32": 0.006, "mixed_float16": 0.004, "mixed_bfloat16": 0.007})
    assert "float16 Tensor Cores (from 7.0)" in t4[0]
    assert "below 8.0: no bfloat16 Tensor Cores" in t4[1] and "gains nothing" in t4[1]
    a100 = precision.gpu_speed_reading((8, 0), {"float32": 0.004, "mixed_bfloat16": 0.0041})
    assert "this model is small" in a100[0] and "2.60x on an A100" in a100[0]
    assert len(a100) == 2 and "TF32 on Tensor Cores" in a100[1]  # A100's float32 baseline is TF32
    assert not any("TF32" in line for line in t4)  # a T4 has no TF32
    p100 = precision.gpu_speed_reading((6, 0), {"float32": 0.01, "mixed_float16": 0.008})[0]
    assert "below 7.0" in p100 and "saves memory traffic" in p100
    assert "unknown" in precision.gpu_speed_reading(None, {"float32": 0.01, "mixed_float16": 0.008})[0]
    with pytest.raises(ValueError, match="at least one"):
        precision.gpu_speed_reading((8, 0), {"float32": 0.01})


def test_gpu_speed_reading_with_a_fake_gpu_report():
    """The notebook passes hw.gpus[0].compute_capability; a fake TF gives the same shape of answer."""
    from fakes import FakeNVML, FakeTF

    from helpers import env

    gpu = env.gpus(tf=FakeTF(n_gpus=1), nvml=FakeNVML())[0]
    line = precision.gpu_speed_reading(gpu.compute_capability, {"float32": 0.006, "mixed_float16": 0.004})[0]
    assert "Compute capability 7.5" in line


def test_gpu_speed_reading_on_a_p100_says_no_tensor_cores_and_how_fast_its_cores_do_float16():
    p100 = precision.gpu_speed_reading((6, 0), {"float32": 0.010, "mixed_float16": 0.0095, "mixed_bfloat16": 0.012})
    fp16, bf16 = p100
    assert "below 7.0: no float16 Tensor Cores" in fp16 and "twice the float32 rate" in fp16
    assert "below 8.0: no bfloat16 Tensor Cores" in bf16 and "gains nothing" in bf16
    assert not any("TF32" in line or "has float16 Tensor Cores" in line for line in p100)
    gtx = precision.gpu_speed_reading((6, 1), {"float32": 0.010, "mixed_float16": 0.05})[0]
    assert "1/64 of the float32 rate" in gtx and "twice" not in gtx
    t4 = precision.gpu_speed_reading((7, 5), {"float32": 0.010, "mixed_float16": 0.008})[0]
    assert "ordinary cores compute float16" not in t4  # the 6.x note only where there are no Tensor Cores


def test_tensor_core_note_speaks_only_where_there_are_no_tensor_cores():
    assert precision.tensor_core_note((7, 0)) == precision.tensor_core_note((9, 0)) == ""
    assert "has no Tensor Cores (they start at 7.0)" in precision.tensor_core_note((6, 0))
    assert "unknown" in precision.tensor_core_note(None)


def test_the_p100_branch_reaches_the_page_through_a_fake_gpu_report():
    from fakes import FakeNVML, FakeTF

    from helpers import env

    p100 = FakeTF(details={"device_name": "Tesla P100-PCIE-16GB", "compute_capability": (6, 0)})
    gpu = env.gpus(tf=p100, nvml=FakeNVML(gpus=[{"name": "Tesla P100-PCIE-16GB", "util": 0, "used": 0,
                                                 "total": 16 * 1024**3, "power_mw": 30000, "temp": 40}]))[0]
    assert gpu.compute_capability == (6, 0)
    assert precision.tensor_core_note(gpu.compute_capability).startswith("Compute capability 6.0 has no Tensor Cores")
    assert "Compute capability 6.0 is below 7.0" in precision.gpu_speed_reading(
        gpu.compute_capability, {"float32": 0.01, "mixed_float16": 0.008})[0]


# ---------------------------------------------------------------- oneDNN and the float16 note
AVX2_LAPTOP = {"avx", "avx2", "fma", "f16c"}  # a CPU without AVX-512 (many laptops)


def test_onednn_state_follows_tensorflows_rule():
    assert precision.onednn_state(AVX2_LAPTOP, {}, "Linux", "x86_64")[0] is False
    assert precision.onednn_state({"avx512f", "avx512_bf16"}, {}, "Linux", "x86_64") == (
        True, "on: TF_ENABLE_ONEDNN_OPTS is unset and this CPU has avx512_bf16, for which TensorFlow turns oneDNN "
              "on by default")
    assert precision.onednn_state({"avx512_vnni"}, {"TF_ENABLE_ONEDNN_OPTS": "0"}, "Linux", "x86_64") == (
        False, "off: TF_ENABLE_ONEDNN_OPTS=0")
    assert precision.onednn_state(AVX2_LAPTOP, {"TF_ENABLE_ONEDNN_OPTS": "1"}, "Linux", "x86_64")[0] is True
    assert precision.onednn_state({"avx512_vnni"}, {}, "Windows", "AMD64")[0] is False


@pytest.mark.parametrize("setting", [None, "0"])
def test_onednn_state_agrees_with_tensorflow_on_this_machine(setting):
    """TensorFlow's own answer (IsMklEnabled), in a fresh Python with the variable unset or 0."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    if setting is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = setting
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    code = "from tensorflow.python.util import _pywrap_util_port as p; print(p.IsMklEnabled())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() in ("True", "False"), out.stderr[-2000:]
    assert precision.onednn_state(cpu.flags(), env)[0] == (out.stdout.strip() == "True")


def test_onednn_float16_needs_float16_instructions_not_avx512():
    assert not precision.onednn_float16({"avx512f", "avx512bw", "avx512_bf16", "avx512_vnni"})
    assert precision.onednn_float16({"avx512bw", "avx512_fp16"})
    assert not precision.onednn_float16({"avx512_fp16"})  # without avx512bw
    assert precision.onednn_float16({"avx2", "avx_ne_convert"})


def test_fp16_note_reading_names_the_condition_the_run_met():
    off = precision.onednn_state(AVX2_LAPTOP, {}, "Linux", "x86_64")
    line = precision.fp16_note_reading(None, *off, False, False)
    assert "oneDNN is off" in line and "none of avx512_vnni" in line and "not at all where" not in line
    note = ("oneDNN supports DT_HALF only on platforms with AVX-512. Falling back to the default Eigen-based "
            "implementation if present.")
    on = precision.onednn_state({"avx512f", "avx512_bf16"}, {}, "Linux", "x86_64")
    line = precision.fp16_note_reading(note, *on, False, True)
    assert note in line and "once per process" in line and "lacks those float16 instructions" in line
    again = precision.fp16_note_reading(None, *on, False, True)  # the second run in one kernel
    assert "met a float16 tensor before" in again
    with pytest.raises(ValueError, match="note_due"):
        precision.fp16_note_reading(None, *on, False, False)


def test_speed_reading_with_onednn_off_does_not_credit_onednn():
    flags = {"avx512f", "avx512_bf16"}
    slow = precision.speed_reading(flags, {"float32": 0.055, "mixed_bfloat16": 0.338}, onednn=False)[0]
    assert "oneDNN is off" in slow and "which TensorFlow's oneDNN kernels use" not in slow
    assert "median step 338 ms against 55 ms" in slow
    on = precision.speed_reading(flags, {"float32": 0.05, "mixed_bfloat16": 0.03}, onednn=True)[0]
    assert "oneDNN kernels use" in on


# ---------------------------------------------------------------- the time box
def slow_model(sleep_s):
    """A model whose every step sleeps `sleep_s` seconds (run eagerly): a fake slow step for the time box."""
    import time

    import keras

    class Slow(keras.layers.Layer):
        def call(self, x):
            time.sleep(sleep_s)
            return x

    model = keras.Sequential([keras.Input((2,)), Slow(), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", run_eagerly=True, jit_compile=False)
    return model


def test_step_timer_time_box_stops_a_slow_epoch_early():
    """A fake slow step (a layer that sleeps, run eagerly): the box closes after the budget, not the epoch."""
    import time

    model = slow_model(0.03)
    steps_per_epoch = 100
    timer = precision.step_timer(budget_s=0.25, min_steps=3)
    x = np.zeros((steps_per_epoch * 4, 2), dtype="float32")
    start = time.perf_counter()
    model.fit(x, x[:, :1], batch_size=4, epochs=1, verbose=0, callbacks=[timer])
    wall = time.perf_counter() - start
    assert timer.stopped and 3 < timer.steps < steps_per_epoch, timer.steps
    assert timer.timed_s >= 0.25 and timer.timed_s - timer.times[-1] < 0.25  # closed at the first step past it
    # the epoch it saved: the run took a fraction of what the whole epoch takes at the measured median
    assert wall < 0.5 * steps_per_epoch * timer.median, (wall, timer.median)


def test_step_timer_passing_the_budget_on_the_last_step_is_not_a_stop():
    """A box that closes on the epoch's last step cut nothing: the run is whole, not extrapolated (a smoke
    run of 06 once recorded stopped=True with all 5 of 5 steps run)."""
    model = slow_model(0.02)
    timer = precision.step_timer(budget_s=1e-6, min_steps=4)  # passed at once, but first allowed on the last step
    model.fit(np.zeros((20, 2), "float32"), np.zeros((20, 1), "float32"), batch_size=4, verbose=0, callbacks=[timer])
    assert timer.steps == 5 and not timer.stopped
    cut = precision.step_timer(budget_s=1e-6, min_steps=3)  # allowed one step earlier: a step is cut
    model.fit(np.zeros((20, 2), "float32"), np.zeros((20, 1), "float32"), batch_size=4, verbose=0, callbacks=[cut])
    assert cut.steps == 4 and cut.stopped


def test_step_timer_without_a_budget_runs_the_whole_epoch_and_refuses_bad_budgets():
    import keras

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", jit_compile=False)
    timer = precision.step_timer()
    model.fit(np.zeros((40, 2), "float32"), np.zeros((40, 1), "float32"), batch_size=4, verbose=0, callbacks=[timer])
    assert timer.steps == 10 and not timer.stopped
    for bad in (0, -1.0, float("nan"), float("inf"), "5"):
        with pytest.raises(ValueError, match="budget_s"):
            precision.step_timer(budget_s=bad)
    with pytest.raises(ValueError, match="min_steps"):
        precision.step_timer(budget_s=1.0, min_steps=0)


def test_notebook_06_sources_its_published_figures():
    """TF32's bit counts carry NVIDIA's description; NVIDIA's rounded speed-ups are labelled as NVIDIA's."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "06_mixed_precision.ipynb").read_text())
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    tf32 = prose.split("- **TF32**", 1)[1].split("\n- ", 1)[0]
    assert "8 exponent bits" in tf32 and "10 mantissa bits" in tf32 and precision.TF32_SOURCE in tf32
    assert precision.TF32["nexp"] == 8 and precision.TF32["nmant"] == 10 and precision.TF32["bits"] == 19
    nvidia = prose.split("Measured by NVIDIA on other hardware", 1)[1].split("\n\n", 1)[0]
    assert '"Training performance: NVIDIA DGX A100 (8x A100 40GB)"' in nvidia
    assert "given there as 2.60x" in nvidia and "2,375 / 909 = 2.61" in nvidia and round(2375 / 909, 2) == 2.61
    assert "NVIDIA's table gives as 3.08x" in nvidia and round(1270 / 412, 2) == 3.08


def test_notebook_06_prose_says_what_the_run_measures():
    """No 'about halve' for a peak that fell less far; the issue's model size sourced, the exercises' types named."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "06_mixed_precision.ipynb").read_text())
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "about halve a step's memory" not in prose and "a whole step's measured peak fell less far" in prose
    assert "about\nthis one's size" not in prose and "about this one's size" not in prose
    assert "https://github.com/tensorflow/tensorflow/issues/34406" in prose and "main_model.count_params()" in code
    assert "overflows above" not in code and "values \"\n      f\"from {first_inf:g} up become" in code
    assert "returns the tuple\n`(new_scale, new_good_steps, applied)`" in prose and "`applied` being a bool" in prose
    assert "Comparing with it does the\nsame" in prose
    assert "auto_scale_loss=scaled" in code  # the fourth measurement: mixed_float16 without loss scaling
