"""helpers.pipelines: notebook 04's limits, alternating timing, warning capture and readings (CPU and GPU wording)."""

import json
import logging
import os
import warnings
from pathlib import Path

import pytest

from helpers import pipelines


def test_batch_size_rule_names_the_parameter_and_the_range():
    assert pipelines.check_batch_size(16) == 16
    assert pipelines.check_batch_size(500) == 500
    for bad in (8, 501, 128.0, True, "128", None):
        with pytest.raises(ValueError, match=r"BATCH_SIZE=.* use an integer from 16 to 500"):
            pipelines.check_batch_size(bad)
    with pytest.raises(ValueError, match="from 16 to 1000"):
        pipelines.check_batch_size(2000, batches=10)


def test_batch_size_rule_is_checked_before_tensorflow_starts():
    import subprocess
    import sys

    code = ("import sys, helpers\n"
            "try:\n    helpers.pipelines.check_batch_size(4096)\nexcept ValueError as e:\n    print(e)\n"
            "print('tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=pipelines.ROOT).stdout
    assert "BATCH_SIZE=4096" in out and out.strip().endswith("False")


def test_interleaved_alternates_and_returns_one_median_per_round():
    order = []
    medians = pipelines.interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                                    rounds=3, repeats=2, warmup=1)
    assert [len(v) for v in medians.values()] == [3, 3]
    calls_per_round = (1 + 2) * 2  # warm-up + repeats, for each candidate
    assert order[:calls_per_round] == ["a"] * 3 + ["b"] * 3
    assert order[calls_per_round:calls_per_round + 3] == ["a"] * 3  # round 2 starts with a again
    with pytest.raises(ValueError, match="candidates is empty"):
        pipelines.interleaved({})
    with pytest.raises(ValueError, match="not callable"):
        pipelines.interleaved({"a": 3})
    with pytest.raises(ValueError, match="rounds=0"):
        pipelines.interleaved({"a": lambda: None}, rounds=0)


def test_separable_only_when_ranges_do_not_overlap():
    assert pipelines.separable([1, 2], [3, 4]) and pipelines.separable([3, 4], [1, 2])
    assert not pipelines.separable([1, 3], [2, 4])
    with pytest.raises(ValueError):
        pipelines.separable([], [1])


def test_captured_warnings_keep_the_page_clean_and_restore_the_logger(capsys):
    logger = logging.getLogger("tensorflow")
    before = (logger.handlers[:], logger.propagate)
    with pipelines.captured_tf_warnings() as seen:
        logger.warning("Using a while_loop for converting ImageProjectiveTransformV3")
        warnings.warn("something deprecated", UserWarning, stacklevel=1)
    assert seen == ["Using a while_loop for converting ImageProjectiveTransformV3", "something deprecated"]
    assert (logger.handlers, logger.propagate) == before
    assert capsys.readouterr().err == ""


def test_tensorboard_command_stays_on_this_machine(tmp_path):
    text = pipelines.tensorboard_command(tmp_path, port=6010)
    assert f"--logdir {tmp_path.resolve()}" in text and "--host 127.0.0.1 --port 6010" in text
    assert "--bind_all" not in text and "make tensorboard" not in text
    default = pipelines.ROOT / "scratch" / "04_input_pipelines" / "traces"
    assert pipelines.tensorboard_command(default).startswith("make tensorboard")
    with pytest.raises(ValueError, match="port=80"):
        pipelines.tensorboard_command(tmp_path, port=80)


def test_wait_share_follows_prefetch_and_the_longer_side():
    assert pipelines.wait_share(0.150, 0.037, 0.185, prefetch=False) == pytest.approx(0.8, abs=1e-3)
    assert pipelines.wait_share(0.030, 0.050, 0.080, prefetch=False) == pytest.approx(0.375)  # no prefetch: waits
    assert pipelines.wait_share(0.007, 0.035, 0.040, prefetch=True) == 0.0  # ready in time: extra is sharing
    assert pipelines.wait_share(0.011, 0.004, 0.0112, prefetch=True) == pytest.approx(0.643, abs=1e-3)
    assert pipelines.wait_share(0.011, 0.004, 0.003, prefetch=False) == 0.0  # noisy step shorter than the model
    for bad in (0, -1.0, float("nan"), True, "0.1"):
        with pytest.raises(ValueError, match="positive number of seconds"):
            pipelines.wait_share(bad, 0.1, 0.1, prefetch=False)


