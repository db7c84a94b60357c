"""Exercise feedback of notebook 02: function answers run on this kernel's devices and made-up servers."""

from __future__ import annotations

import numpy as np

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
