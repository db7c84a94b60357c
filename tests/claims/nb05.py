"""Claims of notebook 05 · batch size and learning rate, asserted on its results JSON.

The scaling rule (after the same 2 epochs, a larger batch trains to a higher test accuracy with the learning
rate scaled by batch / smallest batch and warmed up than with the base rate) counts only beyond noise: a
difference above 2 standard errors, sqrt(p(1-p)/n), of an accuracy on the n = 2,000 test images (about 0.02
near p = 0.75; it covers the test sample, not seed-to-seed spread). Measured on the 2-core CPU with oneDNN on,
it helped the largest batch over seeds 0-3 at smoke size (2,000 images: +0.20 to +0.38) and seeds 0-2 at learner
size (10,000 images: +0.06 to +0.19). With oneDNN off (TF_ENABLE_ONEDNN_OPTS=0, TensorFlow's path on CPUs
without AVX-512), seed 0: smoke +0.38 at batch 512; learner size +0.015, +0.045, +0.014 at 64, 128, 256 (only
128 beyond the margin) and -0.029 at 512 (hurt), whose scaled rate 0.16 sent the held-out loss up to 5.19. So
on a CPU the claim is that the rule helped at least one size above the base beyond the margin, and, for every
size, that the page says which of helped, hurt or within noise it was.

Gradient accumulation (section "Past the memory wall"). The effective batch is the first batch the wall child
could not fit, made as k steps by exercise 4's rule from the largest batch that fitted (the last doubling: 1024 on
the CPU, so 2 steps of 1024; 65536 on the T4 fixture). With no wall (a GPU of 40 GB or more) it is the largest
batch tried, which fits, split as if half of it fitted, and the page says so. Why the claims hold on a CPU and on
a GPU alike:
- Memory: a step's peak grows with its batch (fixed part plus bytes per sample, both devices), and an accumulated
  step holds one micro-batch plus one float32 accumulator per weight (50.0 KiB here), so its peak is within 20 % of
  a plain micro-batch step's and below the large step's, which on a GPU raises ResourceExhaustedError instead (the
  wall). Measured on the CPU child (oneDNN off, BFC, one thread) at learner size: 2 x 1024, 180.5 MiB plain, 159.6
  MiB accumulated (12 % below: far more than the accumulators, so the allocator's chunks), batch 2048 346.6 MiB,
  above the pretend 256 MiB device; with the earlier split 4 x 512, 88.5-92.3 MiB plain, 79.0-81.1 MiB accumulated.
- Updates: the same from the same weights and images, up to rounding, on any device where float32 stays float32;
  the notebook turns TF32 off around the comparison (helpers.nn.tf32_off), so a GPU's matmuls round as float32 too
  (cuBLAS reads the setting at each call, xla/stream_executor/cuda/cuda_blas.cc). A convolution cuDNN autotuned
  earlier with TF32 allowed may keep it (the autotune key, ConvParametersProto in
  tensorflow/core/util/autotune_maps/conv_parameters.proto, has no TF32 field), so from compute capability 8.0 the
  page's tolerance adds TF32's rounding, 2 x 2**-10 per update, and must (tf32_convs follows the recorded compute
  capability). The tolerance updates x sqrt(terms) x 2**-24 is the page's rule elsewhere; on this CPU, smoke size
  (3 updates): weights 1.4e-5 apart against a tolerance of 1.1e-4, losses equal to 4 decimals; learner size (8
  updates, tolerance 2.8e-4): 3.4e-5 with oneDNN on, 5.0e-7 with it off (the large batch reversed: 2.9e-6 and
  1.7e-5). A GPU whose cuDNN picks a Winograd or FFT kernel may round more, so there the claim is only that the
  page's verdict follows its rule.
- Keras' counting (BaseOptimizer.iterations is _iterations // k) and the tolerance's formula hold everywhere; the
  time per update is whatever the device measured, and the page's sentence must follow its rule.
"""

from __future__ import annotations

import math

from claims import common
from helpers import batching, children


def check(run) -> None:
    common.dispatch(run, __name__)