TH = (0.05, 0.20)  # the notebook's MODERATELY_FROM and INPUT_BOUND_FROM (xprof's thresholds)


def test_bound_reading_always_says_whether_the_sides_overlapped():
    sequential = pipelines.bound_reading(0.150, 0.0374, 0.185, gpu_count=0, thresholds=TH)
    assert sequential.startswith("The naive pipeline is input-bound") and "one after the other" in sequential
    assert "on the CPU, which also runs the pipeline" in sequential
    assert "waited for input 80% of each step" in sequential
    assert "measured on this CPU" in sequential and "Without prefetch" in sequential
    overlapped = pipelines.bound_reading(0.0112, 0.0041, 0.0112, gpu_count=1, name="tuned", prefetch=True,
                                         thresholds=TH)
    assert "overlapped with training" in overlapped and "so the GPU waited" not in overlapped
    assert overlapped.startswith("The tuned pipeline is input-bound: the GPU waited for input 63% of each step")
    partly = pipelines.bound_reading(0.10, 0.05, 0.125, gpu_count=0, name="tuned", prefetch=True, thresholds=TH)
    assert "partly overlapped (50% of the shorter side was hidden; we read" in partly
    no_prefetch = pipelines.bound_reading(0.10, 0.05, 0.125, gpu_count=0, thresholds=TH)  # beyond the IQRs (0)
    assert "one after the other" in no_prefetch and "load on this machine changed" in no_prefetch
    assert "beyond half the timings' IQRs" in no_prefetch
    within = pipelines.bound_reading(0.10, 0.05, 0.125, gpu_count=0, thresholds=TH, iqrs=(0.01, 0.01, 0.04))
    assert "one after the other" in within and "it reaches 'no overlap'" in within and "50% of the shorter" in within
    assert "close to input + model" not in within  # the median step hid half the shorter side: not "close"
    # a learner run (review): input 113 ms, model 21 ms, step 114 ms, 95% hidden: never "close to input + model"
    learner = pipelines.bound_reading(0.113, 0.021, 0.114, gpu_count=0, thresholds=TH, iqrs=(0.004, 0.002, 0.04))
    assert "close to input + model" not in learner and "came out below input + model (134 ms)" in learner
    noisy_tuned = pipelines.bound_reading(0.10, 0.05, 0.125, gpu_count=0, prefetch=True, thresholds=TH,
                                          iqrs=(0.01, 0.01, 0.04))
    assert "cannot be told here" in noisy_tuned and "crosses 1/3 or 2/3" in noisy_tuned
    assert "partly overlapped" not in no_prefetch
    tiny = pipelines.bound_reading(0.142, 0.0041, 0.147, gpu_count=1, thresholds=TH)
    assert "cannot be told here" in tiny and "the GPU waited for input 97%" in tiny
    noisy = pipelines.bound_reading(0.12, 0.03, 0.05, gpu_count=0, thresholds=TH)
    assert "load on this machine changed" in noisy
    with pytest.raises(ValueError, match="step_s=0"):
        pipelines.bound_reading(0.1, 0.1, 0, gpu_count=0, thresholds=TH)
    with pytest.raises(ValueError, match="thresholds="):
        pipelines.bound_reading(0.1, 0.1, 0.2, gpu_count=0, thresholds=(20, 5))


