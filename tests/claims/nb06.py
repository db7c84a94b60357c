"""Claims of notebook 06 · Mixed precision, checked on its results (smoke or learner run, CPU or GPU)."""

from __future__ import annotations

import re

import numpy as np

from claims import common
from helpers.children import SKIP_REASONS
from helpers.precision import PEAK_SHARE, peak_share_limit

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
KEYS = ("gpu_count", "onednn", "underflow_fraction_fp16", "underflow_fraction_scaled", "memory", "memory_skipped",
        "accuracy",
        "float32_accuracy_same_steps", "step_s", "time_box", "cpu_flags", "skipped_step", "multiple_of_8",
        "exercises_solved")
UNSCALED = "mixed_float16 without loss scaling"
SAME_WITHIN = 1.1  # the notebook's rule: medians closer than this ratio read "about as fast"


def check(run) -> None:
    common.dispatch(run, __name__)


def shared(run) -> None:
    r = run.results
    common.require(r, KEYS)
    text = run.outputs_text()

    # Underflow: some real gradients vanish in float16; the loss scale rescues (some of) them.
    assert r["underflow_fraction_fp16"] > 0, f"no gradient underflowed in float16: {r['underflow_fraction_fp16']}"
    assert r["underflow_fraction_scaled"] < r["underflow_fraction_fp16"], (
        f"scaling did not reduce underflow: {r['underflow_fraction_scaled']} vs {r['underflow_fraction_fp16']}")

    # Memory: 16-bit activations about halve a step's memory, computed and measured on the same model.
    act, peak = r["memory"]["activation_bytes"], r["memory"]["peak_bytes"]
    assert set(act) == set(peak) == set(POLICIES), (sorted(act), sorted(peak))
    assert all(b > 0 for b in peak.values()) and r["memory"]["batch"] > 0, r["memory"]
    assert act["mixed_float16"] <= 0.55 * act["float32"], act
    peak_shares(r["memory"])
    params = r["memory"]["params"]
    assert params["notebook"] == params["child"], f"the measured model is not the trained one: {params}"
    assert "peaked at" in text and "of float32's bytes (measured on this" in text
    memory_reading(r["memory"], text)

    # The inf/NaN step was skipped (no update) and the scale halved.
    s = r["skipped_step"]
    assert s["skipped"] is True, s
    assert s["iterations_after"] == s["iterations_before"], s
    assert s["scale_after"] == s["scale_before"] / 2, s
    assert "apply_gradients skipped the update" in text

    # The float16 note: TensorFlow writes it only where its rule says (oneDNN on, no float16 in oneDNN); on a CPU
    # where the rule says it is due, the first run of the page shows it or says this kernel met float16 before.
    note = r["onednn"]
    if note["note"]:
        assert note["on"] and not note["float16"], note
    elif note["on"] and not note["float16"] and not r["gpu_count"]:
        assert "met a float16 tensor before" in text, "the note was due by TensorFlow's rule, and the page hid it"
    assert "not at all where" not in text  # the old reading, which named no condition the run could check

    # Speed and accuracy: each mixed policy within 2 points of float32 after the same number of steps.
    assert set(r["step_s"]) == set(r["accuracy"]) == set(r["float32_accuracy_same_steps"]) == set(POLICIES)
    assert all(t and t > 0 for t in r["step_s"].values()), r["step_s"]
    for policy in ("mixed_float16", "mixed_bfloat16"):
        same = r["float32_accuracy_same_steps"][policy]
        gap = abs(r["accuracy"][policy] - same)
        assert gap <= 0.02, f"{policy} accuracy {r['accuracy'][policy]:.3f} vs float32 {same:.3f} (same steps)"
    assert all(0.1 < a <= 1 for a in r["accuracy"].values()), f"no better than chance: {r['accuracy']}"
    # Each printed speed sentence says what the measured ratio says, by the rule printed beside it.
    for policy in ("mixed_float16", "mixed_bfloat16"):
        ratio = r["step_s"]["float32"] / r["step_s"][policy]
        word = ("faster than" if ratio >= SAME_WITHIN else "slower than" if 1 / ratio >= SAME_WITHIN
                else "about as fast as")
        assert f"{policy} ran " in text and word in text.split(f"{policy} ran ", 1)[1][:40], (policy, ratio)

    # The time box: float32 runs its whole epoch; a 16-bit policy stops at the first step past the budget (or after
    # MIN_STEPS timed steps, if those already pass it) or runs the whole epoch; a stopped run says it extrapolates.
    box = r["time_box"]
    boxed = box["runs"]
    assert boxed["float32"]["steps"] == box["epoch_steps"] and not boxed["float32"]["stopped"], boxed["float32"]
    for policy in ("mixed_float16", "mixed_bfloat16"):
        one = boxed[policy]
        if one["stopped"]:
            assert box["min_steps"] + 1 <= one["steps"] < box["epoch_steps"], one
            assert box["budget_s"] <= one["timed_s"], (one, box["budget_s"])  # it closed only past the budget
            assert one["steps"] == box["min_steps"] + 1 or one["timed_s"] - one["last_s"] < box["budget_s"], (
                f"the box closed late: {one}, budget {box['budget_s']} s")  # at the first step past it
            assert f"(measured {one['steps']} steps, extrapolated)" in text, policy
        else:
            assert one["steps"] == box["epoch_steps"], one

    assert r["exercises_solved"] is True
    assert run.stderr_text() == "", f"stderr on the learner's page:\n{run.stderr_text()[:2000]}"
    assert "Traceback" not in text
    assert "WARNING" not in text, "a TensorFlow warning reached the page"


