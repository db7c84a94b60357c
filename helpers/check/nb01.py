"""Checks for notebook 01 · deep-learning basics."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from helpers.check._feedback import Feedback, not_filled, number, whole_number, wrong

__all__ = ["mlp_param_count", "sigmoid_derivative", "dense_flops"]

# Exercise 1: 784 inputs -> Dense(256) -> Dense(10)
N_IN, N_HIDDEN, N_OUT = 784, 256, 10
# Exercise 3: Dense(128) on 784 inputs, a batch of 32
FLOPS_IN, FLOPS_UNITS, FLOPS_BATCH = 784, 128, 32


def mlp_param_count(answer: Any) -> Feedback:
    """Exercise 01.1: trainable parameters of ``784 inputs -> Dense(256) -> Dense(10)``.

    Each Dense layer has ``inputs * units`` weights plus ``units`` biases.

    Example:
        >>> mlp_param_count(784 * 256 + 256 + 256 * 10 + 10).ok
        True
    """
    value = whole_number(answer)
    if isinstance(value, Feedback):
        return value
    hidden_w, out_w = N_IN * N_HIDDEN, N_HIDDEN * N_OUT
    expected = hidden_w + N_HIDDEN + out_w + N_OUT
    if value == expected:
        return Feedback(True, f"Right: {hidden_w:,} + {N_HIDDEN} (hidden weights + biases) and "
                              f"{out_w:,} + {N_OUT} (output weights + biases) = {expected:,} parameters.")
    mistakes = {
        hidden_w + out_w: "You counted the weights but forgot the biases: each Dense layer also has one "
                          "bias per unit (256 + 10 more).",
        hidden_w + N_HIDDEN: "That is the hidden layer alone. Add the output layer: 256 x 10 weights + 10 biases.",
        out_w + N_OUT: "That is the output layer alone. Add the hidden layer: 784 x 256 weights + 256 biases.",
        hidden_w + N_IN + out_w + N_HIDDEN: "A bias belongs to each output unit, not to each input: "
                                            "Dense(256) has 256 biases, Dense(10) has 10.",
        N_IN * N_HIDDEN * N_OUT: "Layers add their parameters; they do not multiply. Count each layer "
                                 "(inputs x units + units) and add the two.",
        (N_IN + 1) * (N_HIDDEN + 1) * (N_OUT + 1): "Layers add their parameters; they do not multiply.",
        N_IN * N_OUT + N_OUT: "That is a single Dense(10) on the 784 inputs; this model has a hidden "
                              "layer of 256 units in between.",
        hidden_w + N_HIDDEN + out_w: "You forgot the output layer's 10 biases: each Dense layer has one bias "
                                     "per unit.",
        hidden_w + out_w + N_OUT: "You forgot the hidden layer's 256 biases: each Dense layer has one bias "
                                  "per unit.",
    }
    if value in mistakes:
        return wrong(mistakes[value])
    return wrong(f"{value:,} is not the count. Per Dense layer: inputs x units weights + units biases; "
                 "the hidden layer sees 784 inputs, the output layer sees the hidden layer's 256 outputs. "
                 "You can check with keras: model.count_params().")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z))


def sigmoid_derivative(answer: Any) -> Feedback:
    """Exercise 01.2: a NumPy function ``f(z)`` that returns the sigmoid's derivative element-wise.

    Example:
        >>> sigmoid_derivative(lambda z: (1 / (1 + np.exp(-z))) * (1 - 1 / (1 + np.exp(-z)))).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Answer with a function of z, e.g. `def answer_2(z): ...` or a lambda, "
                     f"not a {type(answer).__name__}.")
    z = np.linspace(-6.0, 6.0, 25)
    try:
        with np.errstate(all="ignore"):
            got = answer(z.copy())
    except Exception as exc:  # the learner's code: explain, never raise
        hint = (" Use np.exp, which works on whole arrays; math.exp takes one number."
                if isinstance(exc, TypeError) else "")
        return wrong(f"Calling your function on an array raised {type(exc).__name__}: {exc}.{hint}")
    if got is None:
        return wrong("Your function returns nothing: add `return`, e.g. `return s * (1 - s)`.")
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return wrong(f"Your function returned {type(got).__name__}; return a NumPy array of numbers.")
    if got.shape != z.shape:
        return wrong(f"Given an array of shape {z.shape}, your function returned shape {got.shape}: "
                     "compute the derivative element-wise, without sums or means.")
    if not np.all(np.isfinite(got)):
        return wrong("Your function returned NaN or infinity for z between -6 and 6: check the divisions.")
    s = _sigmoid(z)
    expected = s * (1 - s)
    if np.allclose(got, expected, rtol=1e-5, atol=1e-8):
        return Feedback(True, "Right: sigmoid'(z) = s(1 - s) with s = sigmoid(z). Its largest value is "
                              f"{expected.max():.2f} at z = 0: the sigmoid's own factor (at most 0.25) shrinks "
                              "the gradient by 4x or more at every sigmoid layer.")
    mistakes = [
        (s, "That is the sigmoid itself. The derivative is s * (1 - s) with s = sigmoid(z)."),
        (z * (1 - z), "You computed z * (1 - z): apply the sigmoid first, s = 1 / (1 + np.exp(-z)), "
                      "then return s * (1 - s)."),
        (-expected, "The sign is flipped: the sigmoid rises everywhere, so its derivative is positive."),
        ((z > 0).astype(float), "That is the derivative of ReLU (1 where z > 0). The sigmoid's is s * (1 - s)."),
        (s * (1 + s), "Close: it is s * (1 - s), with a minus."),
        (1 - s, "That is 1 - s (the same as sigmoid(-z) or exp(-z) / (1 + exp(-z))): multiply it by "
                "s = sigmoid(z)."),
    ]
    for values, message in mistakes:
        if np.allclose(got, values, rtol=1e-5, atol=1e-8):
            return wrong(message)
    worst = int(np.argmax(np.abs(got - expected)))
    return wrong(f"At z = {z[worst]:.1f} your function gives {got[worst]:.4g}; the derivative there is "
                 f"{expected[worst]:.4g}. Compute s = 1 / (1 + np.exp(-z)) and return s * (1 - s).")