def test_bound_reading_of_a_compute_bound_prefetched_step_reports_sharing_not_waiting():
    cpu = pipelines.bound_reading(0.00696, 0.0349, 0.0402, gpu_count=0, name="tuned", prefetch=True, thresholds=TH)
    assert cpu.startswith("The tuned pipeline is not input-bound") and "waited for input 0% of each step" in cpu
    assert "15% longer than the model alone" in cpu and "share the same CPU cores" in cpu
    assert "one after the other" not in cpu and "work still added up" in cpu
    gpu = pipelines.bound_reading(0.003, 0.0041, 0.0045, gpu_count=1, name="tuned", prefetch=True, thresholds=TH)
    assert "before the GPU asked for it" in gpu and "10% longer" in gpu and "CPU cores" not in gpu
    same = pipelines.bound_reading(0.003, 0.0041, 0.0042, gpu_count=1, name="tuned", prefetch=True, thresholds=TH)
    assert "took as long as the model alone" in same
    not_prefetched = pipelines.bound_reading(0.03, 0.05, 0.08, gpu_count=0, name="cached", thresholds=TH)
    assert not_prefetched.startswith("The cached pipeline is input-bound") and "waited for input 38%" in not_prefetched


def test_variants_reading_reads_ratios_the_autotune_budget_and_the_limit_of_prefetch():
    v = {"naive": 700, "naive_default": 790, "parallel": 1500, "cached": 2950, "prefetched": 580, "tuned": 3330}
    s = dict.fromkeys(v, 0.05)
    text = pipelines.variants_reading(v, input_s=0.184, model_s=0.0295, cores=2, spreads=s)
    assert "4.8x as fast as the naive one" in text and "best single change here is cached" in text
    assert "at most 1.16x" in text and "It measured 0.83x: slower than naive" in text
    assert "ran at 790 images/s (1.1x)" in text
    assert "CPU budget of 2 cores" in text
    assert "CPU budget of 1 core:" in pipelines.variants_reading(v, 0.184, 0.0295, cores=1, spreads=s)
    assert f"budget of {pipelines.schedulable_cores()} core" in pipelines.variants_reading(v, 0.184, 0.0295, spreads=s)
    noisy = pipelines.variants_reading(v, 0.184, 0.0295, spreads={**s, "prefetched": 0.5})
    assert "It measured 0.83x, within the spread of the step times" in noisy
    assert "prefetch 0.8x, within the spread" in noisy
    with pytest.raises(ValueError, match="lacks"):
        pipelines.variants_reading({"naive": 1}, 0.1, 0.1, spreads={"naive": 0.1})


def test_profiler_reading_compares_both_pipelines_by_one_rule():
    text = pipelines.profiler_reading({"naive": 0.82, "tuned": 0.003}, {"naive": 0.80, "tuned": 0.0}, thresholds=TH)
    assert "82% of a naive step and 0% of a tuned step" in text and "gave 80% and 0%" in text
    assert "Both call the naive pipeline input-bound." in text and "The two ways of measuring agree." in text
    apart = pipelines.profiler_reading({"naive": 0.96, "tuned": 0.31}, {"naive": 0.97, "tuned": 0.63}, thresholds=TH)
    assert "differ by up to 32 points" in apart and "Both call the tuned pipeline input-bound." in apart
    with pytest.raises(ValueError, match="tuned"):
        pipelines.profiler_reading({"naive": 0.5}, {"naive": 0.5, "tuned": 0.0}, thresholds=TH)


def test_input_pipeline_summary_finds_the_step_table_whatever_its_place():
    summary = {"steptime_ms_average": "218.4", "infeed_time_ms_avg": "164.8", "input_conclusion": "HIGHLY input-bound"}
    for tables in ([{"cols": []}, {"p": summary}], [{"p": {"other": 1}}, {"cols": []}, {"p": summary}]):
        got = pipelines.input_pipeline_summary(json.dumps(tables))
        assert got == {"step_ms": 218.4, "input_ms": 164.8, "conclusion": "HIGHLY input-bound"}
    assert pipelines.input_pipeline_summary(json.dumps([{"p": summary}]).encode())["step_ms"] == 218.4
    with pytest.raises(ValueError, match="no step-time summary"):
        pipelines.input_pipeline_summary(json.dumps([{"cols": []}]))
    with pytest.raises(ValueError, match="not the JSON"):
        pipelines.input_pipeline_summary("<html>")


def test_schedulable_cores_is_a_positive_count():
    assert 1 <= pipelines.schedulable_cores() <= (os.cpu_count() or 1)


