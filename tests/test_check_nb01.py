"""Exercise feedback of notebook 01."""

import math

import numpy as np
import pytest

from helpers.check import nb01 as check


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


@pytest.mark.parametrize("check_fn", [check.mlp_param_count, check.sigmoid_derivative, check.dense_flops])
def test_placeholder_asks_for_an_answer(check_fn):
    for placeholder in (..., None):
        fb = check_fn(placeholder)
        assert not fb.ok and "Not answered yet" in fb.message


def test_param_count_accepts_weights_plus_biases_of_both_layers():
    right = 784 * 256 + 256 + 256 * 10 + 10
    assert check.mlp_param_count(right).ok
    assert check.mlp_param_count(np.int64(right)).ok and check.mlp_param_count(float(right)).ok


@pytest.mark.parametrize(("answer", "hint"), [
    (784 * 256 + 256 * 10, "forgot the biases"),
    (784 * 256 + 256, "hidden layer alone"),
    (256 * 10 + 10, "output layer alone"),
    (784 * 256 + 784 + 256 * 10 + 256, "not to each input"),
    (784 * 256 * 10, "do not multiply"),
    (784 * 10 + 10, "single Dense(10)"),
    (12345, "inputs x units weights + units biases"),
    ("203530", "whole number"),
    (203530.5, "whole number"),
    (True, "whole number"),
])
def test_param_count_explains_each_typical_mistake(answer, hint):
    fb = check.mlp_param_count(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_sigmoid_derivative_accepts_equivalent_formulas():
    assert check.sigmoid_derivative(lambda z: _sigmoid(z) * (1 - _sigmoid(z))).ok
    assert check.sigmoid_derivative(lambda z: np.exp(-z) / (1 + np.exp(-z)) ** 2).ok
    assert "the sigmoid's own factor (at most 0.25)" in check.sigmoid_derivative(_sigmoid_grad).message


def _sigmoid_grad(z):
    s = _sigmoid(z)
    return s * (1 - s)


def test_sigmoid_derivative_without_return_is_told_to_add_return():
    def forgot_return(z):
        s = _sigmoid(z)
        s * (1 - s)  # noqa: B018 - the learner's typical slip: computed, not returned

    fb = check.sigmoid_derivative(forgot_return)
    assert not fb.ok and "returns nothing: add `return`" in fb.message, fb.message


@pytest.mark.parametrize(("answer", "hint"), [
    (_sigmoid, "sigmoid itself"),
    (lambda z: z * (1 - z), "apply the sigmoid first"),
    (lambda z: -_sigmoid(z) * (1 - _sigmoid(z)), "sign is flipped"),
    (lambda z: (z > 0).astype(float), "derivative of ReLU"),
    (lambda z: _sigmoid(z) * (1 + _sigmoid(z)), "with a minus"),
    (lambda z: 1 - _sigmoid(z), "1 - s"),
    (lambda z: np.exp(-z) / (1 + np.exp(-z)), "1 - s"),
    (lambda z: _sigmoid(z) ** 2, "the derivative there is"),
    (lambda z: 1 / (1 + math.exp(-z)), "np.exp"),
    (lambda z: float(np.mean(z)), "element-wise"),
    (lambda z: z / 0, "NaN or infinity"),
    (lambda z: "s(1-s)", "NumPy array of numbers"),
    (0.25, "function of z"),
])
def test_sigmoid_derivative_explains_each_typical_mistake(answer, hint):
    fb = check.sigmoid_derivative(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_dense_flops_accepts_two_flops_per_multiply_add_for_the_whole_batch():
    assert check.dense_flops(2 * 784 * 128 * 32).ok
    assert "3,211,264 multiply-adds" in check.dense_flops(6_422_528).message


@pytest.mark.parametrize(("answer", "hint"), [
    (784 * 128 * 32, "multiply by 2"),
    (2 * 784 * 128, "multiply by 32"),
    (784 * 128, "times 32 images"),
    (2 * 784 * 128 * 32 + 128 * 32, "bias additions"),
    (2 * 785 * 128 * 32, "bias as an extra input"),
    (2 * (784 + 128) * 32, "Inputs and units multiply"),
    (42, "a multiply-add is 2 FLOPs"),
    ([1], "whole number"),
])
def test_dense_flops_explains_each_typical_mistake(answer, hint):
    fb = check.dense_flops(answer)
    assert not fb.ok and hint in fb.message, fb.message


# ------------------------------------------------ more plausible wrong answers and right ones written differently
@pytest.mark.parametrize(("answer", "hint"), [
    (784 * 256 + 256 * 10, "forgot the biases"),
    (784 * 256 + 256 + 256 * 10, "output layer's 10 biases"),
    (784 * 256 + 256 * 10 + 10, "hidden layer's 256 biases"),
    (784 * 256 * 10, "do not multiply"),
    (784 * 10 + 10, "single Dense(10)"),
    (203530.5, "whole number"),
    ("203530", "whole number"),
])
def test_param_count_refuses_plausible_wrong_answers_naming_the_mistake(answer, hint):
    fb = check.mlp_param_count(answer)
    assert not fb.ok and hint in fb.message, fb.message


@pytest.mark.parametrize("answer", [(784 + 1) * 256 + (256 + 1) * 10, 203530.0])
def test_param_count_accepts_right_answers_written_differently(answer):
    assert check.mlp_param_count(answer).ok


@pytest.mark.parametrize(("answer", "hint"), [
    (2 * 784 * 128 * 32 / 1e9, "GFLOPs"),  # the right count in the wrong unit
    (2 * 784 * 128 * 32 / 1e6, "MFLOPs"),
    (3 * 2 * 784 * 128 * 32, "forward + backward"),
    (2 * 784 * 128 * 31, "31 images"),
    (784 * 128 * 32, "multiply-adds (MACs)"),
    (2 * 784 * 128, "That is one image"),
    (2 * 785 * 128 * 32, "bias as an extra input"),
    ("6422528", "whole number"),
])
def test_dense_flops_refuses_plausible_wrong_answers_naming_the_mistake(answer, hint):
    fb = check.dense_flops(answer)
    assert not fb.ok and hint in fb.message, fb.message


@pytest.mark.parametrize("answer", [32 * 128 * 784 * 2, np.int64(2 * 784) * 128 * 32])
def test_dense_flops_accepts_right_answers_written_differently(answer):
    assert check.dense_flops(answer).ok


@pytest.mark.parametrize(("answer", "hint"), [
    (lambda z: 1 / (1 + np.exp(-z)), "sigmoid itself"),
    (lambda z: -(1 / (1 + np.exp(-z))) * (1 - 1 / (1 + np.exp(-z))), "sign is flipped"),
    (lambda z: np.maximum(z, 0) > 0, "derivative of ReLU"),
    (lambda z: np.exp(-z) / (1 + np.exp(-z)), "1 - s"),
    (lambda z: np.sum(_sigmoid(z) * (1 - _sigmoid(z))), "element-wise"),
    (lambda z: 1 / (1 + math.exp(-z)), "np.exp"),
])
def test_sigmoid_derivative_refuses_plausible_wrong_answers_naming_the_mistake(answer, hint):
    fb = check.sigmoid_derivative(answer)
    assert not fb.ok and hint in fb.message, fb.message


@pytest.mark.parametrize("answer", [
    lambda z: np.exp(z) / (1 + np.exp(z)) ** 2,
    lambda z: 0.25 * (1 - np.tanh(z / 2) ** 2),
])
def test_sigmoid_derivative_accepts_right_answers_written_differently(answer):
    assert check.sigmoid_derivative(answer).ok
