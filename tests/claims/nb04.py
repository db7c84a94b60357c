"""Claims of notebook 04 · Input pipelines and preprocessing on the GPU, checked on its recorded results.

Every timing claim is a ratio or an order within one run, never an absolute figure.
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

from claims import common

LEVELS = ("input-bound", "moderately input-bound", "not input-bound")


def _level(share: float, thresholds) -> str:
    """The notebook's rule, written again: at least thresholds[1] input-bound, at least thresholds[0] moderately."""
    low, high = thresholds
    return "input-bound" if share >= high else "moderately input-bound" if share >= low else "not input-bound"

VARIANTS = ("naive", "naive_default", "parallel", "cached", "prefetched", "tuned", "in_model", "in_map")


def check(run) -> None:
    common.dispatch(run, __name__)


def shared(run) -> None:
    r = run.results
    common.require(r, ("gpu_count", "images_per_s", "input_bound_fraction", "trace_dir", "profiler_verdicts",
                "three_timings_s", "wait_share", "placement_rounds_s", "augmentation_check", "exercises_solved",
                "wait_range", "wait_thresholds", "step_spread", "flips_repeated", "tensorboard", "gpu_trace_events"))

    # Throughput of every variant was measured, and the tuned pipeline beats the naive one clearly.
    ips = r["images_per_s"]
    for variant in VARIANTS:
        value = ips.get(variant)
        assert value is not None and math.isfinite(value) and value > 0, f"images_per_s[{variant!r}] = {value!r}"
    assert ips["tuned"] > 1.5 * ips["naive"], f"tuned {ips['tuned']:.0f} not clearly above naive {ips['naive']:.0f}"
    # Cache removes the per-file read from the second epoch on: it beats the naive pipeline too.
    assert ips["cached"] > ips["naive"], f"cached {ips['cached']:.0f} <= naive {ips['naive']:.0f} images/s"

    # One definition: each reading's label is the wait share's, by the thresholds on the page, or "cannot tell"
    # when the share's range (timings moved by half their IQRs) crosses a threshold. Never a label from
    # "input alone > model alone", which called a pipeline that waited 51% of its step compute-bound.
    text = run.outputs_text()
    th = tuple(r["wait_thresholds"])
    assert th == (0.05, 0.20), th  # xprof's kModeratelyInfeedBoundThresholdInPercent and kHighly...
    assert "compute-bound" not in "\n".join(ln for ln in text.splitlines() if ln.startswith("The naive pipeline is "))
    for name in ("naive", "tuned"):
        line = next((ln for ln in text.splitlines() if ln.startswith(f"The {name} pipeline is ")), "")
        low, high = r["wait_range"][name]
        assert low <= r["wait_share"][name] <= high, (name, r["wait_share"], r["wait_range"])
        if _level(low, th) == _level(high, th):
            assert line.startswith(f"The {name} pipeline is {_level(r['wait_share'][name], th)}: "), line
        else:
            assert "this run cannot tell which" in line, line
        assert "input-bound when it waits for input 20% of its time or more" in line, line
    # The naive pipeline waits for its whole input: input-bound on any machine where reading a batch takes over a
    # quarter of the model's step (it waits input / (input + model) of it).
    assert r["wait_share"]["naive"] >= 0.20, r["wait_share"]
    # Every reading of three timings says whether the two sides overlapped (or why it cannot tell).
    verdicts = ("one after the other", "overlapped", "cannot be told here", "load on this machine changed",
                "still added up")
    for name in ("naive", "tuned"):
        line = next((ln for ln in text.splitlines() if ln.startswith(f"The {name} pipeline is ")), "")
        assert line and any(v in line for v in verdicts), f"no overlap verdict in the {name} reading: {line!r}"
        timings = r["three_timings_s"][name]
        assert all(timings[k] > 0 for k in ("input", "model", "step")), timings
    # The tuned pipeline, with prefetch, waits for input a smaller share of its step than the naive one.
    wait = r["wait_share"]
    assert 0 <= wait["tuned"] < wait["naive"] <= 1, f"wait shares from the three timings: {wait}"

    # The profiler trace: the tuned pipeline waits for input a smaller share of its step than the naive one.
    share = r["input_bound_fraction"]
    assert set(share) >= {"naive", "tuned"}, f"input_bound_fraction lacks a pipeline: {share}"
    assert all(0 <= v <= 1 for v in share.values()), share
    assert share["tuned"] < share["naive"], f"tuned waits {share['tuned']:.0%}, naive {share['naive']:.0%}"
    assert share["naive"] >= 0.5, f"the naive pipeline should be clearly input-bound in the trace: {share['naive']:.0%}"
    assert "input-bound because" in r["profiler_verdicts"]["naive"]["conclusion"]
    assert "HIGHLY input-bound" in run.outputs_text(), "the naive trace's verdict is not on the page"
    assert "of a tuned step spent waiting for input; the three timings gave" in run.outputs_text()
    # agree/disagree by the same rule as the three timings
    verdict = next(ln for ln in text.splitlines() if ln.startswith("The profiler finds"))
    same = all(_level(share[k], th) == _level(lo, th) == _level(hi, th)
               for k, (lo, hi) in r["wait_range"].items())
    assert ("The two ways of measuring agree." in verdict) == same, verdict
    for k in ("naive", "tuned"):
        assert f"call the {k} pipeline" in verdict or f"on the {k} pipeline" in verdict \
            or f"For the {k} pipeline the timings cannot tell" in verdict, verdict

    # A seeded map with no shuffle replays each epoch's flips; a shuffle pairs the draws with other images.
    flips = r["flips_repeated"]
    assert flips["map, no shuffle"] == 16, flips
    assert flips["shuffle, then map"] < 16 and flips["map, then repeat(2)"] < 16, flips
    assert re.search(r"map, no shuffle +epoch 2 repeated epoch 1's flip on 16 of 16 images", text), "no replay line"

    # Variants: "faster" only beyond the spread; every variant's spread was recorded.
    assert set(r["step_spread"]) >= set(VARIANTS) - {"in_model", "in_map"}, r["step_spread"]
    assert "median ± IQR/2" in text

    # Traces live under the notebook's scratch folder only.
    trace_dir = Path(r["trace_dir"])
    assert trace_dir.parts[-2:] == ("04_input_pipelines", "traces"), trace_dir
    if getattr(run, "workdir", None) is not None:
        assert trace_dir.resolve().is_relative_to((Path(run.workdir) / "scratch").resolve()), trace_dir
        assert list(trace_dir.glob("*/plugins/profile/*/*.xplane.pb")), f"no .xplane.pb under {trace_dir}"
    inline_tensorboard(run)

    # Preprocessing placement: both measured in every round, and the reading says which way it went.
    rounds = r["placement_rounds_s"]
    assert len(rounds["in_model"]) == len(rounds["in_map"]) >= 2, rounds
    assert "not separable" in text or "was faster in every round" in text

    # tensorflow/tensorflow#56242: no per-image while_loop fallback on this version.
    aug = r["augmentation_check"]
    assert aug["while_loop_warnings"] == 0, f"augmentation layers fell back to a while_loop: {aug}"
    assert aug["batch_s"] > 0 and aug["per_image_s"] > 0

    at_scale(run)

    assert r["exercises_solved"] is True
    assert run.stderr_text() == "", f"stderr on the learner's page:\n{run.stderr_text()[:2000]}"
    assert "Traceback" not in run.outputs_text()