def test_placement_reading_cpu_gpu_separability_and_round_by_round():
    overlap = {"in_model": [0.050, 0.070, 0.060], "in_map": [0.061, 0.071, 0.065]}
    cpu = pipelines.placement_reading(overlap, 128, gpu_count=0)
    assert "not separable" in cpu and "Without a GPU both placements run on the same CPU cores" in cpu
    assert "in the model took less time in 3 of 3 and in dataset.map in 0 of 3" in cpu
    assert "(median 2,133)" in cpu and "prefetch" in cpu and "was faster" not in cpu
    apart = {"in_model": [0.0106, 0.0108, 0.0105, 0.0107, 0.0106], "in_map": [0.0162, 0.0171, 0.016, 0.017, 0.0165]}
    gpu = pipelines.placement_reading(apart, 128, gpu_count=1)
    assert "in the model was faster in every round" in gpu and "Here the model runs on the GPU" in gpu
    assert "at least 5 rounds" in gpu and "by chance 6% of the time" in gpu
    few = pipelines.placement_reading({"in_model": [0.02] * 3, "in_map": [0.01] * 3}, 128, gpu_count=1)
    assert "in dataset.map took less time in all 3 rounds, but that is fewer than 5 rounds" in few
    assert "not separable" in few and "by chance 25% of the time" in few and "was faster" not in few
    with pytest.raises(ValueError, match="min_rounds"):
        pipelines.placement_reading(apart, 128, 0, min_rounds=1)
    with pytest.raises(ValueError, match="in_map"):
        pipelines.placement_reading({"in_model": [0.1]}, 128, 0)
    with pytest.raises(ValueError, match="one time per round"):
        pipelines.placement_reading({"in_model": [0.1, 0.2], "in_map": [0.1]}, 128, 0)


def test_augmentation_reading_says_whether_the_fallback_is_back():
    fine = pipelines.augmentation_reading(0.004, 0.017, 0.03, 0, 128)
    assert "4.2x as long" in fine and "No 'Using a while_loop' warning" in fine
    back = pipelines.augmentation_reading(0.004, 0.017, 0.03, 3, 128)
    assert "warned 3 time(s)" in back and "slowdown is back" in back


def test_module_never_imports_tensorflow_at_import_time():
    import sys

    source = Path(pipelines.__file__).read_text()
    assert "import tensorflow" not in source
    assert "helpers.pipelines" in sys.modules


# ---------------------------------------------------------------- tf.data at scale: shards, timeline, thread pools
def test_record_checksum_ignores_the_order_but_not_a_lost_changed_or_repeated_record():
    records = [(b"png-%d" % i, i % 10) for i in range(50)]
    total = pipelines.record_checksum(records)
    assert pipelines.record_checksum(reversed(records)) == total
    assert pipelines.record_checksum(records[:-1]) != total
    assert pipelines.record_checksum(records[:-1] + [(b"png-49", 8)]) != total  # same bytes, other label
    assert pipelines.record_checksum(records + records[:1]) != total
    with pytest.raises(ValueError, match=r"\(bytes, label\) pairs"):
        pipelines.record_checksum([("text", 1)])


def test_timeline_waits_until_the_batch_is_ready_then_trains():
    t = pipelines.Timeline()
    t.batches = [{"stages": {"load": [(0.0, 0.4)]}, "ready": 0.5},   # warm-up step's batch
                 {"stages": {"load": [(1.0, 1.2), (1.1, 1.3)]}, "ready": 1.3},  # overlapping calls: merged
                 {"stages": {"load": [(1.5, 1.9)]}, "ready": 1.9}]  # made during step 1: prefetched, ready early
    t.steps = [(0.0, 0.6), (1.0, 2.0), (2.0, 2.5)]
    spans = t.intervals(steps=2)
    assert spans["wait for batch"] == [(0.0, pytest.approx(0.3))]  # step 2's batch was ready before it began
    assert spans["train step"] == [(pytest.approx(0.3), 1.0), (1.0, 1.5)]
    assert spans["load"] == [(0.0, pytest.approx(0.3)), (pytest.approx(0.5), pytest.approx(0.9))]
    figures = pipelines.timeline_shares(spans)
    assert figures["window_s"] == pytest.approx(1.5)
    assert figures["train_share"] == pytest.approx(1.2 / 1.5)
    assert figures["overlap_share"] == pytest.approx(0.4 / 1.2, rel=1e-5)  # load ran 0.5-0.9 s, inside the training
    assert figures["input_share"] == pytest.approx(0.7 / 1.2, rel=1e-5)  # load busy 0.3 + 0.4 s: the most overlap
    assert figures["overlap_share"] <= figures["input_share"]
    with pytest.raises(ValueError, match="steps="):
        t.intervals(steps=4)
    t.batches = t.batches[:2]
    with pytest.raises(ValueError, match="map\\(timeline.handoff\\) after batch"):
        t.intervals(steps=2)


