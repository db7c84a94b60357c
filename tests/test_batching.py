"""Tests for helpers.batching (notebook 05)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import batching
from helpers.check import nb05 as check_nb05


# ---------------------------------------------------------------- BATCH_SIZES
@pytest.mark.parametrize("sizes", [[32, 128, 512], [8, 16, 32, 64, 128, 256, 512, 4096], (16, 48, 100)])
def test_run_sizes_accepts_three_to_eight_increasing_sizes(sizes):
    assert batching.run_sizes(sizes) == list(sizes)


@pytest.mark.parametrize("sizes", [
    [32, 512],  # fewer than 3
    [128, 32, 512],  # unsorted
    [32, 32, 512],  # repeated
    [32, 64, 128, 256, 512, 1024, 2048, 4096, 4096 + 1],  # 9 sizes, and above 4096
    [4, 8, 16],  # below 8
    [32, 64, 8192],  # above 4096
])
def test_run_sizes_refuses_unusable_lists_naming_the_parameter(sizes):
    with pytest.raises(ValueError, match=r"BATCH_SIZES=.*increasing order"):
        batching.run_sizes(sizes)


@pytest.mark.parametrize("sizes", ["32,64,128", [], [32, 64.0, 128], [32, True, 128], 512])
def test_run_sizes_refuses_non_lists_through_the_params_rule(sizes):
    with pytest.raises(ValueError, match="BATCH_SIZES"):
        batching.run_sizes(sizes)


# ---------------------------------------------------------------- the model
def test_small_cnn_maps_images_to_ten_logits():
    import numpy as np

    model = batching.small_cnn()
    assert model.input_shape == (None, 28, 28, 1) and model.output_shape == (None, 10)
    assert model.layers[-1].activation.__name__ == "linear"  # logits: train with from_logits=True
    assert model(np.zeros((2, 28, 28, 1), "float32")).shape == (2, 10)


def test_compiled_cnn_uses_sgd_with_momentum_and_trains_a_step():
    import numpy as np

    model = batching.compiled_cnn(0.05)
    assert type(model.optimizer).__name__ == "SGD" and model.optimizer.momentum == 0.9
    assert float(model.optimizer.learning_rate) == pytest.approx(0.05)
    loss = model.train_on_batch(np.zeros((4, 28, 28, 1), "float32"), np.arange(4))
    assert 0 < float(loss) < 10


def test_loss_probe_measures_before_training_and_every_few_steps():
    import numpy as np

    x, y = np.random.default_rng(0).random((16, 28, 28, 1), "float32"), np.arange(16) % 10
    model = batching.compiled_cnn()
    probe = batching.loss_probe(x, y, every=3)
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[probe])  # 8 steps
    assert [step for step, _ in probe.points] == [0, 3, 6]
    assert all(0 < loss < 10 for _, loss in probe.points)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[probe])  # steps 9 to 12; the count goes on
    assert [step for step, _ in probe.points] == [8, 9, 12]
    with pytest.raises(ValueError, match="every"):
        batching.loss_probe(x, y, every=0)


# ---------------------------------------------------------------- memory arithmetic
def test_bytes_per_sample_is_the_slope_between_the_two_largest_batches():
    peaks = {"32": 37e6, "64": 38e6, "256": 58e6, "512": 96e6}  # JSON keys are strings
    assert batching.bytes_per_sample(peaks) == pytest.approx(38e6 / 256)
    assert batching.bytes_per_sample({512: 96e6, 256: 58e6}) == pytest.approx(38e6 / 256)  # any order


@pytest.mark.parametrize("peaks", [{512: 96e6}, {256: 96e6, 512: 96e6}, {256: 99e6, 512: 96e6}])
def test_bytes_per_sample_refuses_too_few_or_flat_peaks(peaks):
    with pytest.raises(ValueError, match="peaks"):
        batching.bytes_per_sample(peaks)


def test_predicted_max_batch_extrapolates_from_the_largest_batch():
    peaks = {256: 60e6, 512: 110e6}  # 195,312.5 bytes per sample
    assert batching.predicted_max_batch(peaks, 110e6) == 512
    assert batching.predicted_max_batch(peaks, 110e6 + 195_312.5 * 100) == 612
    assert batching.predicted_max_batch(peaks, 256 * 2**20) == 512 + int((256 * 2**20 - 110e6) / 195_312.5)


def test_predicted_max_batch_is_zero_when_even_the_fixed_part_does_not_fit():
    assert batching.predicted_max_batch({256: 60e6, 512: 110e6}, 1e6) == 0


@pytest.mark.parametrize("memory", [0, -1, None, "16 GB"])
def test_predicted_max_batch_refuses_a_bad_memory_size(memory):
    with pytest.raises(ValueError, match="memory_bytes"):
        batching.predicted_max_batch({256: 60e6, 512: 110e6}, memory)


# ---------------------------------------------------------------- tables and plots
def test_memory_table_lists_every_batch_in_order():
    lines = batching.memory_table({"512": 96.7 * 2**20, "32": 37 * 2**20}).splitlines()
    assert lines[0].split()[0] == "batch" and [ln.split()[0] for ln in lines[1:]] == ["32", "512"]
    assert "96.7" in lines[2]


def test_accuracy_table_shows_both_rules_and_the_difference():
    accuracy = {"512": {"constant": 0.585, "scaled": 0.64}, "32": {"constant": 0.8, "scaled": 0.8}}
    table = batching.accuracy_table(accuracy, {"512": 40, "32": 626})
    rows = table.splitlines()
    assert rows[1].split() == ["32", "626", "0.800", "0.800", "+0.000"]
    assert rows[2].split() == ["512", "40", "0.585", "0.640", "+0.055"]


def test_plot_by_batch_draws_one_line_per_curve_on_a_log2_axis():
    ax = batching.plot_by_batch({"sweep": {32: 37e6, 512: 96e6}, "wall": {512: 96e6, 1024: 190e6}, "empty": {}},
                                ylabel="peak MiB", title="memory", scale=1e6)
    assert len(ax.lines) == 3 and ax.get_xscale() == "log"
    assert list(ax.lines[1].get_ydata()) == [96.0, 190.0]
    ax = batching.plot_by_batch({"wall": {512: 96e6, 1024: 190e6}}, ylabel="", title="", wall=2048)
    assert ax.lines[-1].get_label() == "out of memory at 2048" and 2048 in ax.get_xticks()
    plt.close("all")
    with pytest.raises(ValueError, match="curves"):
        batching.plot_by_batch({}, ylabel="", title="")


def test_plot_convergence_keeps_a_batch_size_the_same_colour_in_both_panels():
    losses = {32: {"constant": [(0, 2.3), (1, 0.6)], "scaled": [(0, 2.3), (1, 0.6)]},
              512: {"constant": [(0, 2.3), (1, 1.6)], "scaled": [(0, 2.3), (0.5, 1.9), (1, 1.2)]}}
    accuracy = {32: {"constant": 0.8, "scaled": 0.8}, 512: {"constant": 0.6, "scaled": 0.7}}
    fig = batching.plot_convergence(losses, accuracy)
    left, middle, right = fig.axes
    assert [ln.get_color() for ln in left.lines] == [ln.get_color() for ln in middle.lines]
    assert list(right.lines[1].get_ydata()) == [0.8, 0.7]
    plt.close("all")
    with pytest.raises(ValueError, match="losses"):
        batching.plot_convergence({}, {})


def test_dips_note_names_each_batch_whose_peak_fell_and_is_silent_otherwise():
    mib = 2**20
    note = batching.dips_note({32: 37 * mib, 64: 39 * mib, 128: 36 * mib, 256: 50 * mib, 512: 49 * mib})
    assert "Batch 128 peaked 3.0 MiB below batch 64 (36.0 against 39.0 MiB)" in note
    assert "batch 512 peaked 1.0 MiB below batch 256 (49.0 against 50.0 MiB)" in note
    assert batching.dips_note({32: 37e6, 64: 39e6, 128: 40e6}) == ""


# ---------------------------------------------------------------- the out-of-memory wall (finding 8)
def test_compiled_cnn_turns_xla_off_so_cpu_and_gpu_run_the_same_program(monkeypatch):
    from keras.src.trainers.trainer import Trainer

    # "auto" resolves as on a GPU machine (Trainer._resolve_auto_jit_compile turns XLA on where a GPU exists):
    monkeypatch.setattr(Trainer, "_resolve_auto_jit_compile", lambda self: True)
    assert batching.compiled_cnn().jit_compile is False


def test_largest_tensor_is_the_first_convolutions_output():
    assert batching.largest_tensor(batching.small_cnn()) == 26 * 26 * 16


def test_wall_batches_stop_before_a_tensor_passes_int32_elements():
    sizes = batching.wall_batches(512, 26 * 26 * 16)
    assert sizes == [512 * 2**i for i in range(9)]  # 131,072; 262,144 would put 2.8e9 elements in conv1's output
    assert sizes[-1] * 10816 <= 2**31 - 1 < 2 * sizes[-1] * 10816
    assert len(batching.wall_batches(8, 10816)) == 12  # small starts: at most 12 sizes
    for start in (8, 100, 512, 4096):
        assert all(b * 10816 <= batching.INT32_MAX for b in batching.wall_batches(start, 10816))
    with pytest.raises(ValueError, match="start="):
        batching.wall_batches(300_000, 10816)
    for bad in ({"start": 0}, {"per_sample": -1}, {"count": 1.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            batching.wall_batches(**{"start": 512, "per_sample": 10816, "count": 12, **bad})


BFC_OOM = ("{{function_node __inference_one_step_on_data_1718}} OOM when allocating tensor with shape[131072,26,26,16] "
           "and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
           "\t [[{{node sequential_1/conv2d_1/Relu}}]]\nHint: If you want to see a list of allocated tensors when OOM "
           "happens, add report_tensor_allocations_upon_oom to RunOptions for current allocation info.")
XLA_OOM = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 5670699008 bytes.\n\t [[{{node cluster_0}}]]"


def _tf_step(fails_from, error):
    """A fake training step: the peak grows with the batch; from `fails_from` on it raises `error`."""
    def step(batch):
        if error is not None and batch >= fails_from:
            raise error
        return 1e6 + 2e5 * batch
    return step


def test_find_wall_catches_the_allocators_error_and_reads_its_line():
    import tensorflow as tf

    wall = batching.find_wall(_tf_step(4096, tf.errors.ResourceExhaustedError(None, None, BFC_OOM)),
                              [1024, 2048, 4096, 8192], out_of_memory=tf.errors.ResourceExhaustedError,
                              other=tf.errors.OpError)
    assert wall["failed_at"] == 4096 and wall["out_of_memory"] is True and sorted(wall["peaks"]) == [1024, 2048]
    assert wall["error_type"] == "ResourceExhaustedError"
    assert wall["error"] == ("OOM when allocating tensor with shape[131072,26,26,16] and type float on "
                             "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc")


def test_find_wall_reads_xlas_out_of_memory_text_too():
    import tensorflow as tf

    wall = batching.find_wall(_tf_step(2048, tf.errors.ResourceExhaustedError(None, None, XLA_OOM)), [1024, 2048],
                              out_of_memory=tf.errors.ResourceExhaustedError, other=tf.errors.OpError)
    assert wall["out_of_memory"] and wall["error"] == "Out of memory while trying to allocate 5670699008 bytes."


@pytest.mark.parametrize("kind", ["InvalidArgumentError", "InternalError", "UnknownError"])
def test_find_wall_reports_another_tensorflow_error_as_no_wall(kind):
    import tensorflow as tf

    error = getattr(tf.errors, kind)(None, None, "{{function_node __inference_f_1}} Tensor too large\n\t[[{{node x}}]]")
    wall = batching.find_wall(_tf_step(2048, error), [1024, 2048, 4096], out_of_memory=tf.errors.ResourceExhaustedError,
                              other=tf.errors.OpError)
    assert wall["failed_at"] == 2048 and wall["out_of_memory"] is False
    assert wall["error_type"] == kind and wall["error"] == "Tensor too large"
    lines = batching.wall_lines(wall, "this A100")
    assert "stopped the sweep with " + kind in lines[0] and "not an out-of-memory error" in lines[0]
    assert not any("raised" in line or "After catching it" in line for line in lines)


def test_find_wall_without_an_error_finds_no_wall_and_says_why_it_stopped():
    import tensorflow as tf

    sizes = batching.wall_batches(512, 10816)
    wall = batching.find_wall(_tf_step(None, None), sizes, out_of_memory=tf.errors.ResourceExhaustedError,
                              other=tf.errors.OpError)
    assert wall["failed_at"] is None and wall["error_type"] is None and wall["error"] == ""
    assert sorted(wall["peaks"]) == sizes
    line = batching.wall_lines(wall, "this NVIDIA H200", per_sample=10816)[0]
    assert line.startswith("On this NVIDIA H200, every batch up to 131072 fitted: no wall within the sweep")
    assert "next doubling, 262144" in line and "None" not in line
    short = batching.wall_lines(wall, "this GPU", per_sample=10)[0]  # stopped by the count, not by int32
    assert "2**31" not in short


def test_find_wall_lets_other_exceptions_through_and_needs_an_exception_class():
    def step(batch):
        raise KeyError("a bug in the step, not the memory")

    with pytest.raises(KeyError):
        batching.find_wall(step, [8], out_of_memory=MemoryError)
    with pytest.raises(ValueError, match="out_of_memory"):
        batching.find_wall(step, [8], out_of_memory="ResourceExhaustedError")


def test_wall_lines_say_what_happened_in_each_case():
    oom = {"peaks": {512: 1e8, 1024: 2e8}, "failed_at": 2048, "out_of_memory": True,
           "error_type": "ResourceExhaustedError", "error": "OOM when allocating tensor", "loss_after": 2.3}
    lines = batching.wall_lines(oom, "this Tesla T4")
    assert lines[0] == ("On this Tesla T4, batch 1024 fitted and batch 2048 raised ResourceExhaustedError: "
                        "OOM when allocating tensor")
    assert lines[1].startswith("After catching it, the same process trained a batch of 32 (loss 2.300)")
    first = batching.wall_lines({**oom, "peaks": {}, "failed_at": 512}, "this P100")[0]
    assert "batch None" not in first and "the first size tried, batch 512 raised" in first
    crashed = batching.wall_lines({}, "this A100", child_error="exit code -6: Check failed: cudnnSetTensorNdDescriptor")
    assert crashed[0].startswith("On this A100 the wall child gave no answer (exit code -6") and len(crashed) == 1


def test_prediction_line_compares_with_the_wall_or_with_its_absence():
    assert "between the last batch" in batching.prediction_line(83956, 65536, 131072)
    assert "above the measured wall" in batching.prediction_line(300000, 65536, 131072)
    assert "below the measured wall" in batching.prediction_line(30000, 65536, 131072)
    assert "agrees with finding no wall" in batching.prediction_line(700000, 131072, None)
    assert "overestimate" in batching.prediction_line(100000, 131072, None)


# ---------------------------------------------------------------- the notebook's text (issue 16)
def _notebook_05():
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "notebooks" / "05_batch_size_and_learning_rate.ipynb"
    cells = json.loads(path.read_text())["cells"]
    return ("\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"),
            "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code"))


@pytest.mark.parametrize("figure", ["2-4x", "15 GiB", "Scaled 16x to 0.64",
                                    "trains batch 32 alone a\nlittle better"])
def test_notebook_05_states_no_figure_it_neither_measures_nor_sources(figure):
    markdown, code = _notebook_05()
    assert figure not in markdown and figure not in code


def test_notebook_05_prints_plain_lines_instead_of_a_progress_bar():
    _, code = _notebook_05()  # a Progbar or verbose=1 lands in the saved notebook as terminal escape codes
    assert "Progbar" not in code and "verbose=1" not in code
    assert "verbose=0" in code


def test_notebook_05_explains_the_cpu_allocator_name_and_splits_the_fixed_part():
    markdown, code = _notebook_05()
    assert "`bfc_cpu_allocator_for_gpu`: that is the CPU's own allocator" in markdown
    assert "process_state.cc" in markdown and "conv_grad_input_ops.h" in markdown
    assert "peak_parts_line(" in code and "allocator_note(" in code


# ---------------------------------------------------------------- gradient accumulation
@pytest.mark.parametrize("target, largest_fit, micro", [
    (2048, 1024, 1024),  # the CPU run: 1024 fitted, 2048 did not: exercise 4 gives 2 steps, not 4 of 512
    (2048, 512, 512),  # 4 steps when only 512 fits
    (131072, 65536, 65536),  # the T4: the last doubling before the wall
    (600, 256, 200),  # ceil(600 / 256) = 3 divides 600: steps of 200, not a batch size of the sweep
    (1000, 400, 250),  # ceil = 3 does not divide 1000: 4 steps
    (97, 50, 1),  # a prime: steps of 1
    (99, 49, 33),  # no wall at an odd batch: half of it, 49, rounded to a divisor
])
def test_micro_batch_follows_exercise_4s_rule_from_the_largest_batch_that_fits(target, largest_fit, micro):
    assert batching.micro_batch(target, largest_fit) == micro
    k = target // micro
    assert micro * k == target and micro <= largest_fit
    assert k == check_nb05._accumulation_steps(target, largest_fit)  # the same rule as exercise 4's check


@given(st.integers(2, 10**6), st.data())
def test_micro_batch_is_exercise_4s_answer(target, data):
    largest_fit = data.draw(st.integers(1, target - 1))
    micro = batching.micro_batch(target, largest_fit)
    assert target % micro == 0 and micro <= largest_fit
    assert target // micro == check_nb05._accumulation_steps(target, largest_fit)


@pytest.mark.parametrize("target, largest_fit, match", [(1, 8, "target"), (True, 8, "target"),
                                                        (64, 64, "largest_fit"), (64, 0, "largest_fit"),
                                                        (64, [32], "largest_fit")])
def test_micro_batch_refuses_what_cannot_split(target, largest_fit, match):
    with pytest.raises(ValueError, match=match):
        batching.micro_batch(target, largest_fit)


def test_relative_drift_is_the_distance_over_how_far_training_moved():
    start, trained = [np.zeros(3), np.zeros(1)], [np.array([3.0, 0.0, 0.0]), np.array([4.0])]
    assert batching.relative_drift(trained, trained, start) == 0.0
    assert batching.relative_drift(start, trained, start) == 1.0
    assert batching.relative_drift([np.array([3.0, 0.0, 0.0]), np.array([4.5])], trained, start) == 0.1
    with pytest.raises(ValueError, match="did not move"):
        batching.relative_drift(trained, start, start)


@pytest.mark.parametrize("steps", [1, 0, 2.0, True])
def test_compiled_cnn_refuses_accumulation_steps_keras_would_refuse(steps):
    with pytest.raises(ValueError, match="gradient_accumulation_steps"):
        batching.compiled_cnn(gradient_accumulation_steps=steps)


def test_keras_accumulation_averages_k_micro_batches_into_the_large_batchs_update():
    """What the notebook relies on, read in BaseOptimizer._backend_apply_gradients: one update per k steps, with the
    average gradient, counted by `iterations`; the micro-steps counted by `_iterations`."""
    import keras

    rng = np.random.default_rng(0)
    x, y = rng.random((64, 28, 28, 1), dtype="float32"), rng.integers(0, 10, 64)
    keras.utils.set_random_seed(0)
    large = batching.compiled_cnn()
    keras.utils.set_random_seed(0)
    accumulating = batching.compiled_cnn(gradient_accumulation_steps=4)
    start = large.get_weights()
    large.train_on_batch(x, y)
    for i in range(3):
        accumulating.train_on_batch(x[16 * i:16 * (i + 1)], y[16 * i:16 * (i + 1)])
    assert batching.relative_drift(accumulating.get_weights(), start, large.get_weights()) == 0.0  # no update yet
    accumulating.train_on_batch(x[48:], y[48:])
    assert batching.relative_drift(accumulating.get_weights(), large.get_weights(), start) < 1e-4
    assert int(accumulating.optimizer.iterations) == 1 and int(accumulating.optimizer._iterations) == 4
