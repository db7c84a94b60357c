"""Exercise feedback of notebook 09: functions run on made-up models, jobs and runs."""

import numpy as np
import pytest

from helpers.check import nb09 as check


# ---------------------------------------------------------------- exercise 1
def test_adam_training_bytes_accepts_the_model_answer_and_numpy_ints():
    fb = check.adam_training_bytes(lambda params, dtype_bytes: params * dtype_bytes * 4)
    assert fb.ok and "16 bytes per weight" in fb.message
    assert check.adam_training_bytes(lambda p, b: np.int64(p) * b * 4).ok


@pytest.mark.parametrize("factor, hint", [
    (1, "weights alone"), (2, "weights and gradients"), (3, "one part of the four is missing"),
    (5, "one value too many"), (32, "in bits"), (8, "twice the answer"), (7, "count four values per weight"),
])
def test_adam_training_bytes_names_the_missing_or_extra_part(factor, hint):
    fb = check.adam_training_bytes(lambda params, dtype_bytes, f=factor: f * params * dtype_bytes)
    assert not fb.ok and hint in fb.message


def test_adam_training_bytes_refuses_a_constant_right_for_one_model():
    one = 4 * 25_557_032 * 4  # right for ResNet-50 in float32 only
    assert not check.adam_training_bytes(lambda params, dtype_bytes: one).ok
    assert "Define a function" in check.adam_training_bytes(one).message


def test_adam_training_bytes_placeholders_errors_and_types():
    assert "Not answered yet" in check.adam_training_bytes(...).message
    assert "returns None" in check.adam_training_bytes(lambda p, b: None).message
    assert "raised ZeroDivisionError" in check.adam_training_bytes(lambda p, b: p / 0).message
    assert "return a number" in check.adam_training_bytes(lambda p, b: "16 GB").message


# ---------------------------------------------------------------- exercise 2
def test_fits_accepts_binary_gigabytes_with_the_margin_and_numpy_bools():
    fb = check.fits(lambda job_bytes, gpu_memory_gb: job_bytes <= 0.9 * gpu_memory_gb * 2**30)
    assert fb.ok and "2**30" in fb.message
    assert check.fits(lambda j, g: np.bool_(j / 2**30 <= 0.9 * g)).ok


@pytest.mark.parametrize("answer, hint", [
    (lambda j, g: j <= 0.9 * g * 1e9, "binary gigabytes"),
    (lambda j, g: j <= g * 2**30, "keep the 10 % margin"),
    (lambda j, g: j <= g * 1e9, "use 2**30 bytes per GB, and keep the 10 % margin"),
    (lambda j, g: True, "says yes to every job"),
    (lambda j, g: False, "says no to every job"),
    (lambda j, g: j < 0.8 * g * 2**30, "the answer is"),
])
def test_fits_explains_the_unit_and_margin_traps(answer, hint):
    fb = check.fits(answer)
    assert not fb.ok and hint in fb.message


def test_fits_refuses_non_booleans_constants_and_placeholders():
    assert "return True or False" in check.fits(lambda j, g: 1).message
    assert "return True or False" in check.fits(lambda j, g: "yes").message
    assert "Define a function" in check.fits(True).message
    assert "returns None" in check.fits(lambda j, g: None).message
    assert "Not answered yet" in check.fits(...).message


# ---------------------------------------------------------------- exercise 3
def right_energy(images, images_per_s, watts):
    return images / images_per_s / 3600 * watts / 1000


def test_energy_accepts_the_model_answer():
    fb = check.energy_kwh(right_energy)
    assert fb.ok and "upper-bound" in fb.message


@pytest.mark.parametrize("answer, hint", [
    (lambda n, r, w: n / r * w / 1000, "divide by 3600"),
    (lambda n, r, w: n / r / 3600 * w, "watt-hours"),
    (lambda n, r, w: n / r * w, "joules"),
    (lambda n, r, w: n / r / 3600 / 3600 * w / 1000, "divided by 3600 twice"),
    (lambda n, r, w: n * r / 3600 * w / 1000, "seconds = images / images_per_s"),
])
def test_energy_names_the_unit_slip(answer, hint):
    fb = check.energy_kwh(answer)
    assert not fb.ok and hint in fb.message


def test_energy_refuses_a_constant_right_for_one_run():
    assert not check.energy_kwh(lambda n, r, w: 0.4).ok  # right for the first run only
    assert "Define a function" in check.energy_kwh(0.4).message
    assert "Not answered yet" in check.energy_kwh(None).message


@pytest.mark.parametrize("answer", [
    lambda job, gb: job * 1.1 <= gb * 2**30,  # the margin as 10 % of the job
    lambda job, gb: job <= int(0.9 * gb) * 2**30,  # truncated to whole GB
    lambda job, gb: job <= 0.88 * gb * 2**30,  # another margin
    lambda job, gb: job <= 0.95 * gb * 1e9,  # decimal GB with another margin
])
def test_fits_refuses_answers_that_differ_only_near_the_edge(answer):
    assert not check.fits(answer).ok


def test_fits_names_a_margin_put_on_the_job():
    fb = check.fits(lambda job, gb: 0.9 * job <= gb * 2**30)
    assert not fb.ok and "belongs to the memory" in fb.message