def inline_tensorboard(run) -> None:
    """The inline TensorBoard listened on 127.0.0.1 only, and the notebook's stop cell left no server running.

    Holds on any hardware: the server serves files; where it runs does not depend on the device. In a real
    run (a workdir), every pid it started must be gone from the process table by the time the claims run.
    """
    tb = run.results["tensorboard"]
    assert len(tb["pids"]) == 1 and 1024 <= tb["port"] <= 65535, f"one TensorBoard on this kernel's port: {tb}"
    assert tb["listening"] and all(a == f"127.0.0.1:{tb['port']}" for a in tb["listening"]), tb["listening"]
    assert sorted(tb["stopped"]) == sorted(tb["pids"]), f"the stop cell did not stop what the kernel started: {tb}"
    assert tb["start_s"] > 0, tb
    text = run.outputs_text()
    assert f"listens on 127.0.0.1:{tb['port']} only." in text and f"Stopped TensorBoard, pid {tb['pids'][0]}." in text
    assert "--bind_all" not in text and "0.0.0.0" not in text
    for name, v in run.results["profiler_verdicts"].items():  # the page points at the figures it printed
        assert (f"Profile tab, run {name}, tool input_pipeline_analyzer: step {v['step_ms']:.1f} ms, "
                f"waiting for input {v['input_ms']:.1f} ms") in text, name
    if getattr(run, "workdir", None) is not None:
        import psutil

        def still_there(pid: int) -> bool:  # a zombie counts; a pid reused by another program does not
            try:
                return "tensorboard" in " ".join(psutil.Process(pid).cmdline())
            except psutil.ZombieProcess:
                return True
            except psutil.NoSuchProcess:
                return False

        left = [pid for pid in tb["pids"] if still_there(pid)]
        assert not left, f"TensorBoard still running after the notebook ended: pid {left}"


MIN_ROUNDS = 5  # the notebook's MIN_ROUNDS: "faster" only after winning every one of at least this many rounds


def _said_faster(text: str, first: str, rounds: dict) -> bool:
    """Whether the reading that starts with `first` called one side faster; asserts it applied the page's rule."""
    line = next((ln for ln in text.splitlines() if ln.startswith(f"{first}: ")), "")
    assert line, f"no reading of {first!r} on the page"
    a, b = rounds.values()
    won = (all(x < y for x, y in zip(a, b, strict=True)), all(y < x for x, y in zip(a, b, strict=True)))
    by_rule = len(a) >= MIN_ROUNDS and any(won)  # round by round, as the sentence states
    said = "was faster in every round" in line
    assert said == by_rule, line
    return said


