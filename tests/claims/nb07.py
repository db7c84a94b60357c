"""Claims of notebook 07 · Multi-GPU with MirroredStrategy, checked on its recorded results.

Timings are compared within one run (ratios), never as absolute figures.
"""

from __future__ import annotations

import math
import re

from claims import common

KEYS = ("gpu_count", "devices", "devices_available", "fresh_split", "fit", "no_build_error", "final_loss", "loss_gap",
        "replicas", "replicas_asked", "per_replica_batch", "global_batch", "samples_per_s", "scaling_efficiency",
        "all_reduce_ms", "all_reduce_sizes", "all_reduce_two_ways", "cross_device_ops", "regularization",
        "input_shapes", "saved", "exercises_solved")
MATCHES_WITHIN = 2.0  # the page's rule: measured - fixed cost within 2x of the bytes term matches it
COMPARABLE = 1.0  # the page's rule: the bytes are tested only where their term is at least 1x the fixed cost
EXAMPLES = 1000  # the made-up dataset of section "Input pipelines per replica"


def check(run) -> None:
    common.dispatch(run, __name__)


def _short(device: str) -> str:
    return device.rsplit("device:", 1)[-1].upper()


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def shared(run) -> None:
    r = run.results
    common.require(r, KEYS)
    text = run.outputs_text()

    # The run trained on N_REPLICAS replicas (a fresh kernel can always make them), and the batches add up.
    n = r["replicas"]
    assert n == r["replicas_asked"] >= 1, f"asked for {r['replicas_asked']} replicas, trained on {n}"
    assert len(r["devices"]) == n, r["devices"]
    assert r["global_batch"] == r["per_replica_batch"] * n, (r["global_batch"], r["per_replica_batch"], n)
    assert len(r["devices"]) == min(r["replicas_asked"], r["devices_available"]), (r["devices"], r["devices_available"])
    # MirroredStrategy(devices): model.fit trains on exactly this run's devices, not every GPU of the machine.
    assert r["fit"]["replicas"] == n, r["fit"]
    assert [_short(d) for d in r["fit"]["devices"]] == [_short(d) for d in r["devices"]], (r["fit"], r["devices"])
    if r["devices_available"] > n:
        assert f"the replicas use the first {n}" in text, "the page says how many devices exist and how many are used"
    assert all(_finite(v) for v in r["fit"]["loss"]), r["fit"]

    # The fresh Python split its device into N logical ones, and refused the same call after initialisation.
    split = r["fresh_split"]
    assert len(split["logical"]) == r["replicas_asked"], split
    assert split["again"].startswith("RuntimeError"), split

    # Same global batch, same start, same data: 1 replica and N replicas compute the same losses.
    loss = r["final_loss"]
    assert _finite(loss["1"]) and _finite(loss["N"]), loss
    assert loss["N"] < math.log(10), f"the N-replica run did not learn (chance level is ln 10): {loss}"
    assert r["loss_gap"] <= 0.02 * max(1.0, loss["1"]), f"1 and N replicas diverged: gap {r['loss_gap']}"

    # Throughput recorded for every run; the efficiency is (samples/s of N / samples/s of 1) / N.
    sps = r["samples_per_s"]
    for key in ("1", "N", "1_same_global"):
        assert _finite(sps.get(key)) and sps[key] > 0, f"samples_per_s[{key!r}] = {sps.get(key)!r}"
    assert math.isclose(r["scaling_efficiency"], sps["N"] / sps["1"] / n, rel_tol=1e-9), r["scaling_efficiency"]
    assert _finite(r["all_reduce_ms"]) and r["all_reduce_ms"] > 0

    # Published multi-GPU scaling is quoted with its source, beside the learner's own figures.
    assert "measured by NVIDIA" in text and "7.70x on 8x A100" in text and "15.05x on 16x V100" in text
    assert "DeepLearningExamples" in text
    assert "scaling efficiency of" in text and "samples/s" in text
    # The readings state their rules beside the numbers; the ring's traffic is 2(n-1)/n times the gradients.
    assert "rates within 5% of each other count as about as fast" in text
    ring = re.search(r"In a ring each device sends 2 x \((\d+) - 1\) / (\d+) x ([\d.]+) MB = ([\d.]+) MB", text)
    assert ring, "the page prints what a ring all-reduce sends for this run's N"
    assert int(ring[1]) == int(ring[2]) == n, ring[0]
    # both figures are printed to 0.01 MB: the size's rounding, times a factor below 2, plus the result's
    assert abs(float(ring[4]) - 2 * (n - 1) / n * float(ring[3])) <= 0.015 + 1e-9, ring[0]

    # On a split device the expectation is this run's own: one device on the global batch against the
    # per-replica batch (FILLED_IDLE on the page decides whether that gain or 1x is the best to expect).
    if n >= 2 and (r["gpu_count"] == 0 or n > r["gpu_count"]):
        gain = round(sps["1_same_global"] / sps["1"], 2)
        assert f"measured at {gain:.2f}x the rate of one device on the per-replica batch" in text, gain
        rule = re.search(r"That is (not )?above ([\d.]+)x, the rule here for a per-replica batch that leaves part "
                         r"of the hardware idle: the best to expect is a speed-up of about ([\d.]+)x", text)
        assert rule, "the scaling reading states its FILLED_IDLE rule beside the run's batch gain"
        idle = gain > float(rule[2])
        assert (rule[1] is None) == idle, (rule[0], gain)
        best = gain if idle else 1.0
        assert math.isclose(float(rule[3]), best, abs_tol=0.005), (rule[0], gain)
        shown = round(sps["N"] / sps["1"], 2)
        assert (f"The gap to {best:.2f}x is overhead" in text) == (shown < best), (shown, best)

    all_reduce_claims(run)
    regularization_claims(run)
    input_claims(run)
    saved_claims(run)

    # fit reports an epoch's mean loss; the custom loop prints its last step's and its last epoch's mean.
    assert "averaged over the last epoch (what fit reports): loss" in text
    assert text.count("averaged over the last epoch (as fit reports it)") == 3
    assert "final loss" not in text

    assert r["exercises_solved"] is True
    assert run.stderr_text() == "", f"stderr on the learner's page:\n{run.stderr_text()[:2000]}"
    assert "Traceback" not in text and "INFO:tensorflow" not in text


