"""Claims of notebook 04 · Input pipelines and preprocessing on the GPU, checked on its recorded results.

Every timing claim is a ratio or an order within one run, never an absolute figure.
"""

from __future__ import annotations

import math
from pathlib import Path

from claims import common

VARIANTS = ("naive", "naive_default", "parallel", "cached", "prefetched", "tuned", "in_model", "in_map")


def check(run) -> None:
    common.dispatch(run, __name__)


def shared(run) -> None:
    r = run.results
    common.require(r, ("gpu_count", "images_per_s", "input_bound_fraction", "trace_dir", "profiler_verdicts",
                "three_timings_s", "wait_share", "placement_rounds_s", "augmentation_check", "exercises_solved"))

    # Throughput of every variant was measured, and the tuned pipeline beats the naive one clearly.
    ips = r["images_per_s"]
    for variant in VARIANTS:
        value = ips.get(variant)
        assert value is not None and math.isfinite(value) and value > 0, f"images_per_s[{variant!r}] = {value!r}"
    assert ips["tuned"] > 1.5 * ips["naive"], f"tuned {ips['tuned']:.0f} not clearly above naive {ips['naive']:.0f}"
    # Cache removes the per-file read from the second epoch on: it beats the naive pipeline too.
    assert ips["cached"] > ips["naive"], f"cached {ips['cached']:.0f} <= naive {ips['naive']:.0f} images/s"

    # Three timings: the naive pipeline is input-bound (its input alone takes longer than the model alone).
    naive = r["three_timings_s"]["naive"]
    assert naive["input"] > naive["model"] > 0, f"naive pipeline not input-bound: {naive}"
    text = run.outputs_text()
    assert "The naive pipeline is input-bound" in text
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

    # Traces live under the notebook's scratch folder only.
    trace_dir = Path(r["trace_dir"])
    assert trace_dir.parts[-2:] == ("04_input_pipelines", "traces"), trace_dir
    if getattr(run, "workdir", None) is not None:
        assert trace_dir.resolve().is_relative_to((Path(run.workdir) / "scratch").resolve()), trace_dir
        assert list(trace_dir.glob("*/plugins/profile/*/*.xplane.pb")), f"no .xplane.pb under {trace_dir}"
    assert "--host 127.0.0.1" in run.outputs_text() and "--bind_all" not in run.outputs_text()

    # Preprocessing placement: both measured in every round, and the reading says which way it went.
    rounds = r["placement_rounds_s"]
    assert len(rounds["in_model"]) == len(rounds["in_map"]) >= 2, rounds
    assert "not separable" in text or "was faster in every round" in text

    # tensorflow/tensorflow#56242: no per-image while_loop fallback on this version.
    aug = r["augmentation_check"]
    assert aug["while_loop_warnings"] == 0, f"augmentation layers fell back to a while_loop: {aug}"
    assert aug["batch_s"] > 0 and aug["per_image_s"] > 0

    assert r["exercises_solved"] is True
    assert run.stderr_text() == "", f"stderr on the learner's page:\n{run.stderr_text()[:2000]}"
    assert "Traceback" not in run.outputs_text()


def on_cpu(run) -> None:
    r = run.results
    assert r["gpu_count"] == 0
    text = run.outputs_text()
    assert "Without a GPU both placements run on the same CPU cores" in text
    assert "on the CPU, which also runs the pipeline" in text
    assert "measured on this CPU" in text and "measured on this GPU" not in text


def on_gpu(run) -> None:
    r = run.results
    assert r["gpu_count"] >= 1
    text = run.outputs_text()
    assert "Here the model runs on the GPU" in text
    assert "so the GPU waited" in text
    assert "measured on this GPU" in text and "on the CPU, which also runs the pipeline" not in text
