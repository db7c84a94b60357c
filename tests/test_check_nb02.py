"""Exercise feedback of notebook 02: function answers run on this kernel's devices and made-up servers."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import env
from helpers.check import nb02 as check

GIB = 1024**3
tf = env.tensorflow()


def right_matmul_on(device, a, b):
    with tf.device(device):
        return tf.matmul(a, b)


def right_choose(readings, need):
    fits = [r for r in readings if r.memory_total_bytes - r.memory_used_bytes >= need]
    return min(fits, key=lambda r: r.utilization_pct).index if fits else None


# ---------------------------------------------------------------- exercise 1
def test_matmul_on_accepts_tf_device_and_restores_soft_placement():
    assert tf.config.get_soft_device_placement() is True
    fb = check.matmul_on(right_matmul_on)
    assert fb.ok and "soft placement off failed" in fb.message
    assert tf.config.get_soft_device_placement() is True


def test_matmul_on_refuses_a_function_that_ignores_the_device_and_a_constant():
    fb = check.matmul_on(lambda device, a, b: tf.matmul(a, b))
    assert not fb.ok and "ignores `device`" in fb.message
    device_string = "/job:localhost/replica:0/task:0/device:CPU:0"
    assert "Define a function" in check.matmul_on(device_string).message


def test_matmul_on_explains_wrong_values_wrong_types_and_errors():
    def swapped(device, a, b):
        with tf.device(device):
            return tf.matmul(b, a)

    assert "not a @ b" in check.matmul_on(swapped).message
    assert "returns ndarray" in check.matmul_on(lambda device, a, b: np.ones((2, 2))).message
    assert "raised" in check.matmul_on(lambda device, a, b: tf.matmul(a, a)).message
    assert "Not answered yet" in check.matmul_on(...).message


# ---------------------------------------------------------------- exercise 2
def test_choose_gpu_accepts_the_model_answer_on_every_server():
    fb = check.choose_gpu(right_choose)
    assert fb.ok and "None when nothing fits" in fb.message
    assert check.choose_gpu(lambda r, n: None if right_choose(r, n) is None else np.int64(right_choose(r, n))).ok


def test_choose_gpu_refuses_the_index_that_is_right_on_the_example_server():
    assert right_choose(*check.SERVERS["the 4-GPU server above"]) == 2
    fb = check.choose_gpu(lambda readings, need: 2)
    assert not fb.ok
    assert "Define a function" in check.choose_gpu(2).message


def test_choose_gpu_explains_the_used_memory_filter():
    def used_filter(readings, need):  # memory_used < need instead of free >= need
        fits = [r for r in readings if r.memory_used_bytes < need]
        return min(fits, key=lambda r: r.utilization_pct).index if fits else None

    fb = check.choose_gpu(used_filter)
    assert not fb.ok and "Test free memory: total - used >= need" in fb.message


def test_choose_gpu_explains_ignoring_memory_picking_the_busiest_and_forgetting_none():
    least_busy = check.choose_gpu(lambda readings, need: min(readings, key=lambda r: r.utilization_pct).index)
    assert "Keep the GPUs with total - used >= need first" in least_busy.message

    def busiest_that_fits(readings, need):
        fits = [r for r in readings if r.memory_total_bytes - r.memory_used_bytes >= need]
        return max(fits, key=lambda r: r.utilization_pct).index if fits else None

    assert "minimum utilisation" in check.choose_gpu(busiest_that_fits).message

    def never_none(readings, need):
        return right_choose(readings, need) if right_choose(readings, need) is not None else 0

    assert "Return None when nothing fits" in check.choose_gpu(never_none).message
    assert "whole reading" in check.choose_gpu(lambda readings, need: readings[0]).message


def test_an_unwritten_function_is_not_answered_yet_and_a_lazy_none_is_explained():
    assert check.matmul_on(lambda device, a, b: None).message.startswith("Not answered yet: `matmul_on`")
    assert check.choose_gpu(lambda readings, need: None).message.startswith("Not answered yet: `choose_gpu`")

    def none_unless_example(readings, need):
        return 2 if len(readings) == 4 else None  # only the example server has 4 GPUs

    assert "return None only when no GPU has enough free memory" in check.choose_gpu(none_unless_example).message


# ---------------------------------------------------------------- five plausible wrong answers and two right ones each
def _variant(fits, key=lambda r: r.utilization_pct, position=False):
    def choose(readings, need):
        kept = [(i, r) for i, r in enumerate(readings) if fits(r, need)]
        if not kept:
            return None
        i, r = min(kept, key=lambda pair: key(pair[1]))
        return i if position else r.index
    return choose


def _free(r):
    return r.memory_total_bytes - r.memory_used_bytes


CHOOSE_WRONG = [
    (_variant(lambda r, n: _free(r) > n), ">=, not >"),  # the boundary: exactly enough free is enough
    (_variant(lambda r, n: _free(r) >= n, position=True), "position in the list"),  # enumerate's i, not .index
    (_variant(lambda r, n: _free(r) / 2**30 >= n), "same unit"),  # GiB against bytes: nothing ever fits
    (_variant(lambda r, n: _free(r) >= n, key=lambda r: -_free(r)), "most free memory"),
    (_variant(lambda r, n: _free(r) >= n, key=lambda r: r.memory_used_bytes), "uses the least memory"),
    (_variant(lambda r, n: _free(r) >= n, key=lambda r: -r.utilization_pct), "not the maximum"),
    (_variant(lambda r, n: r.memory_used_bytes < n), "Test free memory: total - used >= need"),
    (_variant(lambda r, n: True), "Keep the GPUs with total - used >= need first"),
    (lambda readings, need: float(right_choose(readings, need) or 0), "return a GPU index (an int)"),
]


@pytest.mark.parametrize(("answer", "hint"), CHOOSE_WRONG)
def test_choose_gpu_refuses_plausible_wrong_answers_naming_the_mistake(answer, hint):
    fb = check.choose_gpu(answer)
    assert not fb.ok and hint in fb.message, fb.message


@pytest.mark.parametrize("answer", [
    lambda readings, need: next((r.index for r in sorted(readings, key=lambda r: r.utilization_pct)
                                 if r.memory_total_bytes - need >= r.memory_used_bytes), None),
    _variant(lambda r, n: not _free(r) < n),
])
def test_choose_gpu_accepts_right_answers_written_differently(answer):
    assert check.choose_gpu(answer).ok


def test_matmul_on_refuses_plausible_wrong_answers_naming_the_mistake():
    def no_with(device, a, b):
        tf.device(device)  # creates the context manager but never enters it
        return tf.matmul(a, b)

    cases = [
        (no_with, "ignores `device`"),
        (lambda device, a, b: tf.matmul(b, a), "in that order"),  # (3, 2) @ (2, 3) is (3, 3): shapes still work
        (lambda device, a, b: (a @ b).numpy(), "returns ndarray"),
        (lambda device, a, b: tf.matmul(a, b) * 2, "not a @ b"),
        (lambda device, a, b: tf.constant(np.ones((2, 2), np.float32)), "not a @ b"),
        (lambda device, a, b: None, "Not answered yet"),
    ]
    for answer, hint in cases:
        fb = check.matmul_on(answer)
        assert not fb.ok and hint in fb.message, (hint, fb.message)


def test_matmul_on_accepts_right_answers_written_differently():
    def with_name(device, a, b):
        with tf.device(device):
            out = a @ b
        return out

    assert check.matmul_on(with_name).ok
    def linalg(device, a, b):
        with tf.device(device):
            return tf.linalg.matmul(a, b, transpose_b=False)

    assert check.matmul_on(linalg).ok


def test_exercise_text_counts_the_servers_the_check_uses():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).parents[1] / "notebooks" / "02_gpu_detection_and_placement.ipynb").read_text())
    text = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown").replace("\n", " ")
    words = {8: "eight"}
    assert f"this server and on {words[len(check.SERVERS) - 1]} other made-up servers" in text