def _by_batch(values):
    return {int(batch): value for batch, value in values.items()}


def shared(run):
    r = run.results
    common.require(r, ("gpu_count", "samples_per_s", "memory_bytes", "memory_skipped", "final_accuracy", "max_batch",
                "max_batch_reason", "wall", "scaling_rule_helped", "t4_estimate_max_batch", "exercises_solved",
                "convergence_skipped", "scaling_rule_helped_at", "scaling_rule_hurt_at", "test_images", "noise_se",
                "accumulation", "accumulation_equivalence", "accumulation_time"))
    text = run.outputs_text()

    # Throughput: a positive figure for at least three batch sizes.
    samples_per_s = _by_batch(r["samples_per_s"])
    sizes = sorted(samples_per_s)
    assert len(sizes) >= 3, f"throughput recorded for {sizes} only"
    assert all(v > 0 and math.isfinite(v) for v in samples_per_s.values()), samples_per_s

    # Memory: a peak for every batch size, how it was measured, and more memory for the largest batch.
    peaks = _by_batch(r["memory_bytes"]["peak"])
    assert sorted(peaks) == sizes, f"peaks for {sorted(peaks)}, throughput for {sizes}"
    assert r["memory_bytes"]["how"].endswith("child process"), r["memory_bytes"]["how"]
    assert all(p > 0 for p in peaks.values()), peaks
    assert peaks[sizes[-1]] > peaks[sizes[0]], f"the peak did not grow with the batch: {peaks}"

    # The wall: the doublings start at the largest batch and stop before any tensor of a step passes 2**31 - 1
    # elements (past that a GPU fails otherwise than by running out of memory). Either an out-of-memory error was
    # caught, the process trained on and the doubling brackets it; or every doubling fitted, said plainly.
    wall = r["wall"]
    tried = wall["tried"]
    assert tried[0] == sizes[-1] and all(b == 2 * a for a, b in zip(tried, tried[1:], strict=False)), tried
    assert tried[-1] * wall["largest_tensor_per_sample"] <= 2**31 - 1, (tried, wall["largest_tensor_per_sample"])
    assert wall["loss_after"] is not None and 0 < wall["loss_after"] < 10, f"no training step after the sweep: {wall}"
    assert "batch None" not in text and "up to batch None" not in text, "the page printed a missing batch"
    if wall["out_of_memory"]:
        assert wall["error_type"] == "ResourceExhaustedError", wall
        assert wall["error"].startswith(("OOM when allocating", "Out of memory while trying to allocate")), wall
        assert wall["max_batch"] >= sizes[-1] and wall["failed_at"] == 2 * wall["max_batch"], wall
        assert f"batch {wall['failed_at']} raised ResourceExhaustedError: {wall['error']}" in text
        assert "After catching it, the same process trained a batch of 32" in text
    else:  # no wall within the sweep: no error of any kind, every doubling measured
        assert wall["failed_at"] is None and wall["error_type"] is None and not wall["error"], wall
        assert wall["max_batch"] == tried[-1], wall
        assert f"every batch up to {tried[-1]} fitted: no wall within the sweep" in text

    # Convergence: both rules for the smallest and the largest batch (and, at learner size, every one).
    accuracy = _by_batch(r["final_accuracy"])
    base, big = min(accuracy), max(accuracy)
    assert base == sizes[0] and big == sizes[-1], sorted(accuracy)
    # The time budget skips only middle sizes (smoke mode trains the two ends only), and the page says which.
    skipped = r["convergence_skipped"]
    assert set(skipped) <= set(sizes[1:-1]) and not set(skipped) & set(accuracy), (skipped, sorted(accuracy))
    trained_line = f"Trained batch {', '.join(map(str, sorted(accuracy)))} in "
    assert trained_line in text, trained_line
    if skipped:
        assert f"; not trained: batch {', '.join(map(str, skipped))}, since the next size would not fit" in text
    for batch, by_rule in accuracy.items():
        assert set(by_rule) == {"constant", "scaled"}, by_rule
        assert all(0 <= a <= 1 for a in by_rule.values()), (batch, by_rule)
    assert accuracy[base]["constant"] == accuracy[base]["scaled"], "at the base batch both rules are the same run"
    # With the same learning rate and epochs, the largest batch ends below the smallest.
    assert accuracy[big]["constant"] < accuracy[base]["constant"], accuracy
    # The scaling rule: a size counts as helped (or hurt) only when scaled and constant differ by more than
    # noise_se standard errors of an accuracy on test_images images, sqrt(p(1-p)/n); the recorded verdicts follow
    # that rule, and the page says what happened, including "within noise".
    n, se = r["test_images"], r["noise_se"]
    assert n >= 100 and se >= 1, (n, se)

    def verdict(b):
        c, s = accuracy[b]["constant"], accuracy[b]["scaled"]
        m = se * math.sqrt((c + s) / 2 * (1 - (c + s) / 2) / n)
        return "helped" if s - c > m else "hurt" if c - s > m else "within noise"

    verdicts = {b: verdict(b) for b in sorted(accuracy)[1:]}
    helped_at = [b for b, v in verdicts.items() if v == "helped"]
    hurt_at = [b for b, v in verdicts.items() if v == "hurt"]
    assert r["scaling_rule_helped"] is (verdicts[big] == "helped"), (r["scaling_rule_helped"], accuracy[big])
    assert r["scaling_rule_helped_at"] == helped_at, (r["scaling_rule_helped_at"], accuracy)
    assert r["scaling_rule_hurt_at"] == hurt_at, (r["scaling_rule_hurt_at"], accuracy)
    noise_at = [b for b, v in verdicts.items() if v == "within noise"]
    assert (f"Sizes the rule helped (above the margin): {', '.join(map(str, helped_at)) or 'none'}; hurt: "
            f"{', '.join(map(str, hurt_at)) or 'none'}; within noise: {', '.join(map(str, noise_at)) or 'none'}."
            in text)
    said = {"helped": f"With the scaling rule, batch {big} reaches a higher accuracy than without it in the same "
                      "budget",
            "hurt": f"With the scaling rule, batch {big} reached a lower accuracy than without it",
            "within noise": "so this run cannot tell the two rules apart"}
    assert said[verdicts[big]] in text, said[verdicts[big]]

    accumulation_claims(r, text, sizes)

    assert r["exercises_solved"] is True
    assert run.stderr_text() == "", f"stderr on the learner's page:\n{run.stderr_text()[:2000]}"
    assert "Traceback" not in text