def test_timeline_records_a_real_pipeline_and_an_unprefetched_one_never_overlaps():
    tf = pytest.importorskip("tensorflow")
    t = pipelines.Timeline()

    def stamp(x, label):
        start = tf.timestamp()
        with tf.control_dependencies([start]):
            y = x * 2.0
        with tf.control_dependencies([y]):
            end = tf.timestamp()
        return y, label, {"load": tf.stack([start, end])}

    plain = tf.data.Options()
    plain.experimental_optimization.inject_prefetch = False  # as written: no prefetch added behind our back,
    plain.experimental_optimization.map_parallelization = False  # no map run ahead on other threads,
    plain.experimental_optimization.map_and_batch_fusion = False  # nor a fused map-and-batch, which runs ahead too
    ds = (tf.data.Dataset.from_tensor_slices((tf.ones([16, 2]), tf.range(16))).map(stamp).batch(4).map(t.handoff)
          .with_options(plain))
    t.run(lambda it: tf.reduce_sum(next(it)[0]), iter(ds.repeat()), warmup=1, steps=3)
    spans = t.intervals(steps=3)
    assert len(t.steps) == 4 and len(spans["train step"]) == 3
    assert pipelines.timeline_shares(spans)["overlap_share"] == 0.0  # made inside next(): before training
    with pytest.raises(ValueError, match="warmup="):
        t.run(lambda it: None, iter(ds), warmup=-1, steps=1)


def test_timeline_shares_and_figure_refuse_what_is_not_a_timeline():
    with pytest.raises(ValueError, match="wait for batch"):
        pipelines.timeline_shares({"load": [(0.0, 1.0)]})
    with pytest.raises(ValueError, match="timelines is empty"):
        pipelines.timeline_figure({})
    import matplotlib.pyplot as plt

    spans = {"load": [(0.0, 0.1)], "augment": [], "wait for batch": [(0.0, 0.1)], "train step": [(0.1, 0.3)]}
    fig = pipelines.timeline_figure({"naive": spans, "tuned": spans})
    assert [ax.get_title() for ax in fig.axes] == ["naive: 300 ms", "tuned: 300 ms"]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list(pipelines.TIMELINE_ROWS)
    plt.close(fig)


def test_trace_threads_groups_the_host_threads_of_a_trace_by_pool(tmp_path):
    tf = pytest.importorskip("tensorflow")
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(name="/host:CPU")
    plane.event_metadata[1].name = "op"
    for name, spans in (("tf_Compute/123", [(0, 5), (1, 2)]), ("tf_Compute/-456", [(0, 3)]), ("python", [(0, 1)])):
        line = plane.lines.add(name=name)
        for offset_ms, duration_ms in spans:
            line.events.add(metadata_id=1, offset_ps=int(offset_ms * 1e9), duration_ps=int(duration_ms * 1e9))
    space.planes.add(name="/device:GPU:0").lines.add(name="stream")
    folder = tmp_path / "plugins" / "profile" / "2026_01_01"
    folder.mkdir(parents=True)
    (folder / "host.xplane.pb").write_bytes(space.SerializeToString())
    pools = pipelines.trace_threads(tmp_path)
    assert pools == {"tf_Compute": {"threads": 2, "busy_ms": 8.0}, "python": {"threads": 1, "busy_ms": 1.0}}
    assert tf is not None and pipelines.trace_threads(tmp_path / "missing") == {}


