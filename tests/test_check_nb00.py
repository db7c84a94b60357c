"""Exercise feedback of notebook 00: function answers checked on made-up machines and table rows."""

import numpy as np

from helpers.check import nb00 as check


def right_count(devices):
    return sum(d.device_type == "GPU" for d in devices)


def test_count_gpus_accepts_a_counting_function():
    assert check.count_gpus(right_count).ok
    assert check.count_gpus(lambda devices: np.int64(right_count(devices))).ok
    assert check.count_gpus(lambda devices: len([d for d in devices if "GPU" in d.name])).ok


def test_count_gpus_refuses_the_constant_that_is_right_on_this_machine():
    fb = check.count_gpus(0)
    assert not fb.ok and "Define a function" in fb.message
    fb = check.count_gpus(lambda devices: 0)
    assert not fb.ok and "has 1 GPU(s)" in fb.message


def test_count_gpus_explains_counting_every_device_and_returning_a_list():
    assert "CPUs included" in check.count_gpus(len).message
    assert "len(" in check.count_gpus(lambda devices: [d for d in devices if d.device_type == "GPU"]).message
    assert "raised AttributeError" in check.count_gpus(lambda devices: devices.count_gpus()).message
    assert "Not answered yet" in check.count_gpus(...).message


def test_bf16_accepts_the_rule_and_refuses_a_strict_comparison():
    assert check.has_bf16_tensor_cores(lambda gpu: gpu["compute_capability"] >= 8.0).ok
    fb = check.has_bf16_tensor_cores(lambda gpu: gpu["compute_capability"] > 8.0)
    assert not fb.ok and "exactly 8.0" in fb.message


def test_bf16_refuses_the_float16_rule_a_name_list_and_a_fixed_answer():
    fb = check.has_bf16_tensor_cores(lambda gpu: gpu["compute_capability"] >= 7.0)
    assert not fb.ok and "bfloat16 starts at 8.0" in fb.message
    names = {"A100 SXM4 40 GB", "A100 SXM4 80 GB", "A10", "L4", "L40S", "H100 SXM5 80 GB", "H200 SXM 141 GB"}
    fb = check.has_bf16_tensor_cores(lambda gpu: gpu["name"] in names)  # right on the table, wrong on new GPUs
    assert not fb.ok and "newer GPUs count too" in fb.message
    assert "Define a function" in check.has_bf16_tensor_cores(sorted(names)).message
    assert "True or False" in check.has_bf16_tensor_cores(lambda gpu: "yes").message


def test_an_unwritten_function_is_not_answered_yet():
    def count_gpus(devices):
        ...

    assert check.count_gpus(count_gpus).message.startswith("Not answered yet: `count_gpus` returns None")
    assert "Not answered yet" in check.has_bf16_tensor_cores(lambda gpu: None).message