def accumulation_claims(r, text, sizes):
    """Past the wall: the effective batch in k micro-steps, its memory, the same updates, the time (docstring)."""
    acc, wall = r["accumulation"], r["wall"]
    target, micro, k, fit = acc["target"], acc["micro"], acc["steps"], acc["largest_fit"]
    assert target == (wall["failed_at"] if wall["out_of_memory"] else wall["max_batch"] or sizes[-1]), (acc, wall)
    # Exercise 4's rule from the largest batch that fitted (with no wall: half the batch, said on the page).
    if wall["out_of_memory"]:
        assert fit == (wall["max_batch"] or max(s for s in sizes if s < target)), (acc, wall)
        assert f"which did not fit on {acc['where']}; the largest batch that fitted: {fit}." in text
    else:
        assert fit == target // 2, acc
        assert (f"no out-of-memory error on {acc['where']} up to this batch, so it fits and accumulation is not "
                f"needed here. To show it anyway, this run splits it as if only half of it fitted ({fit})." in text)
    assert micro == batching.micro_batch(target, fit) and micro * k == target and k >= 2, acc  # Keras' k >= 2
    assert f"{k} steps of {micro} samples, gradient_accumulation_steps={k}." in text, acc
    # Memory: the accumulated update peaks near a plain micro-batch step, below the large step (or the large step
    # ran out of memory), and fits where the large batch did not.
    near, micro_peak, acc_peak = acc["near"], acc["micro_peak"], acc["accumulated_peak"]
    assert abs(acc_peak - micro_peak) <= near * micro_peak, acc
    if acc["large_peak"] is None:
        assert acc["large_error_type"] == "ResourceExhaustedError", acc
        assert acc["large_error"].startswith(batching.OOM_TEXTS), acc
    else:
        assert acc["large_error_type"] is None and acc_peak < acc["large_peak"], acc
    if acc["capacity"]:
        assert acc_peak <= acc["capacity"], acc
    for line in batching.accumulation_memory_lines(target, micro, k, micro_peak, acc_peak, acc["large_peak"],
                                                   acc["large_error"], acc["capacity"], acc["where"], near=near,
                                                   weights=acc["weights"]):
        assert line in text, line
    # The same updates: same start, Keras counting updates and micro-steps, the tolerance's formula, the verdict
    # following the rule, and the page saying it.
    eq = r["accumulation_equivalence"]
    assert eq["same_start"] is True and eq["tf32"].startswith("TF32 off"), eq
    assert eq["micro"] * eq["steps"] == eq["batch"] <= sizes[-1] and eq["steps"] >= 2, eq
    assert eq["iterations"] == eq["updates"] >= 2 and eq["micro_steps"] == eq["updates"] * eq["steps"], eq
    assert len(eq["loss_large"]) == len(eq["loss_accumulated"]) == eq["updates"], eq
    assert eq["terms"] == eq["batch"] * 26 * 26, eq  # conv1's kernel gradient: samples x output positions
    # the formula, printed (and compared) to two significant digits; TF32's rounding added where it may apply
    assert math.isclose(eq["tolerance"], equivalence_tolerance(r), rel_tol=0.05), (eq, equivalence_tolerance(r))
    assert eq["same_updates"] is (eq["weight_drift"] <= eq["tolerance"] and eq["loss_gap"] <= eq["tolerance"]), eq
    line = batching.equivalence_line(eq["batch"], eq["micro"], eq["steps"], eq["updates"], eq["weight_drift"],
                                     eq["loss_gap"], eq["tolerance"], eq["reorder_drift"],
                                     rounding="TF32" if eq["tf32_convs"] else "float32")
    assert line in text, line
    # Time: measured, and read by the page's rule.
    t = r["accumulation_time"]
    assert t["s_per_update_large"] > 0 and t["s_per_update_accumulated"] > 0 and t["timed"] == eq["updates"] - 1, t
    assert t["slowest"] >= 1, t  # the slowest timed update over its run's median, quoted beside the medians
    line = batching.accumulation_time_line(eq["batch"], eq["micro"], eq["steps"], t["s_per_update_large"],
                                           t["s_per_update_accumulated"], t["timed"], slower=t["slower"],
                                           slowest=t["slowest"])
    assert line in text, line