def all_reduce_claims(run) -> None:
    """The bytes term is the page's formula on the recorded figures, and each printed line follows the page's rules.

    Holds on any hardware (the CPU run and the GPU-shaped fixture alike): it checks arithmetic and wording against
    the figures the same run measured, never a speed. The fixed cost is one collective, as the packed gradients are;
    a size whose bytes term is below the fixed cost is never called a match or a miss; the two timings of the same
    all-reduce are read by whether their fastest-slowest ranges overlap; the default choice reuses the measurement.
    """
    r, text = run.results, run.outputs_text()
    n, sizes = r["replicas"], r["all_reduce_sizes"]
    fixed_label, tensors = sizes["fixed_label"], sizes["tensors"]
    model, big = sizes["bytes"]["the model's gradients"], sizes["bytes"]["16x the gradients"]
    assert sizes["bytes"][fixed_label] == 4 and tensors >= 1 and big == 16 * model, sizes["bytes"]
    fixed = sizes["seconds"][fixed_label]
    for label, predicted in sizes["predicted_seconds"].items():
        nbytes = sizes["bytes"][label]
        moved = 2 * (n - 1) / n * nbytes * (n if sizes["shared"] else 1)
        assert math.isclose(predicted, fixed + moved / (nbytes / sizes["copy_seconds"][label]), rel_tol=1e-9), label
        m, f, b = (round(v * 1e3, 3) for v in (sizes["seconds"][label], fixed, predicted - fixed))
        line = next((line for line in text.splitlines() if line.startswith(f"{label}: measured {m:.3f} ms")), None)
        assert line, f"the page reads the all-reduce of {label} against its bytes term"
        assert f"predicts {b:.3f} ms" in line, (line, b)
        if b < COMPARABLE * f or b == 0:
            assert "does not test the ring's arithmetic" in line and "matches" not in line, line
            continue
        extra = round(m - f, 3)
        if extra <= 0:
            assert "does not match" in line, line
            continue
        ratio = round(extra / b, 2)
        verdict = "slower" if ratio > MATCHES_WITHIN else "faster" if ratio * MATCHES_WITHIN < 1 else "matches"
        assert f"ratio {ratio:.2f}: {verdict}" in line, (line, ratio, verdict)
    assert "(the rule: the bytes are tested only where their term is at least 1x the fixed cost)" in text \
        or "within 2x either way" in text
    two = r["all_reduce_two_ways"]
    (lo1, med1, hi1), (lo2, med2, hi2) = two["replica_all_reduce_ms"], two["batch_reduce_to_ms"]
    assert lo1 <= med1 <= hi1 and lo2 <= med2 <= hi2, two
    assert math.isclose(med1, r["all_reduce_ms"]), (med1, r["all_reduce_ms"])
    assert math.isclose(med2, 1e3 * sizes["seconds"]["the model's gradients"]), med2
    assert two["overlap"] == (max(lo1, lo2) <= min(hi1, hi2)), two
    assert ("the ranges overlap, so" if two["overlap"] else "the ranges do not overlap, so") in text
    choices = r["cross_device_ops"]
    assert set(choices) == {"default (CollectiveAllReduce)", "HierarchicalCopyAllReduce", "ReductionToOneDevice",
                            "NcclAllReduce"}, choices
    assert choices["default (CollectiveAllReduce)"] == sizes["seconds"]["the model's gradients"], "reused, not retimed"
    for name in ("default (CollectiveAllReduce)", "ReductionToOneDevice"):
        assert _finite(choices[name]) and choices[name] > 0, (name, choices[name])
    for value in choices.values():  # an error is cut between words, never mid-word
        if isinstance(value, str) and value.startswith("failed:") and value.endswith(" ..."):
            assert len(value) <= 160, value
    assert "Fastest here: " in text and "(the rule here)" in text or "the only one that ran" in text
    fastest = re.search(r"Fastest here: .+? \((\d+\.\d+) ms\)", text)
    assert fastest is None or len(fastest[1].split(".")[1]) == 3, "times printed to 3 decimals, never '1 ms'"


