"""Notebook 05's claims on the out-of-memory wall, fed GPU runs of the kinds a real GPU gives (finding 8).

The fixture ``tests/claims/gpu_nb05.json`` is a T4 that hits the wall. A GPU of 40 GB or more has room for
the last doubling (batch 131,072 from 512): no wall, said plainly. A run whose wall child stopped on another
error, or printed "batch None fitted", must not pass as a wall.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from claims import nb05

from helpers import batching

FIXTURE = json.loads((Path(__file__).resolve().parent / "claims" / "gpu_nb05.json").read_text())


def run_of(results, text):
    return SimpleNamespace(results=results, outputs_text=lambda: "\n".join(text), stderr_text=lambda: "")


def h200_without_a_wall():
    r = copy.deepcopy(FIXTURE["results"])
    r["max_batch"] = None
    r["max_batch_reason"] = "this NVIDIA H200, doubling from batch 512: no out-of-memory error up to batch 131072"
    r["wall"].update(device="this NVIDIA H200", max_batch=131072, failed_at=None, out_of_memory=False, error="",
                     error_type=None, predicted_max_batch=770000)
    # No wall: the effective batch is the largest batch tried, which fits, so the accumulation child measures it.
    r["accumulation"].update(where="this NVIDIA H200", capacity=150_754_820_096, large_peak=13_310_000_000,
                             large_error="", large_error_type=None)
    a = r["accumulation"]
    accumulation = batching.accumulation_memory_lines(a["target"], a["micro"], a["steps"], a["micro_peak"],
                                                      a["accumulated_peak"], a["large_peak"], a["large_error"],
                                                      a["capacity"], a["where"], near=a["near"])
    kept = ("With the scaling rule", "Trained batch", "Sizes the rule", "After 8 updates", "An update of batch")
    text = [line for line in FIXTURE["text"] if line.startswith(kept)] + accumulation + [
        "On this NVIDIA H200, every batch up to 131072 fitted: no wall within the sweep, so this run does not measure "
        "where this device's memory ends. The sweep stops there: the next doubling, 262144, would put more than "
        "2**31 - 1 elements in one tensor, and past that a GPU step can fail in other ways than running out of "
        "memory (cuDNN refuses such a tensor; where TensorFlow checks that with CHECK_CUDNN_OK, the process ends).",
        "Predicted from the sweep: about 770,000 samples, beyond every batch tried, which agrees with finding no wall."]
    return r, text


def test_the_t4_fixture_passes():
    nb05.check(run_of(FIXTURE["results"], FIXTURE["text"]))


def test_a_gpu_without_a_wall_within_the_sweep_passes_when_it_says_so():
    r, text = h200_without_a_wall()
    nb05.check(run_of(r, text))
    with pytest.raises(AssertionError, match="no wall within the sweep"):
        nb05.check(run_of(r, text[:1]))  # the page must say there was no wall


def test_the_old_failure_batch_none_fitted_does_not_pass():
    # What the old notebook produced on a 40-141 GB GPU: doubling to 262,144 (2.8e9 elements in conv1's output),
    # an error that was not ResourceExhaustedError, max_batch None, and "batch None fitted" on the page.
    r = copy.deepcopy(FIXTURE["results"])
    r["max_batch"] = None
    r["wall"].update(max_batch=None, failed_at=None, out_of_memory=False, error="exit code -6: Check failed",
                     error_type=None, tried=[512 * 2**i for i in range(12)])
    text = ["- the wall: batch None fitted on this NVIDIA H200, None did not"] + FIXTURE["text"][-1:]
    with pytest.raises(AssertionError):
        nb05.check(run_of(r, text))


def test_accumulation_must_match_the_wall_and_its_page():
    r = copy.deepcopy(FIXTURE["results"])
    r["accumulation"].update(target=65536, steps=128)  # the batch that fitted, not the one that did not
    with pytest.raises(AssertionError):
        nb05.check(run_of(r, FIXTURE["text"]))
    r = copy.deepcopy(FIXTURE["results"])
    r["accumulation_equivalence"]["same_updates"] = False  # a verdict that does not follow the rule
    with pytest.raises(AssertionError):
        nb05.check(run_of(r, FIXTURE["text"]))
    text = [line for line in FIXTURE["text"] if not line.startswith("256 steps of 512")]
    with pytest.raises(AssertionError, match="256 steps of 512"):
        nb05.check(run_of(FIXTURE["results"], text))  # the page must say what the accumulated update needed


def test_another_error_is_not_taken_for_a_wall():
    r, text = h200_without_a_wall()
    r["wall"].update(failed_at=131072, max_batch=65536, error_type="InternalError", error="cuDNN failed")
    with pytest.raises(AssertionError):
        nb05.check(run_of(r, text))