def test_thread_names_groups_this_process_threads():
    names = pipelines.thread_names()
    if Path("/proc/self/task").exists():
        assert sum(names.values()) >= 1
    else:
        assert names == {}


def test_timeline_shares_counts_a_step_whose_batch_was_ready_as_training_throughout():
    """A prefetched batch ready before its step: the whole step counts as training (100%), by construction;
    the overlap is bounded by the input stages' busy time (a tiny augment can overlap only a little)."""
    spans = {"augment": [(0.10, 0.11)], "wait for batch": [], "train step": [(0.0, 0.5), (0.5, 1.0)]}
    figures = pipelines.timeline_shares(spans)
    assert figures["train_share"] == 1.0
    assert figures["overlap_share"] == pytest.approx(0.01) == figures["input_share"]



def _write_trace(folder, gpu_events: int | None):
    """A fake trace: a host plane with one thread, and a GPU plane with `gpu_events` kernels (None: no GPU plane)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    space.planes.add(name="/host:CPU").lines.add(name="tf_Compute/1").events.add(metadata_id=1, duration_ps=10)
    if gpu_events is not None:
        line = space.planes.add(name="/device:GPU:0").lines.add(name="Stream #14")
        for i in range(gpu_events):
            line.events.add(metadata_id=1, offset_ps=i, duration_ps=1)
    target = folder / "plugins" / "profile" / "2026_01_01"
    target.mkdir(parents=True)
    (target / "host.xplane.pb").write_bytes(space.SerializeToString())


@pytest.mark.parametrize("gpu_events,expected", [(None, 0), (0, 0), (7, 7)])
def test_trace_gpu_events_counts_the_gpu_planes_events(tmp_path, gpu_events, expected):
    pytest.importorskip("tensorflow")
    _write_trace(tmp_path / "tuned", gpu_events)
    assert pipelines.trace_gpu_events(tmp_path / "tuned") == expected
    assert pipelines.trace_gpu_events(tmp_path) == expected  # the folder above the runs' folders too
    assert pipelines.trace_gpu_events(tmp_path / "missing") is None


def test_a_gpu_trace_without_its_gpu_side_gets_one_sentence_with_what_to_do(tmp_path):
    """CUPTI refused this user: the fake trace has an empty GPU plane and tflog kept CUPTI's error off the page."""
    pytest.importorskip("tensorflow")
    from helpers import tflog

    f = tflog.LineFilter(environ={})
    stderr = ["I0000 00:00:1.1 7 cupti_tracer.cc:1213] Profiler found 1 GPUs",
              "E0000 00:00:1.1 7 cupti_error_manager.cc:203] cuptiSubscribe: error 35: "
              "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
              "E0000 00:00:1.1 7 cupti_error_manager.cc:194] CuptiErrorManager is disabling profiling automatically."]
    handled: dict[str, list[str]] = {}
    for line in stderr:
        assert f.drop(line)
        if f.kind:
            handled.setdefault(f.kind, []).append(line)
    _write_trace(tmp_path, 0)
    note = pipelines.gpu_trace_note(1, pipelines.trace_gpu_events(tmp_path), handled)
    assert note.startswith("The trace has no GPU side (0 GPU events): ") and note.count(". ") == 0
    for remedy in ("NVreg_RestrictProfilingToAdminUsers=0", "--cap-add SYS_ADMIN", "Colab or Kaggle", "CPU side"):
        assert remedy in note
    subscribers = pipelines.gpu_trace_note(1, 0, {"cupti_subscribers": ["..."]})
    assert "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" in subscribers and "Nsight" in subscribers
    assert pipelines.gpu_trace_note(0, 0, handled) == "", "no GPU: no GPU side to miss"
    assert pipelines.gpu_trace_note(1, 3, {}) == ""
    assert "red lines above say why" in pipelines.gpu_trace_note(2, 0, {})  # no GPU events, cause unknown
    with pytest.raises(ValueError, match="gpu_count="):
        pipelines.gpu_trace_note(-1, 0, {})
    with pytest.raises(ValueError, match="gpu_events="):
        pipelines.gpu_trace_note(1, 2.5, {})
