"""Checks of notebook 07: model answers pass; constants and plausible mistakes are refused with the right hint."""

import math

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

    def with_divmod(global_batch, replicas):
        per, rest = divmod(global_batch, replicas)
        if rest:
            raise ValueError("uneven")
        return np.int64(per)

    def int_of_an_exact_division(global_batch, replicas):
        if global_batch % replicas != 0:
            raise ValueError(f"{global_batch} does not split over {replicas}")
        return int(global_batch / replicas)  # exact here, and an int

    def with_operator(global_batch, replicas):
        import operator

        if operator.mod(global_batch, replicas):
            raise ValueError("uneven")
        return operator.floordiv(global_batch, replicas)

    for answer in (with_divmod, int_of_an_exact_division, with_operator):
        fb = check.per_replica_batch(answer)
        assert fb.ok, (answer.__name__, fb.message)


def _refusing(rest):
    """A right answer for even splits that does `rest(g, r)` for uneven ones."""
    def answer(g, r):
        return g // r if g % r == 0 else rest(g, r)
    return answer


def _too_strict(g, r):
    raise ValueError("never splits")


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    (None, "Not answered yet"),
    (64, "Answer with a function"),
    (lambda g, r: None, "returns None"),
    (lambda g, r: 64, "whatever the inputs"),
    (lambda g, r: g / r, "`/` is true division"),  # 128.0: tf.data's batch() needs an int
    (_refusing(lambda g, r: g / r), "do not split evenly"),  # 33.33 for an uneven split
    (lambda g, r: np.float64(g // r), "needs an int"),
    (lambda g, r: g // r, "do not split evenly"),  # rounds down instead of refusing
    (lambda g, r: round(g / r), "rounding would drop examples"),
    (lambda g, r: -(-g // r), "rounding would drop examples"),  # rounds up
    (lambda g, r: r // g, "upside down"),
    (lambda g, r: g * r, "You multiplied"),
    (lambda g, r: g if r > 1 else g + 1, "That is the global batch"),
    (lambda g, r: g // r + 1, "Off by one"),
    (lambda g, r: g // r - 1, "Off by one"),
    (lambda g, r: 1 / 0, "raised ZeroDivisionError"),
    (_refusing(lambda g, r: 1 / 0), "Raise ValueError"),
    (_refusing(lambda g, r: exec("assert g % r == 0", {"g": g, "r": r})), "Raise ValueError"),  # AssertionError
    (_too_strict, "raise only when global_batch % replicas is not 0"),
    (lambda g, r: g / r + 0.5, "not a whole number"),
    (lambda g, r: str(g // r), "whole number"),
    (lambda g, r: True, "whole number"),
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
    (lambda p, g: p.astype(np.float16).sum() / g, "the rounding of float16"),
    (lambda p, g: np.float16(p.sum() / g), "the rounding of float16"),
    (lambda p, g: round(float(p.sum() / g), 2), "you rounded to 2 decimals"),
    (lambda p, g: round(float(p.sum() / g), 4), "you rounded to 4 decimals"),
    (lambda p, g: p.sum() // g, "`//` is floor division"),
    (lambda p, g: p.sum() / (g - 1), "divided by global_batch - 1"),
])
def test_average_loss_refuses_constants_and_mistakes_with_a_hint(answer, hint):
    fb = check.average_loss(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_average_loss_written_other_ways_passes():
    assert check.average_loss(lambda p, g: np.add.reduce(p, dtype=np.float64) / g).ok
    assert check.average_loss(lambda p, g: sum(float(x) for x in p) / g).ok


def test_average_loss_hint_never_prints_two_equal_numbers_as_different():
    """A float16 sum once got 'sum to 1.718, but the batch's mean loss is 1.718'."""
    import re

    message = check.average_loss(lambda p, g: p.astype(np.float16).sum() / g).message
    total, mean = re.search(r"sum to (\S+), but the batch's mean loss is (\S+)\.", message).groups()
    assert total != mean, message


def test_average_loss_names_bfloat16():
    tf = pytest.importorskip("tensorflow")
    fb = check.average_loss(lambda p, g: tf.reduce_sum(tf.cast(p, tf.bfloat16)) / g)
    assert not fb.ok and "bfloat16" in fb.message, fb.message


# --------------------------------------------------------------------------- exercise 3: scaling_efficiency
def test_scaling_efficiency_model_answer_and_variants_pass():
    assert check.scaling_efficiency(lambda s1, sn, n: sn / s1 / n).ok
    assert check.scaling_efficiency(lambda s1, sn, n: np.float32(sn) / (np.float32(s1) * n)).ok
    assert check.scaling_efficiency(lambda s1, sn, n: (sn / n) / s1).ok  # per-device rate over one device's

    def in_steps(samples_1, samples_n, n):
        speedup = samples_n / samples_1
        return speedup / n

    assert check.scaling_efficiency(in_steps).ok


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
    (lambda s1, sn, n: sn / s1 / (n - 1) if n > 1 else 1.0, "divided by n - 1"),
    (lambda s1, sn, n: round(sn / s1 / n, 2), "you rounded to 2 decimals"),
    (lambda s1, sn, n: round(sn / s1 / n, 3), "you rounded to 3 decimals"),
    (lambda s1, sn, n: math.floor(100 * sn / s1 / n) / 100, "you cut it to 2 decimals"),
    (lambda s1, sn, n: round(100 * sn / s1 / n), "percentage, rounded to 0 decimals"),
    (lambda s1, sn, n: sn // s1 / n, "`//` is floor division"),
    (lambda s1, sn, n: float(np.float16(sn) / np.float16(s1) / n), "low-precision arithmetic"),
])
def test_scaling_efficiency_refuses_constants_and_mistakes_with_a_hint(answer, hint):
    fb = check.scaling_efficiency(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_checks_never_raise_on_odd_answers():
    for odd in (object(), "text", [1, 2], lambda *a: [1, 2], lambda *a: float("nan")):
        for fn in (check.per_replica_batch, check.average_loss, check.scaling_efficiency):
            fb = fn(odd)
            assert not fb.ok


# --------------------------------------------------------------------------- exercise 4: ring_send_mb
def test_ring_send_mb_model_answer_and_variants_pass():
    assert check.ring_send_mb(lambda params, bytes_per_value, replicas:
                              2 * (replicas - 1) / replicas * params * bytes_per_value / 1e6).ok
    assert check.ring_send_mb(lambda p, b, r: p * b * (2 - 2 / r) / 10**6).ok  # the same, factored differently
    assert check.ring_send_mb(lambda p, b, r: np.float64(2 * (r - 1) * p * b) / (r * 1_000_000)).ok


@pytest.mark.parametrize("answer, hint", [
    (..., "Not answered yet"),
    (0.81, "Answer with a function"),
    (lambda p, b, r: None, "returns None"),
    (lambda p, b, r: 0.81412, "whatever the inputs"),
    (lambda p, b, r: 2 * p * b / 1e6, "You left out (replicas - 1) / replicas"),  # forgets (N-1)/N
    (lambda p, b, r: (r - 1) / r * p * b / 1e6, "the reduce-scatter only"),  # forgets the all-gather
    (lambda p, b, r: 2 * (r - 1) * p * b / 1e6, "what all the replicas send together"),  # x N
    (lambda p, b, r: 2 * (r - 1) / r * p * b / 2**20, "That is in MiB"),  # units
    (lambda p, b, r: 2 * (r - 1) / r * p * b, "That is in bytes"),
    (lambda p, b, r: 2 * (r - 1) / r * p * b / 1e3, "That is in kB"),
    (lambda p, b, r: 2 * (r - 1) / r * p * b * 8 / 1e6, "That counts bits"),
    (lambda p, b, r: 2 * (r - 1) // r * p * b / 1e6, "`//` is floor division"),  # integer division
    (lambda p, b, r: 2 * (r - 1) / r * p * 4 / 1e6, "You counted 4 bytes per value"),  # ignores the dtype
    (lambda p, b, r: 2 * (r - 1) / r * p / 1e6, "You counted gradients, not bytes"),
    (lambda p, b, r: p * b / r / 1e6, "That is one chunk"),
    (lambda p, b, r: round(2 * (r - 1) / r * p * b / 1e6, 2), "you rounded to 2 decimals"),
    (lambda p, b, r: round(2 * (r - 1) / r * p * b / 1e6), "you rounded to 0 decimals"),
    (lambda p, b, r: 2 * (r - 1) / r * p * b / 1e6 + 0.5, "Each replica sends 2 (replicas - 1) / replicas"),
    (lambda p, b, r: p.bit_length() / zero, "raised NameError"),  # noqa: F821
    (lambda p, b, r: "0.81", "Return a number of megabytes"),
])
def test_ring_send_mb_refuses_constants_and_mistakes_with_a_hint(answer, hint):
    fb = check.ring_send_mb(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_ring_send_mb_hint_names_the_call_that_went_wrong():
    message = check.ring_send_mb(lambda p, b, r: 2 * p * b / 1e6).message
    assert "ring_send_mb(203530, 4, 2) returned 1.62824 where the answer is 0.81412" in message


# --------------------------------------------------------------------------- review fixes: holes and wrong blame
def test_per_replica_batch_refuses_zero_for_more_replicas_than_examples():
    def zero_when_short(global_batch, replicas):
        if global_batch < replicas:
            return 0
        if global_batch % replicas:
            raise ValueError("uneven")
        return global_batch // replicas

    fb = check.per_replica_batch(zero_when_short)
    assert not fb.ok and "more replicas (8) than examples (4)" in fb.message, fb.message


def test_scaling_efficiency_refuses_a_cap_at_one():
    fb = check.scaling_efficiency(lambda s1, sn, n: min(1.0, sn / s1 / n))
    assert not fb.ok and "you capped it at 1" in fb.message, fb.message


def test_scaling_efficiency_names_none_for_one_device():
    fb = check.scaling_efficiency(lambda s1, sn, n: None if n == 1 else sn / s1 / n)
    assert not fb.ok and "scaling_efficiency(500, 500, 1) returned None" in fb.message, fb.message
    assert "Not answered yet" not in fb.message


@pytest.mark.parametrize("answer, hint", [
    (lambda p, b, r: None if r == 1 else 2 * (r - 1) / r * p * b / 1e6, "ring_send_mb(5000, 4, 1) returned None"),
    (lambda p, b, r: 2 * (r - 1) * math.ceil(p * b / r) / 1e6, "rounded each chunk up to whole bytes"),
    (lambda p, b, r: 2 * (r - 1) * (p * b // r) / 1e6, "cut each chunk down to whole bytes"),
    (lambda p, b, r: 2 * (r - 1) * math.ceil(p / r) * b / 1e6, "rounded each chunk up to whole values"),
    (lambda p, b, r: 2 * (r - 1) * (p // r) * b / 1e6, "cut each chunk down to whole values"),
    (lambda p, b, r: int(2 * (r - 1) / r * p * b) / 1e6, "cut it down to 6 decimals (whole bytes)"),
    (lambda p, b, r: round(2 * (r - 1) / r * p * b) / 1e6, "rounded to 6 decimals (whole bytes)"),
    (lambda p, b, r: float(int(2 * (r - 1) / r * p * b / 1e6)), "cut it down to 0 decimals"),
    (lambda p, b, r: round(2 * (r - 1) / r * p * b / 1e6, 5), "you rounded to 5 decimals"),
])
def test_ring_send_mb_names_chunk_rounding_truncation_and_none(answer, hint):
    fb = check.ring_send_mb(answer)
    assert not fb.ok and hint in fb.message, fb.message
    shown = fb.message.split("returned ")[1].split(" where the answer is ") if "where the answer is" in fb.message \
        else None
    if shown:  # never two identical numbers shown as a mistake
        assert shown[0] != shown[1].split(":")[0].split(". ")[0], fb.message


def test_ring_send_mb_and_efficiency_right_answers_written_differently_pass():
    assert check.ring_send_mb(lambda p, b, r: 0.0 if r == 1 else (p * b / 1e6) * (r - 1) * 2 / r).ok
    assert check.scaling_efficiency(lambda s1, sn, n: (sn / n) / s1).ok