def peak_shares(memory: dict) -> None:
    """Each 16-bit peak within the share ``helpers.precision.peak_share_limit`` expects of the device that measured
    it: the CPU's measured shares; on a GPU, by compute capability (bfloat16 through float32 below 8.0) and with
    cuDNN's workspace inside the peak. The page printed the same limits (recorded as ``expected_share``)."""
    peak, device_type = memory["peak_bytes"], "GPU" if "GPU:" in memory["device"] else "CPU"
    cc = tuple(memory["compute_capability"]) if memory.get("compute_capability") else None
    for policy in PEAK_SHARE:
        limit, _ = peak_share_limit(policy, device_type, cc, peak["float32"],
                                    memory["workspace_mb"] if device_type == "GPU" else None)
        assert memory["expected_share"][policy] == round(limit, 4), (policy, memory["expected_share"], limit)
        assert peak[policy] <= limit * peak["float32"], (
            f"{policy} peak {peak[policy]} > {limit:.0%} of float32's {peak['float32']} on {memory['device']}")


def memory_reading(memory: dict, text: str) -> None:
    """The peaks' reading: equal shares, a gap the unscaled float16 step accounts for, or a gap left unexplained."""
    peak, unscaled, close = memory["peak_bytes"], memory["peak_bytes_float16_unscaled"], memory["close"]
    assert memory["loss_scaling"] == {"float32": False, "mixed_float16": True, "mixed_bfloat16": False,
                                      UNSCALED: False}, memory["loss_scaling"]
    share = {p: peak[p] / peak["float32"] for p in POLICIES}
    gap = round(abs(share["mixed_bfloat16"] - share["mixed_float16"]) * 100, 1)  # points, as printed
    gap_unscaled = round(abs(share["mixed_bfloat16"] - unscaled / peak["float32"]) * 100, 1)
    sentence = text.split("mixed_float16 peaked at", 1)[1].split("\n", 1)[0]
    assert f"{share['mixed_float16']:.0%} of float32's bytes" in sentence and (
        f"mixed_bfloat16 at {share['mixed_bfloat16']:.0%}." in sentence), sentence
    if gap <= close * 100:
        assert f"are {gap:.1f} points apart, within 3 points" in sentence, sentence
    elif gap_unscaled <= close * 100:
        assert (f"their shares are {gap:.1f} points apart; mixed_float16 without loss scaling peaked at "
                f"{unscaled / peak['float32']:.1%} of float32's bytes" in sentence), sentence
        assert "within 3 points: the gap comes with the loss-scaling step, not with the 16-bit type" in sentence
    else:
        assert "more than 3 points: this run does not explain the gap" in sentence, sentence
    assert "about halve" not in text


