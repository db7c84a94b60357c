"""Exercise feedback of notebook 06: function answers run on made-up gradients and loss-scaling sequences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers.check import nb06 as check


def right_min_loss_scale(gradient):
    scale = 1
    while abs(gradient) * scale < float(np.finfo(np.float16).smallest_normal):
        scale *= 2
    return scale


def right_next_scale(scale, finite, good_steps, growth_steps):
    if not finite:
        return scale / 2, 0, False
    if good_steps + 1 == growth_steps:
        return scale * 2, 0, True
    return scale, good_steps + 1, True


# ---------------------------------------------------------------- exercise 1
def test_min_loss_scale_accepts_the_model_answer_and_other_correct_forms():
    assert check.min_loss_scale(right_min_loss_scale).ok
    closed_form = lambda g: 2 ** max(0, math.ceil(-14 - math.log2(abs(g))))  # noqa: E731
    assert check.min_loss_scale(closed_form).ok
    assert check.min_loss_scale(lambda g: np.float64(right_min_loss_scale(g))).ok


def test_min_loss_scale_refuses_a_constant():
    for constant in (2**15, 8192):
        fb = check.min_loss_scale(lambda g, c=constant: c)
        assert not fb.ok and "expected" in fb.message
    assert "Define a function" in check.min_loss_scale(8192).message


@pytest.mark.parametrize(("answer", "hint"), [
    (lambda g: right_min_loss_scale(g) // 2 or 1, "one doubling short"),
    (lambda g: int(math.log2(right_min_loss_scale(g))), "exponent"),
    (lambda g: right_min_loss_scale(g) if g > 0 else 1, "negative"),
    (lambda g: check._reference_scale(g, np.finfo(np.float16).smallest_subnormal), "smallest normal"),
    (lambda g: 2.0**-14 / abs(g), "powers of two"),
    (lambda g: 4 * right_min_loss_scale(g), "larger than needed"),
    (lambda g: 2 ** max(0, math.floor(-14 - math.log2(abs(g))) + 1), "not <="),  # `<=` for `<`
    (lambda g: 2.0 ** math.ceil(-14 - math.log2(abs(g))), "k >= 0"),  # forgets max(0, ...): 2**-14 for g=1
    (lambda g: check._reference_scale(g, 2.0**-126), "bfloat16"),  # bfloat16's smallest normal
    (lambda g: check._reference_scale(g, 65504.0), "65504"),  # float16's largest number
    (lambda g: 1, "no scaling"),
])
def test_min_loss_scale_explains_plausible_mistakes(answer, hint):
    fb = check.min_loss_scale(answer)
    assert not fb.ok and hint in fb.message, fb.message


def _loop(threshold, *, use_abs=True, start=1):
    def min_loss_scale(gradient):
        scale = start
        while (abs(gradient) if use_abs else gradient) * scale < threshold:
            scale *= 2
        return scale
    return min_loss_scale


def float16_closed_form(g):  # follows the pointer to np.finfo: under NumPy 2 the division runs in float16
    return 2 ** max(0, math.ceil(math.log2(np.finfo(np.float16).smallest_normal / abs(g))))


@pytest.mark.parametrize(("answer", "hint"), [
    (_loop(6e-5), "rounded decimal"),  # 2**-14 written as a decimal: one doubling short near it
    (_loop(6.1e-5), "rounded decimal"),
    (_loop(6.1035e-5), "rounded decimal"),  # below 2**-14 = 6.103515625e-05 by 1.5625e-10
    (_loop(6.10351e-5), "rounded decimal"),  # below it by 5.625e-11
    (_loop(np.finfo(np.float16).smallest_normal), "comparison ran in float16"),  # rounds 6.1034e-5 up to 2**-14
    (_loop(np.float16(2.0**-14), start=1.0), "comparison ran in float16"),
    (_loop(6.104e-5), "rounded decimal above it"),
    (float16_closed_form, "ran in float16"),  # one doubling short at 3e-8, OverflowError at 1e-8
    (lambda g: 2 ** max(0, int(np.ceil(np.log2(np.finfo(np.float16).smallest_normal / abs(g))))), "ran in float16"),
    (lambda g: np.float16(2) ** max(0, math.ceil(-14 - math.log2(abs(g)))), "np.float16"),  # returns float16
    (_loop(2.0**-14, use_abs=False), "abs() is missing"),  # int scale: OverflowError: int too large
    (lambda g: 2 ** max(0, math.ceil(-14 - math.log2(g))), "abs() is missing"),  # ValueError: math domain error
    (lambda g: 2 ** round(-14 - math.log2(abs(g))) if abs(g) < 2**-14 else 1, "one doubling short"),  # round
    (lambda g: 2 ** max(0, math.floor(-14 - math.log2(abs(g)))), "one doubling short"),  # floor for ceil
    (lambda g: max(1, 2 ** max(0, math.ceil(-14 - math.log2(abs(g)))) // 2), "one doubling short"),
])
def test_min_loss_scale_names_the_mistake_actually_made(answer, hint):
    fb = check.min_loss_scale(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_min_loss_scale_float16_hint_does_not_blame_the_comparison():
    fb = check.min_loss_scale(float16_closed_form)
    assert "(>=)" not in fb.message and "float(np.finfo(np.float16).smallest_normal)" in fb.message
    no_abs = check.min_loss_scale(_loop(2.0**-14, use_abs=False))
    assert "int too large" in no_abs.message and "abs(gradient) * scale" in no_abs.message


def test_min_loss_scale_accepts_right_answers_written_differently():
    rights = [
        _loop(2.0**-14),  # the exact threshold as a power of two
        _loop(float(np.finfo(np.float16).smallest_normal), start=1.0),  # the notebook's pointer, a float scale
        _loop(np.float64(np.finfo(np.float16).smallest_normal)),  # converted to a 64-bit NumPy float
        lambda g: 2 ** max(0, math.ceil(math.log2(float(np.finfo(np.float16).smallest_normal) / abs(g)))),
        lambda g: 1 << max(0, math.ceil(-14 - math.log2(abs(g)))),  # a bit shift
        lambda g: next(2**k for k in range(200) if abs(g) * 2**k >= 2**-14),  # a generator, >=
    ]
    for answer in rights:
        fb = check.min_loss_scale(answer)
        assert fb.ok, fb.message


def test_min_loss_scale_survives_errors_none_and_endless_loops():
    assert "raised ZeroDivisionError" in check.min_loss_scale(lambda g: 1 / 0).message
    assert "returns None" in check.min_loss_scale(lambda g: None).message
    assert "Not answered yet" in check.min_loss_scale(...).message

    def endless(gradient):  # forgets abs(): a negative gradient never reaches the threshold
        scale = 1.0
        while gradient * scale < 2.0**-14:
            scale *= 2
        return scale

    fb = check.min_loss_scale(endless)
    assert not fb.ok and "did not return" in fb.message and "abs(gradient)" in fb.message


# ---------------------------------------------------------------- exercise 2
def test_next_scale_accepts_the_model_answer():
    assert check.next_scale(right_next_scale).ok


def test_next_scale_wants_the_texts_types_a_tuple_and_a_bool():
    fb = check.next_scale(lambda *a: list(right_next_scale(*a)))
    assert not fb.ok and "return a tuple" in fb.message, fb.message
    fb = check.next_scale(lambda *a: (*right_next_scale(*a)[:2], int(right_next_scale(*a)[2])))  # 1/0 for applied
    assert not fb.ok and "not 1 or 0" in fb.message, fb.message
    fb = check.next_scale(lambda *a: (*right_next_scale(*a)[:2], float(right_next_scale(*a)[2])))  # 1.0/0.0
    assert not fb.ok and "applied is a bool" in fb.message, fb.message
    assert check.next_scale(lambda *a: (*right_next_scale(*a)[:2], np.bool_(right_next_scale(*a)[2]))).ok


def test_next_scale_refuses_constants_and_wrong_shapes():
    assert not check.next_scale(lambda s, f, g, n: (32768.0, 0, True)).ok
    assert "three values" in check.next_scale(lambda s, f, g, n: s / 2).message
    assert "three values" in check.next_scale(lambda *a: right_next_scale(*a)[:2]).message  # the old pair
    assert "a bool" in check.next_scale(lambda *a: (*right_next_scale(*a)[:2], "yes")).message
    assert "Define a function" in check.next_scale((16384.0, 0)).message
    assert "returns None" in check.next_scale(lambda s, f, g, n: None).message


@pytest.mark.parametrize(("kind", "hint"), [
    ("always_double", "after every finite step"),
    ("no_reset", "starts again from 0"),
    ("late", "one step late"),
])
def test_next_scale_explains_plausible_mistakes(kind, hint):
    fb = check.next_scale(check._variant(kind))
    assert not fb.ok and hint in fb.message, fb.message


def test_next_scale_accepts_right_answers_written_differently():
    def counted_first(scale, finite, good_steps, growth_steps):
        if finite:
            good = good_steps + 1
            return (scale * 2, 0, True) if good >= growth_steps else (scale, good, True)
        return 0.5 * scale, 0, False

    def one_expression(scale, finite, good_steps, growth_steps):
        grow = finite and good_steps + 1 == growth_steps
        return (scale * (2 if grow else 1) if finite else scale / 2), (0 if grow or not finite else good_steps + 1), \
            bool(finite)

    def applied_is_finite(scale, finite, good_steps, growth_steps):
        new_scale, new_good = right_next_scale(scale, finite, good_steps, growth_steps)[:2]
        return new_scale, new_good, finite

    for answer in (counted_first, one_expression, applied_is_finite):
        fb = check.next_scale(answer)
        assert fb.ok, fb.message


@pytest.mark.parametrize(("answer", "hint"), [
    (lambda s, f, g, n: (s // 2, 0, False) if not f else right_next_scale(s, f, g, n), "true division"),
    (lambda s, f, g, n: (float(int(s / 2)), 0, False) if not f else right_next_scale(s, f, g, n), "true division"),
    (lambda s, f, g, n: right_next_scale(s, f, g, 2000), "never doubled"),  # ignores growth_steps
    (lambda s, f, g, n: (s * 2, 0, True) if f and g + 2 >= n else right_next_scale(s, f, g, n), "one step early"),
    (lambda s, f, g, n: (s, 0, True) if f and g + 1 < n else right_next_scale(s, f, g, n), "counts finite steps"),
    (lambda s, f, g, n: (s * 2, g + 1, True) if f and g + 1 == n else right_next_scale(s, f, g, n),
     "counts finite steps"),  # no reset after doubling
])
def test_next_scale_names_the_mistake_actually_made(answer, hint):
    fb = check.next_scale(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_next_scale_explains_a_wrong_factor():
    fb = check.next_scale(lambda s, f, g, n: (s / 4, 0, False) if not f else right_next_scale(s, f, g, n))
    assert not fb.ok and "halves the scale" in fb.message
    fb = check.next_scale(lambda s, f, g, n: (s * 2, 0, False) if not f else right_next_scale(s, f, g, n))
    assert not fb.ok and "halves the scale" in fb.message  # doubles instead of halving


def test_next_scale_refuses_an_update_not_skipped_on_inf_or_nan():
    fb = check.next_scale(lambda s, f, g, n: (*right_next_scale(s, f, g, n)[:2], True))
    assert not fb.ok and "skips the update" in fb.message and "applied = False" in fb.message
    fb = check.next_scale(lambda s, f, g, n: right_next_scale(s, True, g, n))  # inf/NaN treated as finite
    assert not fb.ok and "treated the inf/NaN step as a finite one" in fb.message
    fb = check.next_scale(lambda s, f, g, n: (*right_next_scale(s, f, g, n)[:2], False))
    assert not fb.ok and "applied = True" in fb.message


def test_the_reference_rule_is_what_keras_loss_scale_optimizer_does():
    """Drive a real LossScaleOptimizer over the check's sequences: same scale after every step."""
    import keras

    for growth, start, steps in check.SEQUENCES:
        w = keras.Variable(np.ones(2, dtype="float32"))
        opt = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=start,
                                                  dynamic_growth_steps=growth)
        opt.build([w])
        expected, _ = check._trajectory(check._reference_next, growth, start, steps)
        for finite, (scale, _, applied) in zip(steps, expected, strict=True):
            grad = np.ones(2, dtype="float32") if finite else np.array([np.inf, 1.0], dtype="float32")
            before = w.numpy().copy()
            opt.apply_gradients([(grad, w)])
            assert float(opt.dynamic_scale.numpy()) == scale, (growth, start, steps)
            assert (not np.array_equal(w.numpy(), before)) == applied, (growth, start, steps)
