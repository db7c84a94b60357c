"""Checks for notebook 07 · Multi-GPU with MirroredStrategy (section "Exercises").

Each exercise asks for a function, and the check calls it on inputs it makes up:

* ``per_replica_batch(global_batch, replicas)`` on batches that split evenly (it must return an
  int: ``tf.data``'s ``batch`` takes no float), and on some that do not (it must raise
  ``ValueError`` there, not round);
* ``average_loss(per_example, global_batch)`` on one replica's slice of a made-up global batch, for
  every slice: the sum over the replicas (what the all-reduce computes) must be the mean loss of the
  whole batch, whatever the number of replicas;
* ``scaling_efficiency(samples_1, samples_n, n)`` on made-up throughputs, GPU-like and CPU-like;
* ``ring_send_mb(params, bytes_per_value, replicas)`` on made-up models, dtypes and replica counts:
  the megabytes each replica sends in a ring all-reduce, 2 (N-1) / N x the gradients' bytes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from helpers.check._feedback import Feedback, call, not_filled, number, returned_none, wrong

__all__ = ["per_replica_batch", "average_loss", "scaling_efficiency", "ring_send_mb"]

EXACT = 1e-6  # relative: float32 arithmetic on these losses stays within it, float16 (2**-10 steps) does not


def _close(a: float, b: float, rel: float = 1e-4) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-7)


def _numbers_for_every_case(answer, name: str, cases, calls: list[str], none_hint: str, number_hint: str):
    """The answer's finite numbers for every case, or the feedback that stops the check: an error, None for some
    inputs (`none_hint`), or something that is not a finite number (`number_hint`)."""
    outs = []
    for case in cases:
        out, fb = call(answer, *case, show_args=True)
        if fb is not None:
            return None, fb
        outs.append(out)
    if (fb := _none_for_some(name, calls, outs, none_hint)) is not None:
        return None, fb
    got = []
    for shown, out in zip(calls, outs, strict=True):
        value = number(out)
        if value is None or not math.isfinite(value):
            return None, wrong(f"{shown} returned {out!r}. {number_hint}")
        got.append(value)
    return got, None


def _none_for_some(name: str, calls: list[str], outs: list[Any], why: str) -> Feedback | None:
    """None for every call: not written yet (:func:`returned_none`); None for some: name the calls that gave it."""
    if all(out is None for out in outs):
        return returned_none(name)
    nones = [c for c, out in zip(calls, outs, strict=True) if out is None]
    if nones:
        return wrong(f"{nones[0]} returned None, though the others returned numbers. {why}")
    return None


def _callable_or_feedback(answer: Any, signature: str) -> Feedback | None:
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong(f"Answer with a function, `def {signature}: ...`, not a {type(answer).__name__}: the check "
                     "calls it on inputs it makes up.")
    return None


# --------------------------------------------------------------------------- exercise 1
SPLITS = ((256, 2, 128), (256, 8, 32), (96, 3, 32), (64, 1, 64), (1024, 16, 64), (60, 4, 15))
UNEVEN = ((100, 3), (10, 4), (6, 4), (4, 8))  # (4, 8): more replicas than examples


def _is_int(value: Any) -> bool:
    """An int, a NumPy integer or an integer scalar tensor; not a bool, not a float that happens to be whole."""
    if hasattr(value, "numpy") and hasattr(value, "dtype") and not isinstance(value, np.generic):
        return bool(getattr(value.dtype, "is_integer", False)) and getattr(value, "ndim", 0) == 0
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def per_replica_batch(answer: Any) -> Feedback:
    """Exercise 07.1: ``per_replica_batch(global_batch, replicas)`` -> examples per replica (an int), or ``ValueError``.

    ``tf.data``'s ``batch(...)`` needs an integer, so a whole float such as ``64.0`` is refused.

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
        try:
            out = answer(g, r)
        except ValueError as exc:
            return wrong(f"per_replica_batch({g}, {r}) raised ValueError ({exc}). {g} examples split evenly over {r} "
                         f"replicas ({g} % {r} == 0): raise only when global_batch % replicas is not 0.")
        except Exception:  # noqa: BLE001 - the learner's code may raise anything: call() words it
            return call(answer, g, r, show_args=True)[1]
        if out is None:
            return returned_none("per_replica_batch")
        value = number(out)
        if value is None or not math.isfinite(value):
            return wrong(f"per_replica_batch({g}, {r}) returned {out!r}. Return a whole number of examples (an int): "
                         "use // once you know the division is exact.")
        if value == int(value) and not _is_int(out):
            return wrong(f"per_replica_batch({g}, {r}) returned {out!r}, a {type(out).__name__}: tf.data's batch() "
                         "needs an int. `/` is true division and gives a float even when the division is exact: use "
                         "// (integer division) once you know global_batch % replicas is 0.")
        if value != int(value):
            return wrong(f"per_replica_batch({g}, {r}) returned {out!r}: not a whole number of examples. Return an "
                         "int: use // once you know the division is exact.")
        got.append(int(value))
    for (g, r, right), value in zip(SPLITS, got, strict=True):
        if value == right:
            continue
        if all(v == r // g for (g, r, _), v in zip(SPLITS, got, strict=True)):
            hint = "Your division is upside down: the replicas share the global batch, global_batch / replicas."
        elif len(set(got)) == 1:
            hint = f"Your function returns {got[0]} whatever the inputs. Compute it from global_batch and replicas."
        elif value == g * r:
            hint = "You multiplied. Each replica gets a slice of the global batch: global_batch / replicas examples."
        elif value == g:
            hint = "That is the global batch. The replicas share it: each gets global_batch / replicas examples."
        elif value == right + 1 or value == right - 1:
            hint = "Off by one. Each replica gets an equal slice: exactly global_batch / replicas examples."
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
        if g < r:
            return wrong(f"per_replica_batch({g}, {r}) returned {out!r}. With more replicas ({r}) than examples ({g}) "
                         f"some replicas would get no example at all: {g} % {r} is not 0, so raise ValueError here "
                         "too, not return a count.")
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
    answers, raw_outputs = [], []
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
            raw_outputs.append(out.numpy() if hasattr(out, "numpy") else out)
        answers.append((losses, replicas, parts))
    values = [v for _, _, parts in answers for _, v in parts]
    rights = [float(part.sum(dtype="float64")) / len(losses) for losses, _, parts in answers for part, _ in parts]
    pairs = list(zip(values, rights, strict=True))
    if all(math.isfinite(v) for v in values) and not all(_close(v, r, EXACT) for v, r in pairs):
        if all(v == math.floor(r) for v, r in pairs):
            return wrong(f"Your function returns {values[0]:g} where the share is {rights[0]:.6g}: `//` is floor "
                         "division and cuts the share down to a whole number. Use / (true division).")
        for k in range(7):
            if all(v == round(r, k) for v, r in pairs):
                return wrong(f"Your function returns {values[0]!r} where the share is {rights[0]!r}: you rounded to "
                             f"{k} decimal{'s' if k != 1 else ''}. The all-reduce adds the replicas' shares, and "
                             "rounding each one makes their sum miss the batch's mean: return the full value, and "
                             "round only when you print it.")
    if len(set(values)) == 1:
        return wrong(f"Your function returns {values[0]:g} whatever the losses. Compute it from per_example and "
                     "global_batch.")
    for losses, replicas, parts in answers:
        total = sum(v for _, v in parts)
        mean = float(losses.mean(dtype="float64"))
        if _close(total, mean, EXACT):
            continue
        digits = next((d for d in range(4, 17) if f"{total:#.{d}g}" != f"{mean:#.{d}g}"), 17)
        where = (f"A global batch of {len(losses)} examples over {replicas} replica(s): the replicas' answers sum "
                 f"to {total:#.{digits}g}, but the batch's mean loss is {mean:#.{digits}g}.")
        part, value = parts[0]
        dtypes = {str(getattr(v, "dtype", "")) for v in raw_outputs}
        if (replicas > 1 and _close(total, replicas * mean, rel=1e-3)) or _close(value, float(part.mean())):
            hint = ("You averaged over the replica's own slice. The all-reduce then adds the replicas' gradients, "
                    "so the update comes out replicas times too large. Divide the slice's sum by the global batch.")
        elif _close(value, float(part.sum())):
            hint = "That is the slice's sum. Divide it by global_batch, the examples of all replicas together."
        elif _close(total, mean / replicas, rel=1e-3):
            hint = "You divided twice. Divide the slice's sum by global_batch, once."
        elif _close(total, mean * len(losses) / (len(losses) - 1), rel=1e-4):
            hint = "Off by one: you divided by global_batch - 1. Divide by global_batch."
        elif "float16" in dtypes or "bfloat16" in dtypes or _close(total, mean, rel=4e-3):
            kind = "float16" if "float16" in dtypes else "bfloat16" if "bfloat16" in dtypes else "a 16-bit float"
            hint = (f"Close, but off by {abs(total - mean) / mean:.1e} relative: the rounding of {kind}, which keeps "
                    "only about 3 significant digits (a relative step of 2**-10 for float16, 2**-7 for bfloat16). "
                    "Compute the sum in float32 or float64: drop the astype, or pass dtype=np.float64 to sum.")
        else:
            hint = "Sum the slice's losses and divide by global_batch (what tf.nn.compute_average_loss does)."
        return wrong(f"{where} {hint}")
    return Feedback(True, "Right: each replica divides its slice's sum by the global batch, so the sum over the "
                          "replicas is the mean over the whole batch, for 1 to 4 replicas. That is "
                          "tf.nn.compute_average_loss(per_example, global_batch_size=...).")


# --------------------------------------------------------------------------- exercise 3
THROUGHPUTS = ((1000.0, 3600.0, 4), (13200.0, 18500.0, 2), (500.0, 500.0, 1), (2000.0, 1500.0, 2),
               (100.0, 1505.0, 16), (909.0, 7000.0, 8), (1000.0, 4400.0, 4))  # the last: 1.1, above 1


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
    calls = [f"scaling_efficiency({s1:g}, {sn:g}, {n})" for s1, sn, n in THROUGHPUTS]
    got, fb = _numbers_for_every_case(answer, "scaling_efficiency", THROUGHPUTS, calls,
                                      "Return a number for every input: with n = 1 the efficiency is samples_n / "
                                      "samples_1 / 1, the same formula.", "Return a number.")
    if fb is not None:
        return fb
    rights = [sn / s1 / n for s1, sn, n in THROUGHPUTS]
    if not all(_close(v, r, EXACT) for v, r in zip(got, rights, strict=True)):
        i = next(i for i, (v, r) in enumerate(zip(got, rights, strict=True)) if not _close(v, r, EXACT))
        (s1, sn, n), value, right = THROUGHPUTS[i], got[i], rights[i]
        call_text = f"scaling_efficiency({s1:g}, {sn:g}, {n}) returned {value!r}, expected {right!r}"
        if all(v == (b // a) / k for v, (a, b, k) in zip(got, THROUGHPUTS, strict=True)):
            return wrong(f"{call_text}. `//` is floor division: samples_n // samples_1 cuts the speed-up down to a "
                         "whole number. Use / (true division).")
        for k in range(5):
            if all(v == round(r, k) for v, r in zip(got, rights, strict=True)):
                return wrong(f"{call_text}: you rounded to {k} decimal{'s' if k != 1 else ''}. Return the full value; "
                             "round only when you print it (f\"{efficiency:.0%}\").")
            if all(v == math.floor(r * 10**k) / 10**k for v, r in zip(got, rights, strict=True)):
                return wrong(f"{call_text}: you cut it to {k} decimal{'s' if k != 1 else ''} (int() or floor). "
                             "Return the full value; round only when you print it.")
            if all(v == round(100 * r, k) for v, r in zip(got, rights, strict=True)):
                return wrong(f"{call_text}: that looks like a percentage, rounded to {k} decimal"
                             f"{'s' if k != 1 else ''}. Return a fraction (0.9, not 90), unrounded.")
    if len(set(got)) == 1:
        return wrong(f"Your function returns {got[0]:g} whatever the throughputs. Compute it from the arguments.")
    if all(v == min(1.0, r) for v, r in zip(got, rights, strict=True)):
        s1, sn, n = THROUGHPUTS[-1]
        return wrong(f"scaling_efficiency({s1:g}, {sn:g}, {n}) returned {got[-1]!r}, expected {rights[-1]!r}: you "
                     "capped it at 1. An efficiency above 1 (superlinear: each device's share of the data now fits "
                     "its caches, or the one-device run was slowed) is a measurement to report, not to clip.")
    for (s1, sn, n), value in zip(THROUGHPUTS, got, strict=True):
        right = sn / s1 / n
        if _close(value, right, EXACT):
            continue
        if _close(value, sn / s1):
            hint = "That is the speed-up. The efficiency divides it by n: the share of the ideal n-fold speed-up."
        elif _close(value, 100 * right):
            hint = "That looks like a percentage. Return a fraction (0.9, not 90)."
        elif _close(value, s1 / sn / n) or _close(value, n * s1 / sn) or _close(value, s1 / sn):
            hint = "Your ratio is upside down. More samples/s with n devices is better: samples_n / samples_1."
        elif _close(value, (sn - s1) / s1) or _close(value, (sn - s1) / s1 / n):
            hint = "That is the gain over one device. Use the ratio samples_n / samples_1, then divide by n."
        elif n > 1 and _close(value, sn / s1 / (n - 1)):
            hint = "Off by one: you divided by n - 1. Divide the speed-up by n, the number of devices."
        elif _close(value, sn / (s1 * n), rel=4e-3):
            hint = (f"Close, but off by {abs(value - right) / right:.1e} relative: low-precision arithmetic (float16 "
                    "keeps about 3 significant digits). Compute in float32 or float64.")
        else:
            hint = "Divide the speed-up samples_n / samples_1 by n."
        return wrong(f"scaling_efficiency({s1:g}, {sn:g}, {n}) returned {value:.4g}, expected {right:.4g}. {hint}")
    return Feedback(True, f"Right on all {len(THROUGHPUTS)} made-up throughputs: 1.0 means n devices do n times the "
                          "work of one; NVIDIA measured 0.96 for ResNet-50 on 8 A100s, and a split CPU gives less "
                          "than 1.")


# --------------------------------------------------------------------------- exercise 4
RINGS = ((203_530, 4, 2), (25_600_000, 2, 8), (1_000_000, 4, 4), (7_777, 2, 3), (5_000, 4, 1), (123_457, 4, 6),
         (10, 4, 3))  # the last: 40 bytes in 3 chunks, where whole-byte or whole-value chunks show


def _ring_mistakes(p: int, b: int, r: int) -> list[tuple[float, str]]:
    """(value, hint) for the plausible wrong formulas, most specific first."""
    size = p * b
    right = 2 * (r - 1) / r * size / 1e6
    return [
        (2 * (r - 1) / r * size / 2**20, "That is in MiB (2**20 bytes). The exercise asks for MB: divide the bytes by "
                                         "10**6."),
        (2 * (r - 1) / r * size, "That is in bytes. Return megabytes: divide by 10**6."),
        (2 * (r - 1) / r * size * 8 / 1e6, "That counts bits (x 8). A gradient of bytes_per_value bytes sends that "
                                           "many bytes: leave out the 8."),
        (2 * (r - 1) * size / 1e6, "That is what all the replicas send together (x replicas). Each replica sends "
                                   "2 (replicas - 1) / replicas of the gradients' bytes."),
        (2 * size / 1e6, "You left out (replicas - 1) / replicas: each of the 2 (replicas - 1) steps sends one chunk "
                         "of size / replicas, so 2 (replicas - 1) / replicas x size, which is 0 for one replica."),
        ((r - 1) / r * size / 1e6, "That is half: the reduce-scatter only. The all-gather sends as much again: "
                                   "2 (replicas - 1) / replicas x size."),
        (2 * (r - 1) // r * size / 1e6, "`//` is floor division: 2 * (replicas - 1) // replicas is 1 (or 0), not "
                                        "1.5 or 1.75. Use / (true division)."),
        (2 * (r - 1) / r * p * 4 / 1e6, "You counted 4 bytes per value whatever bytes_per_value says: float16 and "
                                        "bfloat16 gradients take 2. Multiply by bytes_per_value."),
        (size / r / 1e6, "That is one chunk (size / replicas). A replica sends one chunk in each of the "
                         "2 (replicas - 1) steps: 2 (replicas - 1) / replicas x size."),
        (2 * (r - 1) / r * p / 1e6, "You counted gradients, not bytes: multiply by bytes_per_value."),
        (right * 1e6 / 1e3, "That is in kB (10**3 bytes). Return megabytes: divide the bytes by 10**6."),
        (2 * (r - 1) * math.ceil(size / r) / 1e6, "You rounded each chunk up to whole bytes (ceil(size / replicas)). "
                                                   "The formula counts the exact share, 2 (replicas - 1) / replicas x "
                                                   "size, without rounding any chunk."),
        (2 * (r - 1) * (size // r) / 1e6, "You cut each chunk down to whole bytes (size // replicas). The formula "
                                          "counts the exact share, 2 (replicas - 1) / replicas x size: use / (true "
                                          "division)."),
        (2 * (r - 1) * math.ceil(p / r) * b / 1e6, "You rounded each chunk up to whole values (ceil(params / "
                                                   "replicas)). The formula counts the exact share, 2 (replicas - 1) "
                                                   "/ replicas x size, without rounding any chunk."),
        (2 * (r - 1) * (p // r) * b / 1e6, "You cut each chunk down to whole values (params // replicas). The "
                                           "formula counts the exact share, 2 (replicas - 1) / replicas x size: use / "
                                           "(true division)."),
    ]


def ring_send_mb(answer: Any) -> Feedback:
    """Exercise 07.4: ``ring_send_mb(params, bytes_per_value, replicas)`` -> MB each replica sends in a ring all-reduce.

    The answer is 2 (replicas - 1) / replicas x params x bytes_per_value / 10**6.

    Example:
        >>> ring_send_mb(lambda p, b, r: 2 * (r - 1) / r * p * b / 1e6).ok
        True
        >>> ring_send_mb(lambda p, b, r: 2 * p * b / 1e6).ok  # forgets (r - 1) / r
        False
    """
    if (fb := _callable_or_feedback(answer, "ring_send_mb(params, bytes_per_value, replicas)")) is not None:
        return fb
    calls = [f"ring_send_mb({p}, {b}, {r})" for p, b, r in RINGS]
    got, fb = _numbers_for_every_case(answer, "ring_send_mb", RINGS, calls,
                                      "Return a number for every input: one replica sends nothing, 0 MB, which the "
                                      "formula gives too ((replicas - 1) is 0).", "Return a number of megabytes.")
    if fb is not None:
        return fb
    rights = [2 * (r - 1) / r * p * b / 1e6 for p, b, r in RINGS]
    if all(_close(v, w, EXACT) for v, w in zip(got, rights, strict=True)):
        return Feedback(True, f"Right on all {len(RINGS)} made-up cases: {rights[0]:.3f} MB for this notebook's model "
                              "on 2 replicas in float32, and 0 for one replica (nothing to send). The traffic per "
                              "replica stays below 2x the gradients however many replicas join.")
    if len(set(got)) == 1:
        return wrong(f"Your function returns {got[0]:g} whatever the inputs. Compute it from params, bytes_per_value "
                     "and replicas.")
    mistakes = [_ring_mistakes(p, b, r) for p, b, r in RINGS]  # per case: [(value, hint), ...] in the same order
    hint = next((mistakes[0][k][1] for k in range(len(mistakes[0]))  # the one mistake that explains every case
                 if all(_close(v, case[k][0], 1e-9) for v, case in zip(got, mistakes, strict=True))), None)
    i = next(i for i, (v, w) in enumerate(zip(got, rights, strict=True)) if not _close(v, w, EXACT))
    (p, b, r), value, right = RINGS[i], got[i], rights[i]  # the first case that went wrong, shown in full
    call_text = f"ring_send_mb({p}, {b}, {r}) returned {value!r} where the answer is {right!r}"
    for k in range(7):  # 6 decimals of a MB are whole bytes
        unit = " (whole bytes)" if k == 6 else ""
        if hint is None and all(v == round(w, k) for v, w in zip(got, rights, strict=True)):
            return wrong(f"{call_text}: you rounded to {k} decimal{'s' if k != 1 else ''}{unit}. Return the full "
                         "value; round only when you print it.")
        if hint is None and all(v == math.floor(w * 10**k) / 10**k for v, w in zip(got, rights, strict=True)):
            return wrong(f"{call_text}: you cut it down to {k} decimal{'s' if k != 1 else ''}{unit} (int() or "
                         "math.floor drop the rest). Return the full value; round only when you print it.")
    if hint is not None:
        return wrong(f"{call_text}. {hint}")
    hint = "Each replica sends 2 (replicas - 1) / replicas x params x bytes_per_value bytes; divide by 10**6."
    for (p, b, r), value, right in zip(RINGS, got, rights, strict=True):
        if not _close(value, right, EXACT):
            return wrong(f"ring_send_mb({p}, {b}, {r}) returned {value!r}, expected {right!r}. {hint}")
    return wrong("Compare your formula with 2 (replicas - 1) / replicas x params x bytes_per_value / 10**6.")
