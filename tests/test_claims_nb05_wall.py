"""Notebook 05's claims on the out-of-memory wall, fed GPU runs of the kinds a real GPU gives (finding 8).

The fixture ``tests/claims/gpu_nb05.json`` is a T4 that hits the wall. A GPU of 40 GB or more has room for
the last doubling (batch 131,072 from 512): no wall, said plainly, and the accumulation section then splits a
batch that fits, which the page must say too. A run whose wall child stopped on another
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
    # It is split as if half of it fitted: exercise 4's rule from 65536 gives 2 steps of 65536.
    r["accumulation"].update(where="this NVIDIA H200", capacity=150_754_820_096, large_peak=25_140_000_000,
                             large_error="", large_error_type=None, largest_fit=65536, micro=65536, steps=2)
    a = r["accumulation"]
    plan = ("Effective batch 131072: no out-of-memory error on this NVIDIA H200 up to this batch, so it fits and "
            "accumulation is not needed here. To show it anyway, this run splits it as if only half of it fitted "
            "(65536). The fewest steps whose micro-batches fit and divide 131072: 2 steps of 65536 samples, "
            "gradient_accumulation_steps=2.")
    accumulation = [plan] + batching.accumulation_memory_lines(
        a["target"], a["micro"], a["steps"], a["micro_peak"], a["accumulated_peak"], a["large_peak"], a["large_error"],
        a["capacity"], a["where"], near=a["near"], weights=a["weights"])
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
    text = [line for line in FIXTURE["text"] if not line.startswith("2 steps of 65536")]
    with pytest.raises(AssertionError, match="2 steps of 65536"):
        nb05.check(run_of(FIXTURE["results"], text))  # the page must say what the accumulated update needed


def test_another_error_is_not_taken_for_a_wall():
    r, text = h200_without_a_wall()
    r["wall"].update(failed_at=131072, max_batch=65536, error_type="InternalError", error="cuDNN failed")
    with pytest.raises(AssertionError):
        nb05.check(run_of(r, text))


def test_the_split_follows_exercise_4_from_the_largest_batch_that_fitted():
    # The reviewer's finding: 65536 fitted, so exercise 4 gives 2 steps of 65536; the old page split the batch into
    # 256 steps of 512, the largest of BATCH_SIZES, and must not pass.
    r = copy.deepcopy(FIXTURE["results"])
    r["accumulation"].update(micro=512, steps=256)
    with pytest.raises(AssertionError):
        nb05.check(run_of(r, FIXTURE["text"]))


def test_a_gpu_without_a_wall_must_say_the_batch_fits():
    r, text = h200_without_a_wall()
    text = [line for line in text if not line.startswith("Effective batch")]
    with pytest.raises(AssertionError):
        nb05.check(run_of(r, text))  # the page must say that accumulation is not needed there