def dense_flops(answer: Any) -> Feedback:
    """Exercise 01.3: FLOPs of ``Dense(128)`` on 784 inputs for a batch of 32 (bias ignored).

    Each output value needs 784 multiply-adds, and one multiply-add is 2 FLOPs.

    Example:
        >>> dense_flops(2 * 784 * 128 * 32).ok
        True
    """
    macs_per_image = FLOPS_IN * FLOPS_UNITS
    expected = 2 * macs_per_image * FLOPS_BATCH
    scaled = number(answer) if not isinstance(answer, str) else None
    for unit, scale in (("GFLOPs (1e9)", 1e9), ("MFLOPs (1e6)", 1e6), ("GFLOPs counted as 2**30", 2**30)):
        if scaled is not None and scaled and math.isclose(scaled * scale, expected, rel_tol=1e-3):
            return wrong(f"{scaled:g} looks like {unit}: answer in FLOPs, the plain count, not in millions or "
                         "billions.")
    value = whole_number(answer)
    if isinstance(value, Feedback):
        return value
    if value == expected:
        return Feedback(True, f"Right: 2 x {FLOPS_IN} x {FLOPS_UNITS} x {FLOPS_BATCH} = {expected:,} FLOPs "
                              f"({expected // 2:,} multiply-adds).")
    mistakes: dict[int, str] = {
        macs_per_image * FLOPS_BATCH: "That counts multiply-adds (MACs). Each is two operations, a multiply "
                                      "and an add: multiply by 2.",
        2 * macs_per_image: "That is one image. The batch has 32: multiply by 32.",
        macs_per_image: "That is the multiply-adds of one image: times 2 FLOPs each, times 32 images.",
        expected + FLOPS_UNITS * FLOPS_BATCH: "You counted the bias additions too; the task leaves them out "
                                              "(they are 0.06 % of the work). Drop the + 128 x 32.",
        (FLOPS_IN + 1) * FLOPS_UNITS * 2 * FLOPS_BATCH: "You counted the bias as an extra input; the task "
                                                        "leaves the bias out.",
        2 * (FLOPS_IN + FLOPS_UNITS) * FLOPS_BATCH: "Inputs and units multiply: each of the 128 outputs "
                                                    "needs all 784 inputs.",
        3 * expected: "That is a training step (forward + backward, about 3x the forward pass); the task asks for "
                      "the forward pass only.",
        2 * macs_per_image * (FLOPS_BATCH - 1): "That counts 31 images: the batch has 32.",
    }
    if value in mistakes:
        return wrong(mistakes[value])
    return wrong(f"{value:,} is not it. Each of the {FLOPS_UNITS} outputs of each image needs {FLOPS_IN} "
                 "multiply-adds; a multiply-add is 2 FLOPs; the batch has 32 images.")
