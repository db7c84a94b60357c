"""Checks for notebook 07 · Multi-GPU with MirroredStrategy (section "Exercises").

Each exercise asks for a function, and the check calls it on inputs it makes up:

* ``per_replica_batch(global_batch, replicas)`` on batches that split evenly, and on some that do
  not (it must raise ``ValueError`` there, not round);
* ``average_loss(per_example, global_batch)`` on one replica's slice of a made-up global batch, for
  every slice: the sum over the replicas (what the all-reduce computes) must be the mean loss of the
  whole batch, whatever the number of replicas;
* ``scaling_efficiency(samples_1, samples_n, n)`` on made-up throughputs, GPU-like and CPU-like.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from helpers.check._feedback import Feedback, call, not_filled, number, returned_none, wrong

__all__ = ["per_replica_batch", "average_loss", "scaling_efficiency"]






def _close(a: float, b: float, rel: float = 1e-4) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-7)


def _callable_or_feedback(answer: Any, signature: str) -> Feedback | None:
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong(f"Answer with a function, `def {signature}: ...`, not a {type(answer).__name__}: the check "
                     "calls it on inputs it makes up.")
    return None


# --------------------------------------------------------------------------- exercise 1
SPLITS = ((256, 2, 128), (256, 8, 32), (96, 3, 32), (64, 1, 64), (1024, 16, 64), (60, 4, 15))
UNEVEN = ((100, 3), (10, 4), (6, 4))


def per_replica_batch(answer: Any) -> Feedback:
    """Exercise 07.1: ``per_replica_batch(global_batch, replicas)`` -> examples per replica, or ``ValueError``.

    Example:
        >>> def split(global_batch, replicas):
        ...     if global_batch % replicas:
        ...         raise ValueError("not a multiple")
        ...     return global_batch // replicas
        >>> per_replica_batch(split).ok
        True
        >>> per_replica_batch(lambda g, r: g // r).ok  # rounds down instead of refusing
        False
    """
    if (fb := _callable_or_feedback(answer, "per_replica_batch(global_batch, replicas)")) is not None:
        return fb
    got = []
    for g, r, _ in SPLITS:
        out, fb = call(answer, g, r, show_args=True)
        if fb is not None:
            return fb
        if out is None:
            return returned_none("per_replica_batch")
        value = number(out)
        if value is None or not math.isfinite(value) or value != int(value):
            return wrong(f"per_replica_batch({g}, {r}) returned {out!r}. Return a whole number of examples (an int): "
                         "use // once you know the division is exact.")
        got.append(int(value))
    if len(set(got)) == 1:
        return wrong(f"Your function returns {got[0]} whatever the inputs. Compute it from global_batch and replicas.")
    for (g, r, right), value in zip(SPLITS, got, strict=True):
        if value == right:
            continue
        if value == g * r:
            hint = "You multiplied. Each replica gets a slice of the global batch: global_batch / replicas examples."
        elif value == g:
            hint = "That is the global batch. The replicas share it: each gets global_batch / replicas examples."
        else:
            hint = "Each replica gets an equal slice: global_batch / replicas examples."
        return wrong(f"per_replica_batch({g}, {r}) returned {value}, expected {right}. {hint}")
    for g, r in UNEVEN:
        try:
            out = answer(g, r)
        except ValueError:
            continue
        except Exception as exc:  # noqa: BLE001
            return wrong(f"per_replica_batch({g}, {r}) raised {type(exc).__name__}. Raise ValueError (a value the "
                         "function cannot use), with a message that says why.")
        return wrong(f"per_replica_batch({g}, {r}) returned {out!r}. {g} examples do not split evenly over {r} "
                     f"replicas: rounding would drop examples or give the replicas different batches. Raise "
                     f"ValueError when global_batch % replicas is not 0.")
    return Feedback(True, f"Right on {len(SPLITS)} even splits, and {len(UNEVEN)} uneven ones refused with "
                          "ValueError. tf.distribute splits each global batch this way: choose a global batch that is "
                          "a multiple of strategy.num_replicas_in_sync.")


# --------------------------------------------------------------------------- exercise 2
def _made_up_batches() -> list[tuple[np.ndarray, int]]:
    """(per-example losses of a global batch, replicas), with the batch a multiple of replicas."""
    rng = np.random.default_rng(7)
    return [(rng.uniform(0.05, 3.0, size=n).astype("float32"), r) for n, r in ((8, 2), (12, 3), (6, 1), (16, 4))]


def average_loss(answer: Any) -> Feedback:
    """Exercise 07.2: ``average_loss(per_example, global_batch)`` -> one replica's share of the batch's mean loss.

    The check splits made-up global batches over 1 to 4 replicas, calls the function on each
    replica's slice, and sums the answers the way the all-reduce sums the replicas' gradients.

    Example:
        >>> average_loss(lambda per_example, global_batch: per_example.sum() / global_batch).ok
        True
        >>> average_loss(lambda per_example, global_batch: per_example.mean()).ok  # the replica's own mean
        False
    """
    if (fb := _callable_or_feedback(answer, "average_loss(per_example, global_batch)")) is not None:
        return fb
    answers = []
    for losses, replicas in _made_up_batches():
        parts = []
        for part in np.split(losses, replicas):
            out, fb = call(answer, part.copy(), len(losses), show_args=True)
            if fb is not None:
                return fb
            if out is None:
                return returned_none("average_loss")
            value = number(out)
            if value is None:
                return wrong(f"average_loss returned {type(out).__name__} {out!r}. Return one number (a scalar): the "
                             "replica's share of the loss, not one value per example.")
            parts.append((part, value))
        answers.append((losses, replicas, parts))
    values = [v for _, _, parts in answers for _, v in parts]
    if len(set(values)) == 1:
        return wrong(f"Your function returns {values[0]:g} whatever the losses. Compute it from per_example and "
                     "global_batch.")
    for losses, replicas, parts in answers:
        total = sum(v for _, v in parts)
        mean = float(losses.mean(dtype="float64"))
        if _close(total, mean):
            continue
        where = (f"A global batch of {len(losses)} examples over {replicas} replica(s): the replicas' answers sum "
                 f"to {total:.4g}, but the batch's mean loss is {mean:.4g}.")
        part, value = parts[0]
        if (replicas > 1 and _close(total, replicas * mean, rel=1e-3)) or _close(value, float(part.mean())):
            hint = ("You averaged over the replica's own slice. The all-reduce then adds the replicas' gradients, "
                    "so the update comes out replicas times too large. Divide the slice's sum by the global batch.")
        elif _close(value, float(part.sum())):
            hint = "That is the slice's sum. Divide it by global_batch, the examples of all replicas together."
        elif _close(total, mean / replicas, rel=1e-3):
            hint = "You divided twice. Divide the slice's sum by global_batch, once."
        else:
            hint = "Sum the slice's losses and divide by global_batch (what tf.nn.compute_average_loss does)."
        return wrong(f"{where} {hint}")
    return Feedback(True, "Right: each replica divides its slice's sum by the global batch, so the sum over the "
                          "replicas is the mean over the whole batch, for 1 to 4 replicas. That is "
                          "tf.nn.compute_average_loss(per_example, global_batch_size=...).")


# --------------------------------------------------------------------------- exercise 3
THROUGHPUTS = ((1000.0, 3600.0, 4), (13200.0, 18500.0, 2), (500.0, 500.0, 1), (2000.0, 1500.0, 2),
               (100.0, 1505.0, 16), (909.0, 7000.0, 8))


def scaling_efficiency(answer: Any) -> Feedback:
    """Exercise 07.3: ``scaling_efficiency(samples_1, samples_n, n)`` -> (samples_n / samples_1) / n.

    Example:
        >>> scaling_efficiency(lambda s1, sn, n: sn / s1 / n).ok
        True
        >>> scaling_efficiency(lambda s1, sn, n: sn / s1).ok  # the speed-up, not the efficiency
        False
    """
    if (fb := _callable_or_feedback(answer, "scaling_efficiency(samples_1, samples_n, n)")) is not None:
        return fb
    got = []
    for s1, sn, n in THROUGHPUTS:
        out, fb = call(answer, s1, sn, n, show_args=True)
        if fb is not None:
            return fb
        if out is None:
            return returned_none("scaling_efficiency")
        value = number(out)
        if value is None or not math.isfinite(value):
            return wrong(f"scaling_efficiency({s1:g}, {sn:g}, {n}) returned {out!r}. Return a number.")
        got.append(value)
    if len(set(got)) == 1:
        return wrong(f"Your function returns {got[0]:g} whatever the throughputs. Compute it from the arguments.")
    for (s1, sn, n), value in zip(THROUGHPUTS, got, strict=True):
        right = sn / s1 / n
        if _close(value, right):
            continue
        if _close(value, sn / s1):
            hint = "That is the speed-up. The efficiency divides it by n: the share of the ideal n-fold speed-up."
        elif _close(value, 100 * right):
            hint = "That looks like a percentage. Return a fraction (0.9, not 90)."
        elif _close(value, s1 / sn / n) or _close(value, n * s1 / sn) or _close(value, s1 / sn):
            hint = "Your ratio is upside down. More samples/s with n devices is better: samples_n / samples_1."
        elif _close(value, (sn - s1) / s1) or _close(value, (sn - s1) / s1 / n):
            hint = "That is the gain over one device. Use the ratio samples_n / samples_1, then divide by n."
        else:
            hint = "Divide the speed-up samples_n / samples_1 by n."
        return wrong(f"scaling_efficiency({s1:g}, {sn:g}, {n}) returned {value:.4g}, expected {right:.4g}. {hint}")
    return Feedback(True, f"Right on all {len(THROUGHPUTS)} made-up throughputs: 1.0 means n devices do n times the "
                          "work of one; NVIDIA measured 0.96 for ResNet-50 on 8 A100s, and a split CPU gives less "
                          "than 1.")