def regularization_claims(run) -> None:
    """scale_regularization_loss matches one device; without it the penalty counts N times (any hardware)."""
    reg, n = run.results["regularization"], run.results["replicas"]
    assert reg["penalty"] > 0, reg
    assert abs(reg["scaled"] - reg["single"]) <= reg["tolerance"] * reg["single"], reg
    assert math.isclose(reg["unscaled"] - reg["single"], (n - 1) * reg["penalty"], rel_tol=1e-3, abs_tol=1e-5), reg
    text = run.outputs_text()
    assert "with tf.nn.scale_regularization_loss: " in text and "The rule: a relative gap of at most 1e-05" in text
    assert re.search(r"scale_regularization_loss: [\d.]+, matches", text), "the scaled loss is read as a match"
    if n > 1:
        assert re.search(r"Without it: [\d.]+, differs", text), "the unscaled loss is read as different"


def input_claims(run) -> None:
    """Every way of distributing 1,000 examples: N slices per step, the totals, the contexts (any hardware)."""
    shapes, n = run.results["input_shapes"], run.results["replicas"]
    per, g = run.results["per_replica_batch"], run.results["global_batch"]
    assert shapes, "the input script ran"
    for way in ("from_function", "from_function_per_replica", "global_batch", "drop_remainder"):
        steps = shapes[way]
        assert all(len(step) == n for step in steps), (way, steps[-1])
        assert all(step == [per] * n for step in steps[:-1]), way
        total = sum(map(sum, steps))
        assert total == (EXAMPLES // g * g if way == "drop_remainder" else EXAMPLES), (way, total)
    assert shapes["contexts"][0] == [0, 1, per], shapes["contexts"]
    assert shapes["contexts"][1:] == [[i, n, per] for i in range(n)], shapes["contexts"]
    if EXAMPLES % g:
        assert shapes["from_function"][-1] != [per] * n and shapes["global_batch"][-1] != [per] * n


def saved_claims(run) -> None:
    """Save, load, callbacks: what each wrote, the resumed epochs, the schedule, the same predictions."""
    saved, n = run.results["saved"], run.results["replicas"]
    assert saved["variables"]["without scope"] != "MirroredVariable", saved["variables"]
    if n > 1:
        assert saved["variables"]["in strategy.scope()"] == "MirroredVariable", saved["variables"]
    assert saved["predict_gap"] <= 1e-5, saved["predict_gap"]
    assert 0 < saved["evaluate"][0] < math.log(10) and 0.1 < saved["evaluate"][1] <= 1, saved["evaluate"]
    assert {"epoch_1.keras", "epoch_2.keras"} <= set(saved["written"]), saved["written"]
    assert any(name.startswith("backup/") for name in saved["written"]), "BackupAndRestore wrote its backup"
    assert saved["resumed_epochs"] == 2 and saved["learning_rates"] == [2.5e-4, 1.25e-4], saved
    assert {f"epoch_{i}.keras" for i in range(1, 5)} <= set(saved["after"]), saved["after"]
    assert not any(name.startswith("backup/") for name in saved["after"]), "the backup is deleted after fit"


def on_cpu(run) -> None:
    r = run.results
    assert r["gpu_count"] == 0
    text = run.outputs_text()
    n = r["replicas"]
    assert "measured on this CPU" in text
    assert f"{n} replica{'s' if n > 1 else ''} on {n} logical CPU" in text
    assert "All-reduce: CollectiveAllReduce (RING)" in text
    if n >= 2:
        # Logical CPUs share the same cores: extra replicas add overhead, not compute.
        assert "they add no arithmetic units" in text
        sps = r["samples_per_s"]
        assert r["scaling_efficiency"] < 1.0, f"logical CPUs cannot scale: efficiency {r['scaling_efficiency']:.2f}"
        assert sps["N"] < 1.1 * sps["1_same_global"], f"same global batch, N replicas not slower: {sps}"
        # Measured on TF 2.21 / Keras 3.15.1: a custom loop without optimizer.build fails with 2+ replicas.
        assert "You must feed a value for placeholder tensor" in r["no_build_error"], r["no_build_error"]
        assert r["loss_gap"] < 1e-4, f"on the CPU the two runs match to rounding: gap {r['loss_gap']}"
    # NCCL has GPU kernels only (tensorflow/python/distribute/cross_device_ops.py); on logical CPUs it fails.
    assert r["cross_device_ops"]["NcclAllReduce"].startswith("failed: InvalidArgumentError: No OpKernel was "
                                                             "registered to support Op 'NcclAllReduce'")
    # Hierarchical copy sums two groups of N // 2 devices (cross_device_utils.py): with an odd N one replica is
    # left out, and time_all_reduce's check of the sum refuses it.
    hierarchical = r["cross_device_ops"]["HierarchicalCopyAllReduce"]
    if n % 2:
        assert hierarchical == f"failed: ValueError: wrong sum: {n - 1} from {n} replicas that each handed in 1", \
            hierarchical
    else:
        assert _finite(hierarchical), hierarchical
    assert r["all_reduce_sizes"]["shared"] is True


def on_gpu(run) -> None:
    r = run.results
    assert r["gpu_count"] >= 1
    text = run.outputs_text()
    n = r["replicas"]
    assert "measured on this GPU" in text or f"measured on these {n} GPUs" in text
    assert 0 < r["scaling_efficiency"] < 1.5, r["scaling_efficiency"]
    nccl = r["cross_device_ops"]["NcclAllReduce"]
    if n > r["gpu_count"]:
        assert f"logical GPUs split from {r['gpu_count']} physical GPU" in text
        assert nccl == "not run: logical GPUs of one card (NCCL refuses two ranks on one GPU)", nccl
        assert r["all_reduce_sizes"]["shared"] is True
    elif n > 1:
        assert "has its own GPU" in text
        assert _finite(nccl) and nccl > 0, f"NCCL runs where every replica has its own GPU: {nccl}"
        assert r["all_reduce_sizes"]["shared"] is False
