"""Notebook 05's claims on two GPU situations: an A100 whose convolutions may keep TF32 after ``tf32_off``, and a GPU
in the exclusive-process compute mode, where the memory children cannot run beside the kernel.

TF32: TensorFlow's cuBLAS calls read the TF32 setting at each call (xla/stream_executor/cuda/cuda_blas.cc), but a
convolution algorithm autotuned earlier with TF32 allowed is cached under a key without the setting
(tensorflow/core/util/autotune_maps/conv_parameters.proto), so from compute capability 8.0 the page's tolerance adds
TF32's rounding (2 x 2**-10 per update). A difference at TF32's level then reads "the same updates"; one far beyond
it does not.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from claims import nb05

from helpers import batching

FIXTURE = json.loads((Path(__file__).resolve().parent / "claims" / "gpu_nb05.json").read_text())


def run_of(results, text):
    return SimpleNamespace(results=results, outputs_text=lambda: "\n".join(text), stderr_text=lambda: "")


def a100(drift, tf32_convs=True, same=None):
    """The T4 fixture as an A100 (compute capability 8.0) run whose weights drifted `drift` apart."""
    r = copy.deepcopy(FIXTURE["results"])
    eq = r["accumulation_equivalence"]
    tol = eq["updates"] * (math.sqrt(eq["terms"]) * 2.0**-24 + (2 * 2.0**-10 if tf32_convs else 0.0))
    eq.update(compute_capability=[8, 0], tf32_convs=tf32_convs, tolerance=float(f"{tol:.1e}"), weight_drift=drift)
    eq["same_updates"] = same if same is not None else (drift <= eq["tolerance"] and eq["loss_gap"] <= eq["tolerance"])
    line = batching.equivalence_line(eq["batch"], eq["micro"], eq["steps"], eq["updates"], drift, eq["loss_gap"],
                                     eq["tolerance"], eq["reorder_drift"],
                                     rounding="TF32" if tf32_convs else "float32")
    text = [line if t.startswith("After 8 updates") else t for t in FIXTURE["text"]]
    return r, text, line


def test_a_conv_path_that_kept_tf32_reads_the_same_on_an_a100():
    r, text, line = a100(2.0e-3)  # TF32's level: above float32's 2.8e-4, within 8 x (588 x 2**-24 + 2 x 2**-10)
    nb05.check(run_of(r, text))
    assert r["accumulation_equivalence"]["same_updates"] is True
    assert "at most the TF32 tolerance 1.6e-02, so accumulation made the same updates" in line


def test_a_difference_far_beyond_tf32_is_still_not_the_same():
    r, text, line = a100(0.5)
    assert r["accumulation_equivalence"]["same_updates"] is False and "these are not the same updates" in line
    nb05.check(run_of(r, text))  # the verdict follows the rule: "not the same" passes as such
    r, text, _ = a100(0.5, same=True)  # a page that called it the same fails
    with pytest.raises(AssertionError):
        nb05.check(run_of(r, text))


def test_an_a100_run_must_allow_for_tf32_convolutions():
    r, text, _ = a100(2.0e-5, tf32_convs=False)  # the float32 tolerance on a GPU where TF32 may still apply
    with pytest.raises(AssertionError, match="tf32_convs does not follow the compute capability"):
        nb05.check(run_of(r, text))


def exclusive(reason="exclusive_process", mode="exclusive_process"):
    """The fixture as a GPU whose compute mode refused the memory children: the CPU measured, labelled."""
    r = copy.deepcopy(FIXTURE["results"])
    r["memory_bytes"]["how"] = "BFC allocator, CPU, child process"
    r["memory_skipped"] = {"reason": reason, "compute_mode": mode, "measured_on": "CPU"}
    r["max_batch"] = None
    r["max_batch_reason"] = (f"GPU:0 in the {reason} compute mode, measured on the CPU: a CPU trains in RAM and swap, "
                             "and the operating system stops a process that asks for too much")
    r["wall"].update(device="the pretend 256 MiB CPU device", pretend_mib=256)
    return r


@pytest.mark.parametrize(("reason", "mode"), [("exclusive_process", "exclusive_process"),
                                              ("prohibited", "prohibited"), ("device_busy", "unknown")])
def test_a_skipped_gpu_measurement_passes_with_its_reason(reason, mode):
    nb05.check(run_of(exclusive(reason, mode), FIXTURE["text"]))


@pytest.mark.parametrize(("reason", "mode"), [("exclusive_process", "default"), ("device_busy", "default"),
                                              ("", "exclusive_process"), ("out of time", "unknown"),
                                              ("prohibited", "exclusive_process")])
def test_a_skipped_gpu_measurement_without_an_accepted_reason_fails(reason, mode):
    with pytest.raises(AssertionError):
        nb05.check(run_of(exclusive(reason, mode), FIXTURE["text"]))


def test_a_default_mode_gpu_still_requires_the_gpu_measurement():
    r = exclusive()
    r["memory_skipped"] = None  # measured on the CPU with no reason: refused
    with pytest.raises(AssertionError):
        nb05.check(run_of(r, FIXTURE["text"]))


def test_equivalence_line_names_its_rounding_and_refuses_others():
    args = (512, 128, 4, 8, 2.0e-3, 0.0, 8.1e-3)
    assert "at most the TF32 tolerance" in batching.equivalence_line(*args, rounding="TF32")
    assert "above the float32 tolerance" in batching.equivalence_line(*args[:-1], 2.8e-4)
    with pytest.raises(ValueError, match="rounding="):
        batching.equivalence_line(*args, rounding="tf32")