def page_lines(r: dict, text: str) -> None:
    """Lines of a whole page (the GPU fixture keeps only some lines, so on_cpu checks these)."""
    # float16's overflow edge, as NumPy rounds: 65519 still becomes 65504, 65520 becomes inf.
    with np.errstate(over="ignore"):
        assert float(np.float16(65519.0)) == 65504.0 and np.isinf(np.float16(65520.0))
    assert "65519 still rounds to 65504, and values from 65520 up become inf" in text
    assert "overflows above 65504" not in text
    # The model's size is printed beside the sourced one, and the word follows the printed rule.
    params = r["memory"]["params"]["notebook"]
    within = float(re.search(r"about the same size within ([\d.]+)x\)", text)[1])  # the rule the page prints
    ratio = params / 60_554  # the model in tensorflow/tensorflow#34406
    word = "about the same size" if 1 / within <= ratio <= within else "larger" if ratio > 1 else "smaller"
    assert (f"This notebook's model has {params:,} parameters, {ratio:.2f}x the 60,554 of the model in "
            f"tensorflow/tensorflow#34406: {word} ") in text
    # The summary quotes each policy's peak with its share of float32's.
    memory, peak = r["memory"], r["memory"]["peak_bytes"]
    shares = ", ".join(f"{p} {peak[p] / 2**20:.1f} MiB ({peak[p] / peak['float32']:.0%} of float32's)"
                       for p in POLICIES)
    assert f"peak bytes of one step at batch {memory['batch']}: {shares}" in text, "the summary's memory line"


def on_cpu(run) -> None:
    r = run.results
    text = run.outputs_text()
    page_lines(r, text)
    assert list(r["multiple_of_8"]) == ["skipped"], r["multiple_of_8"]
    assert "Skipped: this machine has no GPU" in text
    assert r["memory"]["device"] == "CPU:0", r["memory"]
    assert "on this CPU (measured: median step" in text and "CPU flags:" in text
    # Without float16 instructions the CPU computes float16 by conversion: slower than float32, by far.
    if not {"avx512_fp16", "amx_fp16"} & set(r["cpu_flags"]):
        assert r["step_s"]["mixed_float16"] > r["step_s"]["float32"], r["step_s"]
        assert "it has no float16 arithmetic" in text


def memory_skipped(r: dict) -> bool:
    """Whether GPU:0's memory children were skipped for a reason the claims accept: its compute mode gave a second
    process no context (helpers.children.REFUSING_MODES), or its CUDA refused one ("device_busy", the mode unknown to
    NVML); a GPU in the "default" mode must measure. The CPU then measured instead."""
    skipped = r["memory_skipped"]
    if not skipped:
        return False
    assert r["gpu_count"] >= 1 and skipped["reason"] in SKIP_REASONS, skipped
    assert skipped["compute_mode"] != "default", ("a GPU in the default compute mode must measure", skipped)
    assert skipped["reason"] in ("device_busy", skipped["compute_mode"]) and skipped["measured_on"] == "CPU", skipped
    return True


def on_gpu(run) -> None:
    r = run.results
    text = run.outputs_text()
    timed = r["multiple_of_8"]
    assert set(timed) == {"4096", "4095"} and all(v["tflops"] > 0 and v["s"] > 0 for v in timed.values()), timed
    assert "the multiple of 8 ran" in text
    assert r["memory"]["device"] == ("CPU:0" if memory_skipped(r) else "GPU:0"), r["memory"]
    assert "on this GPU (measured: median step" in text
    cc = re.search(r"GPU: .*?compute capability (\d+)\.(\d+)", text)
    assert cc, "the speed reading does not name the GPU's compute capability"
    if (int(cc[1]), int(cc[2])) >= (8, 0):  # the float32 baseline there is TF32
        assert "TF32 on Tensor Cores by default" in text
    if (int(cc[1]), int(cc[2])) < (7, 0):  # a P100 (6.0): no Tensor Cores, said where the multiple of 8 is timed
        assert "has no Tensor Cores (they start at 7.0)" in text
        assert "float16 Tensor Cores (from 7.0)" not in text
