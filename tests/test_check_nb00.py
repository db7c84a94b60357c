"""Exercise feedback of notebook 00: function answers checked on made-up machines and table rows."""

import numpy as np
import pytest

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
    assert not fb.ok and "gives 0 on every machine" in fb.message and "ignores the list" in fb.message


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


# ---------------------------------------------------------------- five plausible wrong answers and two right ones each
@pytest.mark.parametrize(("answer", "hint"), [
    (lambda devices: 0, "ignores the list it is given"),  # right on this laptop only
    (lambda devices: sum(d.device_type == "gpu" for d in devices), "in capitals"),  # lower case never matches
    (lambda devices: len(devices) - 1, "every device but one"),  # "all but the CPU"
    (len, "CPUs included"),
    (lambda devices: any(d.device_type == "GPU" for d in devices), "whole number"),  # a bool, not a count
    (lambda devices: [d for d in devices if d.device_type == "GPU"], "len("),
    (lambda devices: sum(d.name.endswith("GPU:0") for d in devices), "but it has 4 GPU(s)"),  # only the first GPU
    (lambda devices: len(devices) // 2, "but it has"),
])
def test_count_gpus_refuses_plausible_wrong_answers_naming_the_mistake(answer, hint):
    fb = check.count_gpus(answer)
    assert not fb.ok and hint in fb.message, fb.message


@pytest.mark.parametrize("answer", [
    lambda devices: len([d for d in devices if d.device_type.upper() == "GPU"]),
    lambda devices: float(sum(1 for d in devices if ":GPU:" in d.name)),
])
def test_count_gpus_accepts_right_answers_written_differently(answer):
    assert check.count_gpus(answer).ok


@pytest.mark.parametrize(("answer", "hint"), [
    (lambda gpu: gpu["compute_capability"] > 8.0, "not > 8.0"),  # misses the A100, exactly 8.0
    (lambda gpu: gpu["compute_capability"] >= 8.5, "says no"),  # a threshold above 8.0: not a strictness slip
    (lambda gpu: gpu["compute_capability"] >= 7.0, "float16 at most"),  # the float16 Tensor Core rule
    (lambda gpu: 8.0 <= gpu["compute_capability"] < 9.0, "newer GPUs count too"),  # Ampere and Ada only
    (lambda gpu: int(gpu["compute_capability"] >= 8.0), "return True or False"),  # 1/0, not a bool
    (lambda gpu: gpu["compute_capability"] >= "8.0", "raised TypeError"),  # compares a number with a string
    (lambda gpu: "A100" in gpu["name"] or "H100" in gpu["name"], "says no"),  # a list of names
])
def test_bf16_refuses_plausible_wrong_answers_naming_the_mistake(answer, hint):
    fb = check.has_bf16_tensor_cores(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_bf16_blames_strictness_only_for_a_strict_comparison_at_8():
    assert "not > 8.0" not in check.has_bf16_tensor_cores(lambda gpu: gpu["compute_capability"] >= 8.5).message


@pytest.mark.parametrize("answer", [
    lambda gpu: not gpu["compute_capability"] < 8,
    lambda gpu: bool(np.float64(gpu["compute_capability"]) >= 8),
])
def test_bf16_accepts_right_answers_written_differently(answer):
    assert check.has_bf16_tensor_cores(answer).ok


def test_exercise_text_counts_the_machines_the_check_uses():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).parents[1] / "notebooks" / "00_environment_check.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    words = {4: "four"}
    assert f"device lists of\n{words[len(check.MACHINES)]} made-up machines" in text or \
        f"device lists of {words[len(check.MACHINES)]} made-up machines" in text
