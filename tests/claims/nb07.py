"""Claims of notebook 07 · Multi-GPU with MirroredStrategy, checked on its recorded results.

Timings are compared within one run (ratios), never as absolute figures.
"""

from __future__ import annotations

import math
import re

from claims import common

KEYS = ("gpu_count", "devices", "devices_available", "fresh_split", "fit", "no_build_error", "final_loss", "loss_gap",
        "replicas", "replicas_asked", "per_replica_batch", "global_batch", "samples_per_s", "scaling_efficiency",
        "all_reduce_ms", "exercises_solved")


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
    assert abs(float(ring[4]) - 2 * (n - 1) / n * float(ring[3])) <= 0.01, ring[0]

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

    # fit reports an epoch's mean loss; the custom loop prints its last step's and its last epoch's mean.
    assert "averaged over the last epoch (what fit reports): loss" in text
    assert text.count("averaged over the last epoch (as fit reports it)") == 3
    assert "final loss" not in text

    assert r["exercises_solved"] is True
    assert run.stderr_text() == "", f"stderr on the learner's page:\n{run.stderr_text()[:2000]}"
    assert "Traceback" not in text and "INFO:tensorflow" not in text


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


def on_gpu(run) -> None:
    r = run.results
    assert r["gpu_count"] >= 1
    text = run.outputs_text()
    n = r["replicas"]
    assert "measured on this GPU" in text or f"measured on these {n} GPUs" in text
    assert 0 < r["scaling_efficiency"] < 1.5, r["scaling_efficiency"]
    if n > r["gpu_count"]:
        assert f"logical GPUs split from {r['gpu_count']} physical GPU" in text
    elif n > 1:
        assert "has its own GPU" in text