def at_scale(run) -> None:
    """tf.data at scale: shards read back whole, interleave and map order timed, a timeline, the host threads.

    Why each holds on a CPU run and on a GPU run alike: all of it runs on the host. The shards are
    written and read by tf.data on the CPU, so the count and the order-free checksum match on any
    machine. The simulated storage wait is a sleep of 50 ms per file: a sequential reader pays one per
    shard in turn, a parallel one (a thread per shard) pays them together, so it wins by more than
    1.25x on any CPU that is not swamped (the CPU work of reading, the same for both, is a few ms per
    shard here; a heavily loaded machine inflates it, which is why the bound is loose). A map applied
    per element is never called faster than the same map on whole batches: it calls the same ops once
    per image. The naive
    timeline has no prefetch, so its input stages run inside the step's wait and never during
    training; the tuned one prefetches, so the next batch is made while the model trains (on a GPU
    too: the step ends when `.numpy()` has the loss). The overlap is part of the input stages' busy
    time, so it never exceeds it (`input_share`), on any device. The trace's host threads always include
    tf.data's pool and the inter-op pool `tf_Compute`.
    """
    r = run.results
    common.require(r, ("shards", "interleave_rounds_s", "vectorised_rounds_s", "timeline", "host_threads"))
    text = run.outputs_text()
    shards = r["shards"]
    assert shards["checksum_match"] is True and shards["records"] == shards["written"] > 0, shards
    assert shards["files"] >= 2 and "the same records, each one once." in text

    rounds = r["interleave_rounds_s"]
    for where in ("local files", "50 ms per file"):
        pair = {k: rounds[f"{k}, {where}"] for k in ("sequential", "parallel")}
        _said_faster(text, f"sequential, {where}", pair)
    slow, fast = (statistics.median(rounds[f"{k}, 50 ms per file"]) for k in ("sequential", "parallel"))
    assert slow > 1.25 * fast, f"parallel interleave did not overlap the waits: {slow:.3f} s vs {fast:.3f} s"

    orders = r["vectorised_rounds_s"]
    _said_faster(text, "map, then batch", orders)
    assert "map, then batch was faster in every round" not in text, "a per-element map called faster than a batched one"

    timeline = r["timeline"]
    naive, tuned = timeline["naive"], timeline["tuned"]
    assert naive["steps"] == tuned["steps"] >= 2, timeline
    assert naive["overlap_share"] == 0, f"the naive pipeline cannot prepare input while it trains: {naive}"
    assert tuned["overlap_share"] > 0, f"prefetch should make the next batch during training: {tuned}"
    assert 0 < naive["train_share"] < tuned["train_share"] <= 1, timeline
    for name, figures in timeline.items():
        assert figures["overlap_share"] <= figures["input_share"] + 1e-6, f"overlap beyond the input's busy: {name}"
        cost = r"(?:\d+% longer than|at most 10% longer than)"  # the page's SLOWER rule, both ways
        assert re.search(rf"^{name}: \d+ steps in [\d,]+ ms, [\d.]+ ms a step, {cost}", text, re.M), name
    assert re.search(r"; the model trained \d+% of that time, and an input stage ran during \d+% of its training "
                     r"time, of at most \d+% \(the input stages' busy time", text)

    pools = r["host_threads"]
    assert "tf_Compute" in pools and any(name.startswith("tf_data") for name in pools), pools
    assert all(p["threads"] >= 1 and p["busy_ms"] >= 0 for p in pools.values()), pools


NO_GPU_SIDE = ("The trace has no GPU side", "The trace's GPU side may be incomplete")  # gpu_trace_note's openings


def on_cpu(run) -> None:
    r = run.results
    assert r["gpu_count"] == 0
    text = run.outputs_text()
    # No GPU: the trace has no GPU plane, and there is no GPU side to miss.
    assert r["gpu_trace_events"] in (0, None) and not any(s in text for s in NO_GPU_SIDE), r["gpu_trace_events"]
    assert "Without a GPU both placements run on the same CPU cores" in text
    assert "on the CPU, which also runs the pipeline" in text
    assert "measured on this CPU" in text and "measured on this GPU" not in text
    assert "No GPU here: no kernel launch waits for a core" in text


def on_gpu(run) -> None:
    r = run.results
    assert r["gpu_count"] >= 1
    text = run.outputs_text()
    assert "Here the model runs on the GPU" in text
    assert "the GPU waited for input" in text
    assert "measured on this GPU" in text and "on the CPU, which also runs the pipeline" not in text
    assert "On this GPU, kernel launches share tf_Compute unless TF_GPU_THREAD_MODE=gpu_private" in text
    assert "No GPU here" not in text
    # The trace's GPU side: recorded (kernels and copies on /device:GPU:0), or one sentence with what to do
    # (helpers.pipelines.gpu_trace_note: CUPTI refused this user, or another profiler holds it).
    events = r["gpu_trace_events"]
    said = [ln for ln in text.splitlines() if ln.startswith(NO_GPU_SIDE)]
    if events == 0:
        assert len(said) == 1 and "CPU side" in said[0], f"a trace without GPU events and no sentence: {said}"
    else:
        assert events is None or events > 0, events
        assert not said or said[0].startswith(NO_GPU_SIDE[1]), said