def tf32_convs(r) -> bool:
    """Whether a convolution of the comparison may still run as TF32: a GPU of compute capability 8.0 or later."""
    cc = r["accumulation_equivalence"].get("compute_capability")
    return bool(r["gpu_count"]) and bool(cc) and tuple(cc) >= (8, 0)


def equivalence_tolerance(r) -> float:
    """The page's rule: updates x (sqrt(terms) x 2**-24, plus 2 x 2**-10 where TF32 may still round a convolution)."""
    eq = r["accumulation_equivalence"]
    assert eq["tf32_convs"] is tf32_convs(r), ("tf32_convs does not follow the compute capability", eq)
    return eq["updates"] * (math.sqrt(eq["terms"]) * 2.0**-24 + (2 * 2.0**-10 if eq["tf32_convs"] else 0.0))


def memory_skipped(r) -> bool:
    """Whether the GPU's memory children were skipped, for a reason the claims accept: GPU:0's compute mode refused a
    second process (helpers.children.REFUSING_MODES), or its CUDA did ("device_busy", the mode unknown to NVML). A
    GPU whose mode is "default" must measure. The CPU then measured instead, labelled as such."""
    skipped = r.get("memory_skipped")
    if not skipped:
        return False
    assert r["gpu_count"] >= 1, ("a memory measurement skipped without a GPU", skipped)
    assert skipped["reason"] in children.SKIP_REASONS, skipped
    assert skipped["compute_mode"] != "default", ("a GPU in the default compute mode must measure", skipped)
    assert skipped["reason"] in ("device_busy", skipped["compute_mode"]), skipped
    assert skipped["measured_on"] == "CPU" and r["memory_bytes"]["how"] == "BFC allocator, CPU, child process", r
    return True


