"""Checks of notebook 07: model answers pass; constants and plausible mistakes are refused with the right hint."""

import numpy as np
import pytest

from helpers.check import nb07 as check


# --------------------------------------------------------------------------- exercise 1: per_replica_batch
def model_split(global_batch, replicas):
    if global_batch % replicas:
        raise ValueError("does not split evenly")
    return global_batch // replicas


def test_per_replica_batch_model_answer_and_variants_pass():
    assert check.per_replica_batch(model_split).ok

    def true_division(global_batch, replicas):
        if global_batch % replicas != 0:
            raise ValueError("uneven")
        return global_batch / replicas  # a whole float, 128.0

    def with_divmod(global_batch, replicas):
        per, rest = divmod(global_batch, replicas)
        if rest:
            raise ValueError("uneven")
        return np.int64(per)

    for answer in (true_division, with_divmod):
        fb = check.per_replica_batch(answer)
        assert fb.ok, (answer.__name__, fb.message)


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    (None, "Not answered yet"),
    (64, "Answer with a function"),
    (lambda g, r: None, "returns None"),
    (lambda g, r: 64, "whatever the inputs"),
    (lambda g, r: g // r, "do not split evenly"),  # rounds instead of refusing
    (lambda g, r: round(g / r), "do not split evenly"),
    (lambda g, r: g / r, "do not split evenly"),
    (lambda g, r: g * r, "You multiplied"),
    (lambda g, r: g if r > 1 else g + 1, "That is the global batch"),
    (lambda g, r: g // r + 1, "equal slice"),
    (lambda g, r: 1 / 0, "raised ZeroDivisionError"),
    (lambda g, r: (g // r) if g % r == 0 else 1 / 0, "Raise ValueError"),
    (lambda g, r: g / r + 0.5, "whole number"),
    (lambda g, r: str(g // r), "whole number"),
])
def test_per_replica_batch_refuses_constants_and_mistakes_with_a_hint(answer, hint):
    fb = check.per_replica_batch(answer)
    assert not fb.ok and hint in fb.message, fb.message


# --------------------------------------------------------------------------- exercise 2: average_loss
def test_average_loss_model_answer_and_variants_pass():
    assert check.average_loss(lambda per_example, global_batch: per_example.sum() / global_batch).ok
    assert check.average_loss(lambda p, g: np.sum(p) / g).ok
    assert check.average_loss(lambda p, g: float(sum(p)) / float(g)).ok
    assert check.average_loss(lambda p, g: np.mean(p) * len(p) / g).ok


def test_average_loss_accepts_tensorflow_answers():
    tf = pytest.importorskip("tensorflow")
    fb = check.average_loss(lambda p, g: tf.nn.compute_average_loss(p, global_batch_size=g))
    assert fb.ok, fb.message
    assert check.average_loss(lambda p, g: tf.reduce_sum(p) / g).ok


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    (0.5, "Answer with a function"),
    (lambda p, g: None, "returns None"),
    (lambda p, g: 0.25, "whatever the losses"),
    (lambda p, g: p.mean(), "averaged over the replica's own slice"),
    (lambda p, g: p.sum() / len(p), "averaged over the replica's own slice"),
    (lambda p, g: p.sum(), "That is the slice's sum"),
    (lambda p, g: p.sum() / g / (g // len(p)), "divided twice"),
    (lambda p, g: p / g, "Return one number"),
    (lambda p, g: p.max() / g, "Sum the slice's losses"),
    (lambda p, g: p.sum() / undefined_name, "raised NameError"),  # noqa: F821
])
def test_average_loss_refuses_constants_and_mistakes_with_a_hint(answer, hint):
    fb = check.average_loss(answer)
    assert not fb.ok and hint in fb.message, fb.message


# --------------------------------------------------------------------------- exercise 3: scaling_efficiency
def test_scaling_efficiency_model_answer_and_variants_pass():
    assert check.scaling_efficiency(lambda s1, sn, n: sn / s1 / n).ok
    assert check.scaling_efficiency(lambda s1, sn, n: np.float32(sn) / (np.float32(s1) * n)).ok


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    (0.96, "Answer with a function"),
    (lambda s1, sn, n: None, "returns None"),
    (lambda s1, sn, n: 0.9, "whatever the throughputs"),
    (lambda s1, sn, n: sn / s1, "That is the speed-up"),
    (lambda s1, sn, n: 100 * sn / s1 / n, "percentage"),
    (lambda s1, sn, n: s1 / sn / n, "upside down"),
    (lambda s1, sn, n: n * s1 / sn, "upside down"),
    (lambda s1, sn, n: (sn - s1) / s1, "gain over one device"),
    (lambda s1, sn, n: sn / (s1 + n), "Divide the speed-up"),
    (lambda s1, sn, n: "0.9", "Return a number"),
    (lambda s1, sn, n: sn / s1 / (n - 1), "raised ZeroDivisionError"),
])
def test_scaling_efficiency_refuses_constants_and_mistakes_with_a_hint(answer, hint):
    fb = check.scaling_efficiency(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_checks_never_raise_on_odd_answers():
    for odd in (object(), "text", [1, 2], lambda *a: [1, 2], lambda *a: float("nan")):
        for fn in (check.per_replica_batch, check.average_loss, check.scaling_efficiency):
            fb = fn(odd)
            assert not fb.ok
