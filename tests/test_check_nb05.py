"""Tests for the exercise checks of notebook 05: model answers pass, constants and usual mistakes are explained."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers.check import nb05 as check


def placeholder(*args):  # what the exercise cell defines before the learner writes anything
    ...


def test_checks_are_listed():
    assert set(check.__all__) == {"updates_in_budget", "scaled_warmup_lr", "max_batch_that_fits", "accumulation_steps",
                                  "accumulated_lr"}


@pytest.mark.parametrize("fn", [check.updates_in_budget, check.scaled_warmup_lr, check.max_batch_that_fits,
                                check.accumulation_steps, check.accumulated_lr])
def test_every_check_explains_placeholders_non_functions_and_errors(fn):
    assert "Not answered" in fn(...).message
    assert "returns None" in fn(placeholder).message
    assert "Define a function" in fn(626).message
    raised = fn(lambda *args: 1 / 0)
    assert not raised.ok and "ZeroDivisionError" in raised.message
    assert "return a number" in fn(lambda *args: "many").message


# ---------------------------------------------------------------- exercise 1
def test_updates_in_budget_accepts_the_model_answer_and_numpy_ints():
    fb = check.updates_in_budget(lambda n, b, e: e * math.ceil(n / b))
    assert fb.ok and "626" in fb.message and "40 updates" in fb.message
    assert check.updates_in_budget(lambda n, b, e: np.int64(e * -(-n // b))).ok
    assert check.updates_in_budget(lambda n, b, e: e * ((n + b - 1) // b)).ok
    assert check.updates_in_budget(lambda n, b, e: sum(len(range(0, n, b)) for _ in range(e))).ok


@pytest.mark.parametrize("answer", [
    lambda n, b, e: e * np.ceil(n / b),  # NumPy's ceil returns a float64
    lambda n, b, e: float(e * math.ceil(n / b)),
])
def test_updates_in_budget_refuses_a_float_count_naming_the_type(answer):
    fb = check.updates_in_budget(answer)
    assert not fb.ok and "Your values are right" in fb.message and "np.ceil" in fb.message, fb.message
    assert "a NumPy integer passes too" in fb.message, fb.message  # the type rule and the hint agree


def test_updates_in_budget_refuses_this_runs_constant():
    fb = check.updates_in_budget(lambda n, b, e: 626)
    assert not fb.ok and "updates_in_budget(10000, 512, 2) gave 626; it is 40" in fb.message


@pytest.mark.parametrize("answer, hint", [
    (lambda n, b, e: e * (n // b), "rounded down"),
    (lambda n, b, e: math.ceil(n * e / b), "rounded once over all epochs"),
    (lambda n, b, e: n * e / b, "round each epoch's steps up"),
    (lambda n, b, e: math.ceil(n / b), "one epoch's updates"),
    (lambda n, b, e: n * e, "counts samples"),
    (lambda n, b, e: e * n // b, "rounded down"),
    (lambda n, b, e: e * int(n / b), "rounded down"),  # int() truncates
    (lambda n, b, e: e * round(n / b), "nearest whole number"),  # 312.5 rounds to 312
    (lambda n, b, e: e * (n // b + 1), "even when the batch divides the data"),  # off by one at 1000 / 1000
    (lambda n, b, e: math.ceil(n / b) + e, "added the epochs"),
    (lambda n, b, e: e * math.ceil(b / n), "divided the batch by the data"),
])
def test_updates_in_budget_names_the_mistake(answer, hint):
    fb = check.updates_in_budget(answer)
    assert not fb.ok and hint in fb.message, fb.message


# ---------------------------------------------------------------- exercise 2
def model_lr(step, base_lr, base_batch, batch, warmup_steps):
    target = base_lr * batch / base_batch
    return base_lr + (target - base_lr) * min(1.0, step / warmup_steps)


def test_scaled_warmup_lr_accepts_the_model_answer():
    fb = check.scaled_warmup_lr(model_lr)
    assert fb.ok and "0.16" in fb.message


@pytest.mark.parametrize("convert, kind", [(np.float32, "numpy.float32"), (np.float64, "numpy.float64"),
                                           (lambda v: np.array(v), "numpy.ndarray")])
def test_scaled_warmup_lr_refuses_numpy_numbers_naming_the_type(convert, kind):
    # the exercise asks for plain Python numbers: a NumPy scalar with the right value is refused, named
    fb = check.scaled_warmup_lr(lambda *a: convert(model_lr(*a)))
    assert not fb.ok and kind in fb.message and "plain Python number" in fb.message, fb.message


def test_scaled_warmup_lr_refuses_a_tensor_naming_its_type():
    tf = pytest.importorskip("tensorflow")
    fb = check.scaled_warmup_lr(lambda *a: tf.constant(model_lr(*a)))
    assert not fb.ok and "EagerTensor" in fb.message and "plain Python number" in fb.message, fb.message


def test_scaled_warmup_lr_accepts_answers_written_otherwise():
    def with_if(step, base_lr, base_batch, batch, warmup_steps):
        target = base_lr * batch / base_batch
        if step >= warmup_steps:
            return target
        return base_lr * (1 - step / warmup_steps) + target * step / warmup_steps  # a weighted mean

    assert check.scaled_warmup_lr(with_if).ok
    assert check.scaled_warmup_lr(lambda s, lr, b0, b, w: float(np.interp(s, [0, w], [lr, lr * b / b0]))).ok


def test_scaled_warmup_lr_refuses_this_runs_constant():
    fb = check.scaled_warmup_lr(lambda *a: 0.16)
    assert not fb.ok and "the target is" in fb.message


@pytest.mark.parametrize("answer, hint", [
    (lambda s, lr, b0, b, w: lr, "never changes"),
    (lambda s, lr, b0, b, w: lr * b / b0, "without warm-up"),
    (lambda s, lr, b0, b, w: lr * b / b0 * min(1, s / w), "starts from 0"),
    (lambda s, lr, b0, b, w: lr + (lr * b / b0 - lr) * s / w, "keeps rising"),
    (lambda s, lr, b0, b, w: lr + (lr * b / b0 - lr) * min(1, (s + 1) / w), "Off by one"),
    (lambda s, lr, b0, b, w: lr + (lr * b0 / b - lr) * min(1, s / w), "wrong way"),
    (lambda s, lr, b0, b, w: lr + (lr * math.sqrt(b / b0) - lr) * min(1, s / w), "square-root"),
    (lambda s, lr, b0, b, w: lr + (lr * b / b0 - lr) * min(1, s // w), "step // warmup_steps"),  # integer division
    (lambda s, lr, b0, b, w: lr + (lr * (b // b0) - lr) * min(1, s / w), "rounds the ratio down"),
    (lambda s, lr, b0, b, w: lr + (lr * b - lr) * min(1, s / w), "divide by base_batch too"),
    (lambda s, lr, b0, b, w: lr + (lr * b / b0 - lr) * min(1, s / (w - 1)), "one step early"),
    (lambda s, lr, b0, b, w: round(lr + (lr * b / b0 - lr) * min(1, s / w), 3), "rounded the rate to 3 decimals"),
    (lambda s, lr, b0, b, w: round(lr + (lr * b / b0 - lr) * min(1, s / w), 2), "rounded the rate to 2 decimals"),
])
def test_scaled_warmup_lr_names_the_mistake(answer, hint):
    fb = check.scaled_warmup_lr(answer)
    assert not fb.ok and hint in fb.message, fb.message


# ---------------------------------------------------------------- exercise 3
def test_max_batch_that_fits_accepts_the_model_answers():
    fb = check.max_batch_that_fits(lambda b, f, m: max(0, math.floor((m - f) / b)))
    assert fb.ok and "79,750" in fb.message
    assert check.max_batch_that_fits(lambda b, f, m: max(0, (m - f) // b)).ok
    assert check.max_batch_that_fits(lambda b, f, m: int(max(0.0, np.floor((m - f) / b)))).ok


def test_max_batch_that_fits_accepts_a_loop_that_grows_the_batch():
    def grow(b, f, m):  # doubling, then one sample at a time: slow, but right
        batch, step = 0, 1
        while step:
            if f + (batch + step) * b <= m:
                batch, step = batch + step, step * 2
            else:
                step //= 2
        return batch

    assert check.max_batch_that_fits(grow).ok


@pytest.mark.parametrize("answer", [
    lambda b, f, m: float(max(0, (m - f) // b)),  # a float that happens to be whole
    lambda b, f, m: np.floor(max(0, m - f) / b),  # NumPy's floor returns a float64
])
def test_max_batch_that_fits_refuses_a_float_batch_naming_the_type(answer):
    fb = check.max_batch_that_fits(answer)
    assert not fb.ok and "Your values are right" in fb.message and "float" in fb.message, fb.message


def test_max_batch_that_fits_refuses_a_constant():
    fb = check.max_batch_that_fits(lambda b, f, m: 1024)
    assert not fb.ok and "a 16 GB T4 training a made-up CNN" in fb.message and "79,750" in fb.message


def test_max_batch_that_fits_calls_its_t4_job_made_up_not_this_notebooks_cnn():
    # this notebook's CNN measured about 150 KiB per sample on the page; the check's job is its own, made up
    for fb in (check.max_batch_that_fits(lambda b, f, m: 1024),
               check.max_batch_that_fits(lambda b, f, m: max(0, (m - f) // b))):
        assert "this notebook" not in fb.message and "made-up" in fb.message, fb.message


def test_max_batch_that_fits_accepts_numpy_integers_and_says_they_pass():
    assert check.max_batch_that_fits(lambda b, f, m: np.int64(max(0, (m - f) // b))).ok
    fb = check.max_batch_that_fits(lambda b, f, m: float(max(0, (m - f) // b)))
    assert not fb.ok and "a NumPy integer passes too" in fb.message, fb.message


def test_max_batch_that_fits_refuses_one_when_less_than_a_sample_is_left():
    # clamps at 1 only when the fixed part fits: wrong on the card with room for half a sample
    fb = check.max_batch_that_fits(lambda b, f, m: max(1, (m - f) // b) if m > f else 0)
    assert not fb.ok and "less than one sample" in fb.message and "return 0" in fb.message, fb.message


@pytest.mark.parametrize("answer, hint", [
    (lambda b, f, m: m // b, "forgot the fixed part"),
    (lambda b, f, m: (m - f) // b, "returns a negative batch"),
    (lambda b, f, m: round((m - f) / b), "nearest batch"),
    (lambda b, f, m: math.ceil((m - f) / b), "rounded up"),
    (lambda b, f, m: (m - f) / b, "whole number"),
    (lambda b, f, m: 2 ** int(math.log2(n)) if (n := (m - f) // b) > 0 else 0, "power of two"),
    (lambda b, f, m: max(0, math.ceil((m - f) / b) - 1), "exactly"),
    (lambda b, f, m: max(1, (m - f) // b), "not max(1, ...)"),  # a clamp at the wrong value
    (lambda b, f, m: int((m - f) / b), "returns a negative batch"),  # int() truncates toward zero: -333, still negative
    (lambda b, f, m: max(0, int((0.9 * m - f) // b)), "10 % of the memory free"),  # headroom nobody asked for
    (lambda b, f, m: max(0, m // b - f), "subtracted fixed_bytes from a number of samples"),  # units
    (lambda b, f, m: max(0, int((m - f) // (b * 2**30 / 1e9))), "mixed GB and GiB"),  # a unit conversion
])
def test_max_batch_that_fits_names_the_mistake(answer, hint):
    fb = check.max_batch_that_fits(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_scaled_warmup_lr_refuses_a_staircase_with_the_numbers_of_the_first_case_it_fails():
    fb = check.scaled_warmup_lr(lambda s, lr, b0, b, w: lr + (lr * b / b0 - lr) * min(1.0, math.floor(4 * s / w) / 4))
    assert not fb.ok and "at step 7 of a 20-step warm-up you are 35% of the way" in fb.message, fb.message


# ---------------------------------------------------------------- exercise 4
def _fewest(t, f):  # the fewest equal micro-batches that fit, written as a search over micro-batch sizes
    return t // max(d for d in range(1, min(t, f) + 1) if t % d == 0)


def _powers_of_two(t, f):  # a plausible loop that tries 1, 2, 4, ... steps
    k = 1
    while t % k or t // k > f:
        k *= 2
    return k


def test_accumulation_steps_accepts_the_model_answer_and_answers_written_otherwise():
    fb = check.accumulation_steps(lambda t, f: next(k for k in range(1, t + 1) if t % k == 0 and t // k <= f))
    assert fb.ok and "4 steps of 250" in fb.message and "gradient_accumulation_steps=None" in fb.message, fb.message
    assert check.accumulation_steps(_fewest).ok
    assert check.accumulation_steps(lambda t, f: np.int64(_fewest(t, f))).ok  # a NumPy integer passes


@pytest.mark.parametrize("answer, hint", [
    (lambda t, f: math.ceil(t / f), "do not always split the batch into equal micro-batches"),  # ceil, no divisor
    (lambda t, f: t // f, "You rounded down"),
    (lambda t, f: t // f + 1, "One step too many when largest_fit divides the batch exactly"),  # off by one
    (lambda t, f: t / f, "A number of steps is a whole number"),  # true division
    (lambda t, f: t // _fewest(t, f), "You returned the micro-batch"),  # the other quantity
    (lambda t, f: max(2, _fewest(t, f)), "Keras refuses gradient_accumulation_steps=1"),  # Keras' minimum
    (lambda t, f: _fewest(t, f) if t > f else 0, "it takes 1 step, not 0"),  # the boundary where it fits
    (_powers_of_two, "You tried powers of two only"),
    (lambda t, f: _fewest(t, f - 1) if f > 1 else 1, "Use <=, not <"),  # a micro-batch of exactly largest_fit fits
    (lambda t, f: float(_fewest(t, f)), "Your values are right"),  # the right values as floats
    (lambda t, f: np.ceil(t / f), "equal micro-batches"),  # NumPy's float ceil, and no divisor: the bigger mistake
])
def test_accumulation_steps_names_the_mistake(answer, hint):
    fb = check.accumulation_steps(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_accumulation_steps_refuses_this_runs_constant():
    fb = check.accumulation_steps(lambda t, f: 4)  # 2048 as 4 steps of 512, this run's answer on a CPU
    assert not fb.ok and "accumulation_steps(768, 256) gave 4; it is 3" in fb.message, fb.message


# ---------------------------------------------------------------- exercise 5
def test_accumulated_lr_accepts_the_model_answer_and_answers_written_otherwise():
    fb = check.accumulated_lr(lambda lr, b0, m, k: lr * (m * k) / b0)
    assert fb.ok and "the rule gives 0.64" in fb.message and "k * W steps" in fb.message, fb.message
    assert check.accumulated_lr(lambda lr, b0, m, k: lr / b0 * m * k).ok
    assert check.accumulated_lr(lambda lr, b0, m, k: float(np.float32(lr) * (m * k / b0))).ok  # within rel 1e-6


@pytest.mark.parametrize("answer, hint", [
    (lambda lr, b0, m, k: lr * m / b0, "You scaled for the micro-batch"),
    (lambda lr, b0, m, k: lr * k, "You multiplied by k only"),
    (lambda lr, b0, m, k: lr, "Your rate does not change"),
    (lambda lr, b0, m, k: lr * b0 / (m * k), "You scaled the wrong way"),
    (lambda lr, b0, m, k: lr * m * k * k / b0, "One k too many"),  # as if Keras summed the k gradients
    (lambda lr, b0, m, k: lr * (m * k // b0), "rounds the ratio down"),  # integer division
    (lambda lr, b0, m, k: lr * math.sqrt(m * k / b0), "square-root rule"),
    (lambda lr, b0, m, k: lr * m * k, "Divide by base_batch too"),
])
def test_accumulated_lr_names_the_mistake(answer, hint):
    fb = check.accumulated_lr(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_accumulated_lr_refuses_this_runs_constant_and_a_rounded_rate():
    fb = check.accumulated_lr(lambda lr, b0, m, k: 0.64)  # this CPU run's answer
    assert not fb.ok and "accumulated_lr(0.1, 256, 64, 8) gave 0.64; it is 0.2" in fb.message, fb.message
    fb = check.accumulated_lr(lambda lr, b0, m, k: round(lr * m * k / b0, 2))  # rounded for display
    assert not fb.ok and "You rounded the rate to 2 decimals" in fb.message, fb.message


@pytest.mark.parametrize("decimals", [4, 5])
def test_accumulated_lr_refuses_a_rate_rounded_to_four_or_five_decimals(decimals):
    # Every case was exact at 4 decimals, so round(rate, 4) passed; 0.03 x 35 x 2 / 96 = 0.021875 is not.
    fb = check.accumulated_lr(lambda lr, b0, m, k: round(lr * m * k / b0, decimals))
    assert not fb.ok and f"You rounded the rate to {decimals} decimals" in fb.message, fb.message
    assert "accumulated_lr(0.03, 96, 35, 2) is 0.021875" in fb.message, fb.message


def test_accumulated_lr_names_this_runs_split_in_its_praise():
    fb = check.accumulated_lr(lambda lr, b0, m, k: lr * m * k / b0)
    assert "2 steps of 1024 from base batch 32" in fb.message, fb.message  # the CPU run's split, as on the page
