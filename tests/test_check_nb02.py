"""Tests for the exercise checks of notebook 02."""

from __future__ import annotations

import numpy as np

import helpers.check as check
from helpers.env import NvmlReading
from helpers.monitor import EXAMPLE_READINGS

GIB = 1024**3
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def test_checks_are_exported_from_helpers_check():
    assert "cpu_matmul_device" in check.__all__ and "gpu_for_new_job" in check.__all__


# ---------------------------------------------------------------- exercise 1
def test_cpu_matmul_device_accepts_the_result_device():
    fb = check.cpu_matmul_device(CPU)
    assert fb.ok and "CPU:0" in fb.message


def test_cpu_matmul_device_placeholder_is_not_filled():
    assert "Not answered" in check.cpu_matmul_device(...).message
    assert not check.cpu_matmul_device(None).ok


def test_cpu_matmul_device_explains_a_returned_tensor():
    from helpers import env

    tf = env.tensorflow()
    fb = check.cpu_matmul_device(tf.ones((2, 2)))
    assert not fb.ok and "tensor itself" in fb.message


def test_cpu_matmul_device_explains_returned_values():
    fb = check.cpu_matmul_device(np.ones((2, 2)))
    assert not fb.ok and "values" in fb.message


def test_cpu_matmul_device_explains_the_requested_name():
    for requested in ("/CPU:0", "CPU:0", "/GPU:0", "/device:CPU:0"):
        fb = check.cpu_matmul_device(requested)
        assert not fb.ok and "the name you asked for" in fb.message, requested
    assert "does not name a device" in check.cpu_matmul_device("nonsense").message


def test_cpu_matmul_device_explains_a_gpu_placement():
    fb = check.cpu_matmul_device("/job:localhost/replica:0/task:0/device:GPU:0")
    assert not fb.ok and "tf.device('/CPU:0')" in fb.message


def test_cpu_matmul_device_explains_empty_and_wrong_types():
    assert "empty" in check.cpu_matmul_device("").message
    assert "not int" in check.cpu_matmul_device(0).message


# ---------------------------------------------------------------- exercise 2
def test_gpu_for_new_job_accepts_the_least_busy_gpu_that_fits():
    fb = check.gpu_for_new_job(2)
    assert fb.ok and "GPU 2" in fb.message
    assert check.gpu_for_new_job(2.0).ok


def test_gpu_for_new_job_placeholder_is_not_filled():
    assert "Not answered" in check.gpu_for_new_job(...).message


def test_gpu_for_new_job_explains_ignoring_the_memory_need():
    fb = check.gpu_for_new_job(1)  # 3 % busy but only 2 GiB free
    assert not fb.ok and "least busy" in fb.message and "free" in fb.message


def test_gpu_for_new_job_explains_taking_the_busiest():
    fb = check.gpu_for_new_job(0)
    assert not fb.ok and "busiest" in fb.message


def test_gpu_for_new_job_explains_picking_by_free_memory():
    fb = check.gpu_for_new_job(3)
    assert not fb.ok and "most free memory" in fb.message


def test_gpu_for_new_job_explains_counting_from_one():
    readings = EXAMPLE_READINGS[:3]  # the right answer, GPU 2, is the last one here
    fb = check.gpu_for_new_job(3, readings=readings)
    assert not fb.ok and "count from 0" in fb.message
    assert "no GPU 7" in check.gpu_for_new_job(7).message


def test_gpu_for_new_job_explains_wrong_types():
    assert "whole reading" in check.gpu_for_new_job(EXAMPLE_READINGS[2]).message
    assert "not a string" in check.gpu_for_new_job("Tesla T4").message
    assert "share that name" in check.gpu_for_new_job("Tesla T4").message
    assert "not list" in check.gpu_for_new_job([2]).message
    assert not check.gpu_for_new_job(True).ok


def test_gpu_for_new_job_uses_the_readings_and_need_given():
    readings = [NvmlReading(0, "A", 10.0, 1 * GIB, 8 * GIB, None, None),
                NvmlReading(1, "B", 50.0, 1 * GIB, 40 * GIB, None, None)]
    assert check.gpu_for_new_job(0, readings=readings, need_gib=4).ok
    assert check.gpu_for_new_job(1, readings=readings, need_gib=20).ok