def on_cpu(run):
    r = run.results
    text = run.outputs_text()
    sizes = sorted(_by_batch(r["samples_per_s"]))
    # No GPU: no measured wall, said plainly; the demo wall is a capped CPU allocator, labelled as such.
    assert r["max_batch"] is None and r["max_batch_reason"].startswith("no GPU"), r["max_batch_reason"]
    assert r["memory_bytes"]["how"] == "BFC allocator, CPU, child process"
    wall = r["wall"]
    assert wall["pretend_mib"] == 256 and wall["device"] == "the pretend 256 MiB CPU device", wall
    assert wall["out_of_memory"] is True and wall["error_type"] == "ResourceExhaustedError", wall
    assert wall["error"].startswith("OOM when allocating") and "bfc_cpu_allocator" in wall["error"], wall["error"]
    assert "does not mean a GPU: TensorFlow gives that name to the CPU's allocator" in text  # the name explained
    # The fixed part of the smallest batch's peak is split into parts that add up.
    assert f"At batch {sizes[0]} the peak was" in text and "scratch buffer asks for 20.21 MiB" in text, text
    # The bytes per sample of the sweep predict the wall within the doubling bracket.
    assert wall["max_batch"] <= wall["predicted_max_batch"] < wall["failed_at"], wall
    assert "between the last batch that fitted and the first that did not" in text
    # Where a T4 would stop: an estimate, labelled, far beyond the batches measured here.
    assert r["t4_estimate_max_batch"] > 10 * sizes[-1], r["t4_estimate_max_batch"]
    assert "Estimate, not a measurement: a Tesla T4" in text
    # Measured (see the docstring): the rule helped batch 512 with oneDNN on and in smoke mode, and every middle
    # size with oneDNN off, where batch 512 lost. So some size gains unless the budget left only the two ends.
    assert r["scaling_rule_helped_at"] or len(r["final_accuracy"]) == 2, r["final_accuracy"]
    # Accumulation (see the docstring): the uncapped child measured the large step above the pretend device, the
    # accumulated update below it, and the updates were the same within the float32 tolerance.
    acc = r["accumulation"]
    assert acc["large_peak"] > acc["capacity"] == 256 * 2**20 >= acc["accumulated_peak"], acc
    assert r["accumulation_equivalence"]["same_updates"] is True, r["accumulation_equivalence"]


def on_gpu(run):
    r = run.results
    sizes = sorted(_by_batch(r["samples_per_s"]))
    if memory_skipped(r):  # the CPU measured, with its pretend device; no wall of the GPU recorded
        assert r["max_batch"] is None and r["wall"]["pretend_mib"] == 256, (r["max_batch"], r["wall"])
        assert r["max_batch_reason"].startswith(f"GPU:0 in the {r['memory_skipped']['reason']} compute mode"), r
        return
    assert r["memory_bytes"]["how"] == "GPU allocator, GPU:0, child process"
    wall = r["wall"]
    assert wall["pretend_mib"] is None and wall["device"].startswith("this "), wall
    if wall["out_of_memory"]:  # the wall measured on the GPU itself, recorded as max_batch
        assert isinstance(r["max_batch"], int) and r["max_batch"] >= sizes[-1], r["max_batch"]
        assert r["max_batch"] == wall["max_batch"], (r["max_batch"], wall)
        assert "last batch before the error" in r["max_batch_reason"], r["max_batch_reason"]
        if wall["error"].startswith("OOM when allocating"):  # TensorFlow's own allocator, on the child's only GPU
            assert "/device:GPU:0" in wall["error"], wall["error"]
    else:  # a GPU with room for the last doubling: no wall, no max_batch, said so
        assert r["max_batch"] is None, r["max_batch"]
        assert f"no out-of-memory error up to batch {wall['max_batch']}" in r["max_batch_reason"], r["max_batch_reason"]
