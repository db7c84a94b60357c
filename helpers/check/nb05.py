"""Checks for notebook 05 · Batch size and learning rate (section "Exercises").

Each exercise asks for a function, and the check calls it on inputs it makes up (other data sets,
batch sizes, learning rates and GPUs), so a number copied from this run's output does not pass.
Each check first compares the answers with the formulas of the usual mistakes, to say which one
was made.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

from helpers.check._feedback import Feedback, call, not_filled, number, returned_none, wrong

__all__ = ["updates_in_budget", "scaled_warmup_lr", "max_batch_that_fits", "accumulation_steps", "accumulated_lr"]






def _answers(fn: Callable[..., Any], name: str, cases: list[tuple[Any, ...]]) -> list[float] | Feedback:
    """Call `fn` on every case; the numbers it returned, or the Feedback that explains why not.

    The list has an attribute-free twin in ``_RAW[name]``: the values as returned, for the type checks.
    """
    if (fb := not_filled(fn)) is not None:
        return fb
    if not callable(fn):
        return wrong(f"Define a function, `def {name}(...): ...`, not a {type(fn).__name__}: the check calls it on "
                     "made-up inputs, so a number that is right for this run only does not pass.")
    got, raw = [], []
    for case in cases:
        value, failed = call(fn, *case)
        if failed is not None:
            return failed
        if value is None:
            return returned_none(name)
        as_float = number(value)
        if as_float is None:
            return wrong(f"{name}{case} returned {value!r} ({type(value).__name__}); return a number.")
        got.append(as_float)
        raw.append(value)
    _RAW[name] = raw
    return got


_RAW: dict[str, list[Any]] = {}


def _is_int(value: Any) -> bool:
    """A numbers.Integral: an int or a NumPy integer (``model.fit(batch_size=...)`` and ``range`` take both), never a
    bool or a float."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _not_int(name: str, got: list[float], formula: Callable[..., float], cases: list[tuple[Any, ...]],
             what: str) -> Feedback | None:
    """The hint for right values of the wrong type (626.0 instead of 626), or None when every value is an int."""
    bad = next((v for v in _RAW[name] if not _is_int(v)), None)
    if bad is None:
        return None
    if _same(got, formula, cases):
        return wrong(f"Your values are right, but {name} returned {bad!r} ({type(bad).__name__}): {what} is a whole "
                     "number, an int (a NumPy integer passes too). math.ceil, math.floor and // on ints return ints; "
                     "np.ceil, np.floor and / return floats, so wrap those in int().")
    return None


def _same(got: list[float], formula: Callable[..., float], cases: list[tuple[Any, ...]]) -> bool:
    return all(math.isclose(g, formula(*c), rel_tol=1e-6, abs_tol=1e-12) for g, c in zip(got, cases, strict=True))


def _first_difference(got: list[float], formula: Callable[..., float], cases: list[tuple[Any, ...]]) -> int:
    return next(i for i, (g, c) in enumerate(zip(got, cases, strict=True))
                if not math.isclose(g, formula(*c), rel_tol=1e-6, abs_tol=1e-12))


# --------------------------------------------------------------------------- exercise 1
# (n_samples, batch, epochs): this notebook's runs, a smoke run, full Fashion-MNIST, and edge cases.
UPDATE_CASES = [(10000, 32, 2), (10000, 512, 2), (2000, 512, 2), (60000, 256, 1), (1000, 1000, 5), (50, 64, 4)]


def _updates(n: int, batch: int, epochs: int) -> int:
    return epochs * math.ceil(n / batch)


def updates_in_budget(answer: Any) -> Feedback:
    """Exercise 05.1: ``updates_in_budget(n_samples, batch, epochs)``, the optimizer steps in the budget.

    Keras trains on the last, smaller batch of each epoch too, so an epoch has
    ``ceil(n_samples / batch)`` steps.

    Example:
        >>> updates_in_budget(lambda n, b, e: e * math.ceil(n / b)).ok
        True
        >>> updates_in_budget(lambda n, b, e: e * (n // b)).ok  # drops the partial batch
        False
    """
    got = _answers(answer, "updates_in_budget", UPDATE_CASES)
    if isinstance(got, Feedback):
        return got
    if (fb := _not_int("updates_in_budget", got, _updates, UPDATE_CASES, "a number of updates")) is not None:
        return fb
    if _same(got, _updates, UPDATE_CASES):
        big, small = _updates(10000, 512, 2), _updates(10000, 32, 2)
        return Feedback(True, f"Right on all {len(UPDATE_CASES)} cases. In 2 epochs over 10,000 images batch 512 makes "
                              f"{big} updates and batch 32 makes {small}: {small / big:.1f}x fewer steps, each with "
                              "the same learning rate unless you scale it.")
    mistakes = [
        (lambda n, b, e: e * (n // b), "You rounded down: 10,000 images at batch 32 are 312 full batches and one of "
                                       "16, and Keras trains on that last one too. Use math.ceil(n_samples / batch)."),
        (lambda n, b, e: math.ceil(n * e / b), "Close: you rounded once over all epochs. Each epoch ends with its "
                                               "own partial batch, so round up per epoch, then multiply by epochs."),
        (lambda n, b, e: n * e / b, "An optimizer step is a whole batch: round each epoch's steps up with "
                                    "math.ceil(n_samples / batch), then multiply by epochs."),
        (lambda n, b, e: math.ceil(n / b), "That is one epoch's updates: multiply by the number of epochs."),
        (lambda n, b, e: n * e, "That counts samples, not updates: one update uses a whole batch."),
        (lambda n, b, e: e * n // b, "You rounded down: the last, partial batch of each epoch is an update too. Use "
                                     "epochs * math.ceil(n_samples / batch)."),
        (lambda n, b, e: e * round(n / b), "You rounded to the nearest whole number: 10,000 images at batch 32 are "
                                           "312.5 batches, and the half batch is a whole step too. Round up with "
                                           "math.ceil(n_samples / batch)."),
        (lambda n, b, e: e * (n // b + 1), "You add one step per epoch even when the batch divides the data: 1,000 "
                                           "images at batch 1,000 are 1 step per epoch, not 2. Use "
                                           "math.ceil(n_samples / batch)."),
        (lambda n, b, e: math.ceil(n / b) + e, "You added the epochs: multiply the steps per epoch by them."),
        (lambda n, b, e: e * math.ceil(b / n), "You divided the batch by the data: an epoch has "
                                               "math.ceil(n_samples / batch) steps."),
    ]
    for formula, message in mistakes:
        if _same(got, formula, UPDATE_CASES):
            return wrong(message)
    i = _first_difference(got, _updates, UPDATE_CASES)
    n, b, e = UPDATE_CASES[i]
    return wrong(f"updates_in_budget({n}, {b}, {e}) gave {got[i]:g}; it is {_updates(n, b, e)}: "
                 f"ceil({n} / {b}) = {math.ceil(n / b)} updates per epoch, times {e} epochs.")


# --------------------------------------------------------------------------- exercise 2
# (step, base_lr, base_batch, batch, warmup_steps)
LR_CASES = [(0, 0.01, 32, 512, 20), (10, 0.01, 32, 512, 20), (20, 0.01, 32, 512, 20), (100, 0.01, 32, 512, 20),
            (5, 0.1, 256, 1024, 10), (3, 0.02, 64, 64, 8), (2500, 0.1, 256, 8192, 5000), (1, 0.05, 128, 384, 4),
            (7, 0.01, 64, 96, 20), (7, 0.01, 32, 512, 20)]  # a batch 1.5x the base; a step between quarters


def _lr(step: int, base_lr: float, base_batch: int, batch: int, warmup_steps: int) -> float:
    target = base_lr * batch / base_batch
    return base_lr + (target - base_lr) * min(1.0, step / warmup_steps)


def scaled_warmup_lr(answer: Any) -> Feedback:
    """Exercise 05.2: ``scaled_warmup_lr(step, base_lr, base_batch, batch, warmup_steps)``.

    The linear scaling rule with gradual warm-up (Goyal et al., 2017): the target rate is
    ``base_lr * batch / base_batch``; during the first ``warmup_steps`` steps the rate rises in a
    straight line from ``base_lr`` (at step 0) to the target (at step ``warmup_steps``), then stays there.

    Example:
        >>> scaled_warmup_lr(lambda s, lr, b0, b, w: lr + (lr * b / b0 - lr) * min(1, s / w)).ok
        True
        >>> scaled_warmup_lr(lambda s, lr, b0, b, w: lr * b / b0).ok  # no warm-up
        False
    """
    got = _answers(answer, "scaled_warmup_lr", LR_CASES)
    if isinstance(got, Feedback):
        return got
    if (bad := next((v for v in _RAW["scaled_warmup_lr"] if type(v) not in (int, float)), None)) is not None:
        kind = f"{type(bad).__module__}.{type(bad).__name__}"
        return wrong(f"scaled_warmup_lr returned {bad!r}, a {kind}: return a plain Python number (int or float). "
                     "Python's min() and arithmetic on plain numbers give one; NumPy or TensorFlow functions "
                     "(np.minimum, tf.minimum, tf.constant) give a NumPy scalar or a tensor, so use min() or wrap "
                     "the result in float().")
    if _same(got, _lr, LR_CASES):
        return Feedback(True, f"Right on all {len(LR_CASES)} cases: for batch 512 from base 32 at 0.01, the rate "
                              f"climbs from 0.01 to {_lr(20, 0.01, 32, 512, 20):.2f} over the warm-up, then stays "
                              "there; at the base batch it is base_lr throughout.")

    def ramp(s: int, w: int) -> float:
        return min(1.0, s / w)

    mistakes = [
        (lambda s, lr, b0, b, w: lr, "Your rate never changes: the rule multiplies it by batch / base_batch "
                                     "(16x for batch 512 from 32), reached at the end of the warm-up."),
        (lambda s, lr, b0, b, w: lr * b / b0, "That is the scaled rate from the first step, without warm-up. At "
                                              "step 0 the rate is base_lr; it reaches the scaled rate at step "
                                              "warmup_steps: base_lr + (target - base_lr) * min(1, step / "
                                              "warmup_steps)."),
        (lambda s, lr, b0, b, w: lr * b / b0 * ramp(s, w), "Your warm-up starts from 0. Goyal et al.'s gradual "
                                                           "warm-up starts from base_lr (the rate that is safe "
                                                           "for the base batch) and rises to the scaled rate."),
        (lambda s, lr, b0, b, w: lr + (lr * b / b0 - lr) * s / w, "Your rate keeps rising after the warm-up: cap "
                                                                  "the fraction with min(1, step / warmup_steps)."),
        (lambda s, lr, b0, b, w: lr + (lr * b / b0 - lr) * min(1.0, (s + 1) / w),
         "Off by one: at step 0 the rate is base_lr exactly, so use step / warmup_steps, not (step + 1)."),
        (lambda s, lr, b0, b, w: lr + (lr * b0 / b - lr) * ramp(s, w), "You scaled the wrong way: a larger batch "
                                                                       "gets a larger rate, base_lr * batch / "
                                                                       "base_batch."),
        (lambda s, lr, b0, b, w: lr + (lr * math.sqrt(b / b0) - lr) * ramp(s, w),
         "That is the square-root scaling rule (target base_lr * sqrt(batch / base_batch)); the linear rule of "
         "Goyal et al. multiplies by batch / base_batch itself."),
        (lambda s, lr, b0, b, w: lr + (lr * b / b0 - lr) * min(1, s // w),
         "Your rate jumps from base_lr to the target at the end of the warm-up: step // warmup_steps is 0 until "
         "then. Use true division, step / warmup_steps, for a straight line."),
        (lambda s, lr, b0, b, w: lr + (lr * (b // b0) - lr) * ramp(s, w),
         "batch // base_batch rounds the ratio down (96 // 64 is 1, not 1.5): use batch / base_batch."),
        (lambda s, lr, b0, b, w: lr + (lr * b - lr) * ramp(s, w),
         "Your target is base_lr * batch: divide by base_batch too, so the rate grows by the factor the batch grew."),
        (lambda s, lr, b0, b, w: lr + (lr * b / b0 - lr) * min(1.0, s / (w - 1)) if w > 1 else lr * b / b0,
         "Your warm-up reaches the target one step early: at step warmup_steps - 1 it is still below it. Use "
         "step / warmup_steps."),
    ]
    for formula, message in mistakes:
        if _same(got, formula, LR_CASES):
            return wrong(message)
    for decimals in range(1, 7):  # right, but rounded for display
        if all(math.isclose(g, round(_lr(*c), decimals), rel_tol=1e-9, abs_tol=1e-12) for g, c in zip(got, LR_CASES,
                                                                                                    strict=True)):
            return wrong(f"You rounded the rate to {decimals} decimal{'s' if decimals > 1 else ''}: "
                         f"scaled_warmup_lr{LR_CASES[1]} is {_lr(*LR_CASES[1]):.6g}. Return it unrounded; round only "
                         "where you print it.")
    i = _first_difference(got, _lr, LR_CASES)
    s, lr, b0, b, w = LR_CASES[i]
    return wrong(f"scaled_warmup_lr{LR_CASES[i]} gave {got[i]:.6g}; it is {_lr(*LR_CASES[i]):.6g}: the target is "
                 f"{lr} x {b} / {b0} = {lr * b / b0:.6g}, and at step {s} of a {w}-step warm-up you are "
                 f"{min(1.0, s / w):.0%} of the way from {lr} to it.")


# --------------------------------------------------------------------------- exercise 3
GPUS = {  # made-up jobs: name -> (bytes_per_sample, fixed_bytes, memory_bytes)
    "a 16 GB T4 training a made-up CNN": (200_000, 50_000_000, 16_000_000_000),
    "a 24 GB L4 training a larger CNN": (1_500_000, 2_000_000_000, 24_000_000_000),
    "an 80 GB A100 training a vision transformer": (12_000_000, 10_000_000_000, 80_000_000_000),
    "an 8 GB card whose memory is an exact multiple": (1_000_000, 1_000_000_000, 8_000_000_000),
    "a 4 GB laptop GPU with a model too large for it": (3_000_000, 5_000_000_000, 4_000_000_000),
    "a card with room for the fixed part and half a sample": (2_000_000, 1_000_000_000, 1_001_000_000),
}


def _fits(per_sample: float, fixed: float, memory: float) -> int:
    return max(0, math.floor((memory - fixed) / per_sample))


def max_batch_that_fits(answer: Any) -> Feedback:
    """Exercise 05.3: ``max_batch_that_fits(bytes_per_sample, fixed_bytes, memory_bytes)``.

    A step needs ``fixed_bytes + batch * bytes_per_sample``; the answer is the largest whole batch
    for which that is at most ``memory_bytes``, and 0 when not even the fixed part fits.

    Example:
        >>> max_batch_that_fits(lambda b, f, m: max(0, (m - f) // b)).ok
        True
        >>> max_batch_that_fits(lambda b, f, m: m // b).ok  # forgets the weights and optimizer state
        False
    """
    cases = list(GPUS.values())
    got = _answers(answer, "max_batch_that_fits", cases)
    if isinstance(got, Feedback):
        return got
    if (fb := _not_int("max_batch_that_fits", got, _fits, cases, "a batch size (model.fit(batch_size=...) takes "
                                                                   "an int)")) is not None:
        return fb
    if _same(got, _fits, cases):
        t4 = _fits(*GPUS["a 16 GB T4 training a made-up CNN"])
        return Feedback(True, f"Right on all {len(cases)} made-up GPUs and models, from the T4 with a made-up CNN "
                              f"({t4:,} samples) to the laptop GPU and the card with room for half a sample, where "
                              "no batch fits (0). Real frameworks need some headroom on top: allocator "
                              "fragmentation and scratch space, so stay below the prediction.")

    def power_of_two(b: float, f: float, m: float) -> float:
        n = _fits(b, f, m)
        return 2 ** int(math.log2(n)) if n else 0

    mistakes = [
        (lambda b, f, m: m // b, "You forgot the fixed part: weights, gradients and optimizer state take memory "
                                 "whatever the batch. Subtract fixed_bytes before dividing."),
        (lambda b, f, m: (m - f) // b, "Right on the GPUs where the model fits; on the laptop GPU the fixed part "
                                       "alone is larger than the memory and your function returns a negative "
                                       "batch. Return 0 there: max(0, ...)."),
        (lambda b, f, m: round((m - f) / b), "You rounded to the nearest batch, which rounds up half of the time: "
                                             "a batch fits only if all of it fits. Round down (// or math.floor)."),
        (lambda b, f, m: math.ceil((m - f) / b), "You rounded up: that batch no longer fits. Round down "
                                                 "(// or math.floor)."),
        (lambda b, f, m: (m - f) / b, "A batch is a whole number of samples: round down with // or math.floor."),
        (power_of_two, "That is the largest power of two that fits, a common choice in practice, but the question "
                       "asks for the largest batch: round (memory - fixed) / per_sample down to a whole number."),
        (lambda b, f, m: max(0, math.ceil((m - f) / b) - 1),
         "On the 8 GB card the batch fills the memory exactly and still fits: use <=, not <."),
        (lambda b, f, m: max(1, (m - f) // b) if m > f else 0,
         "When the memory left after the fixed part is less than one sample (the card with room for half a sample), "
         "your function returns 1; no batch fits there: return 0. Drop the max(1, ...): floor((memory - fixed) / "
         "bytes_per_sample) is already 0 there."),
        (lambda b, f, m: max(1, (m - f) // b), "Your function returns 1 on the laptop GPU, where not even the fixed "
                                               "part fits: return 0 there, max(0, ...), not max(1, ...)."),
        (lambda b, f, m: int((m - f) / b), "Right on the GPUs where the model fits; on the laptop GPU the fixed part "
                                           "alone is larger than the memory and your function returns a negative "
                                           "batch. Return 0 there: max(0, ...)."),
        (lambda b, f, m: max(0, (0.9 * m - f) // b), "You kept 10 % of the memory free: the question asks for the "
                                                     "largest batch that fits in memory_bytes itself."),
        (lambda b, f, m: max(0, m // b - f), "You subtracted fixed_bytes from a number of samples: subtract it from "
                                             "the memory first, then divide by bytes_per_sample."),
        (lambda b, f, m: max(0, (m - f) // (b * 2**30 / 1e9)), "You mixed GB and GiB: every argument is in bytes, "
                                                               "so no conversion is needed."),
    ]
    for formula, message in mistakes:
        if _same(got, formula, cases):
            return wrong(message)
    i = _first_difference(got, _fits, cases)
    name, (b, f, m) = list(GPUS.items())[i]
    return wrong(f"For {name} (bytes_per_sample={b:,}, fixed_bytes={f:,}, memory_bytes={m:,}) your function gives "
                 f"{got[i]:g}; the largest batch that fits is {_fits(b, f, m):,}: floor((memory - fixed) / "
                 "bytes_per_sample), and 0 when that is negative.")


# (target_batch, largest_fit): exact splits, a rounded-up count that does not divide, batches that fit. Every case
# has a power-of-two answer too, so a learner's `while ...: k *= 2` loop ends (with a wrong value) instead of hanging.
ACCUMULATION_CASES = {
    "batch 2048 where 512 fit": (2048, 512),
    "batch 1000 where 400 fit (3 steps would be 333.3 samples each)": (1000, 400),
    "batch 768 where 256 fit": (768, 256),
    "batch 4096 where 1000 fit": (4096, 1000),
    "batch 96 where 10 fit (10 and 11 steps do not divide it)": (96, 10),
    "batch 6 where 4 fit": (6, 4),
    "batch 96 where 96 fit": (96, 96),
    "batch 64 where 100 fit": (64, 100),
    "batch 1536 where 512 fit": (1536, 512),
    "batch 100 where 30 fit": (100, 30),
}


def _accumulation_steps(target: int, fit: int) -> int:
    k = -(-target // fit)  # the fewest steps whose micro-batches fit
    while target % k:
        k += 1
    return k


def accumulation_steps(answer: Any) -> Feedback:
    """Exercise 05.4: ``accumulation_steps(target_batch, largest_fit)``.

    The fewest steps k with equal micro-batches that fit: k divides ``target_batch`` and
    ``target_batch // k <= largest_fit``; 1 when the whole batch fits.

    Example:
        >>> accumulation_steps(lambda t, f: next(k for k in range(1, t + 1) if t % k == 0 and t // k <= f)).ok
        True
        >>> accumulation_steps(lambda t, f: -(-t // f)).ok  # forgets that the micro-batches must be equal
        False
    """
    cases = list(ACCUMULATION_CASES.values())
    got = _answers(answer, "accumulation_steps", cases)
    if isinstance(got, Feedback):
        return got
    if (fb := _not_int("accumulation_steps", got, _accumulation_steps, cases,
                       "a number of steps (gradient_accumulation_steps takes an int)")) is not None:
        return fb
    if _same(got, _accumulation_steps, cases):
        return Feedback(True, f"Right on all {len(cases)} made-up cases: batch 1000 where 400 fit takes 4 steps of "
                              "250 (3 steps would be 333.3 samples each), batch 96 where 10 fit takes 12 steps of 8 "
                              "(10 and 11 do not divide 96), and a batch that fits takes 1 step, which you give "
                              "Keras as gradient_accumulation_steps=None.")

    def ceil_steps(t: int, f: int) -> int:
        return -(-t // f)

    def power_of_two(t: int, f: int) -> int:
        k = 1
        while t % k or t // k > f:
            k *= 2
            if k > t:
                return -1
        return k

    def micro(t: int, f: int) -> int:
        return t // _accumulation_steps(t, f)

    mistakes = [
        (micro, "You returned the micro-batch (target_batch // k), not the number of steps k."),
        (ceil_steps, "You rounded target_batch / largest_fit up, but those steps do not always split the batch into "
                     "equal micro-batches: batch 1000 in 3 steps would be 333.3 samples each. Raise k until it "
                     "divides target_batch."),
        (lambda t, f: t // f, "You rounded down: then a micro-batch is larger than largest_fit (batch 1000 where 400 "
                              "fit: 2 steps of 500), and a batch smaller than largest_fit gets 0 steps. Round up, "
                              "then make k divide the batch."),
        (lambda t, f: t // f + 1, "One step too many when largest_fit divides the batch exactly (batch 2048 where 512 "
                                  "fit takes 4 steps, not 5): round up with math.ceil or -(-t // f), not // then + 1."),
        (lambda t, f: t / f, "A number of steps is a whole number: round up, then make it divide target_batch."),
        (lambda t, f: max(2, _accumulation_steps(t, f)), "When the whole batch fits, the answer is 1 step: Keras "
                                                         "refuses gradient_accumulation_steps=1, so you pass None, "
                                                         "but the number of steps is still 1, not 2."),
        (lambda t, f: _accumulation_steps(t, f) if t > f else 0, "When the whole batch fits it takes 1 step, not 0: "
                                                                 "every update needs at least one step."),
        (power_of_two, "You tried powers of two only: batch 768 where 256 fit takes 3 steps of 256, which is "
                       "not a power of two. Try every k upwards from the rounded-up quotient."),
        (lambda t, f: _accumulation_steps(t, f - 1) if f > 1 else 1,
         "You required each micro-batch to be strictly smaller than largest_fit; a micro-batch of exactly "
         "largest_fit fits (batch 96 where 96 fit: 1 step). Use <=, not <."),
    ]
    for formula, message in mistakes:
        if _same(got, formula, cases):
            return wrong(message)
    i = _first_difference(got, _accumulation_steps, cases)
    name, (t, f) = list(ACCUMULATION_CASES.items())[i]
    right = _accumulation_steps(t, f)
    return wrong(f"For {name}, accumulation_steps({t}, {f}) gave {got[i]:g}; it is {right} ({right} micro-batches "
                 f"of {t // right}): the fewest steps k that divide target_batch with target_batch // k <= "
                 "largest_fit.")


# (base_lr, base_batch, micro, k): the CPU run's effective batch (2 steps of 1024), a micro-batch that is not the
# base batch, a ratio that is not a whole number, a micro-batch smaller than the base batch, and a rate with six
# decimals (0.021875), which a rate rounded for display misses
ACCUMULATED_LR_CASES = [(0.01, 32, 1024, 2), (0.1, 256, 64, 8), (0.05, 128, 96, 2), (0.02, 64, 16, 2),
                        (0.001, 1000, 250, 6), (0.03, 96, 35, 2)]
_MANY_DECIMALS = ACCUMULATED_LR_CASES[-1]


def _accumulated_lr(base_lr: float, base_batch: int, micro: int, k: int) -> float:
    return base_lr * micro * k / base_batch


def accumulated_lr(answer: Any) -> Feedback:
    """Exercise 05.5: ``accumulated_lr(base_lr, base_batch, micro, k)``.

    The linear scaling rule for a run with micro-batches of ``micro`` and ``gradient_accumulation_steps=k``:
    each update averages k micro-batches, so the batch that sets the rate is the effective one, ``micro * k``.

    Example:
        >>> accumulated_lr(lambda lr, b0, m, k: lr * (m * k) / b0).ok
        True
        >>> accumulated_lr(lambda lr, b0, m, k: lr * m / b0).ok  # scaled for the micro-batch only
        False
    """
    got = _answers(answer, "accumulated_lr", ACCUMULATED_LR_CASES)
    if isinstance(got, Feedback):
        return got
    if _same(got, _accumulated_lr, ACCUMULATED_LR_CASES):
        rate = _accumulated_lr(0.01, 32, 1024, 2)
        return Feedback(True, f"Right on all {len(ACCUMULATED_LR_CASES)} cases: 2 steps of 1024 from base batch 32 at "
                              f"0.01 make updates of batch 2048, so the rule gives {rate:g}. Warm it up as before, "
                              "but remember that Keras calls a schedule with micro-steps: "
                              "a warm-up over W updates is a schedule over k * W steps.")
    mistakes = [
        (lambda lr, b0, m, k: lr * m / b0, "You scaled for the micro-batch. Each update averages k micro-batches' "
                                           "gradients, so the update is that of a batch of micro * k samples: scale "
                                           "by micro * k / base_batch."),
        (lambda lr, b0, m, k: lr * k, "You multiplied by k only, as if the micro-batch were the base batch: scale by "
                                      "the effective batch over the base batch, micro * k / base_batch."),
        (lambda lr, b0, m, k: lr, "Your rate does not change, but the effective batch does: the linear rule scales "
                                  "the rate by micro * k / base_batch."),
        (lambda lr, b0, m, k: lr * b0 / (m * k), "You scaled the wrong way: a larger effective batch gets a larger "
                                                 "rate, base_lr * micro * k / base_batch."),
        (lambda lr, b0, m, k: lr * m * k * k / b0, "One k too many: Keras averages the k gradients (it divides their "
                                                   "sum by k), so the update is a mean over micro * k samples, as "
                                                   "for one batch of that size."),
        (lambda lr, b0, m, k: lr * (m * k // b0), "micro * k // base_batch rounds the ratio down (192 // 128 is 1, "
                                                  "not 1.5): use true division."),
        (lambda lr, b0, m, k: lr * math.sqrt(m * k / b0), "That is the square-root rule; the notebook's linear rule "
                                                          "multiplies by micro * k / base_batch itself."),
        (lambda lr, b0, m, k: lr * m * k, "Divide by base_batch too: the rule scales by how many times the batch "
                                          "grew, micro * k / base_batch."),
    ]
    for formula, message in mistakes:
        if _same(got, formula, ACCUMULATED_LR_CASES):
            return wrong(message)
    for decimals in range(1, 7):  # right, but rounded for display
        if all(math.isclose(g, round(_accumulated_lr(*c), decimals), rel_tol=1e-9, abs_tol=1e-12)
               for g, c in zip(got, ACCUMULATED_LR_CASES, strict=True)):
            return wrong(f"You rounded the rate to {decimals} decimal{'s' if decimals > 1 else ''}: "
                         f"accumulated_lr{_MANY_DECIMALS} is {_accumulated_lr(*_MANY_DECIMALS):g}. "
                         "Return it unrounded; round only where you print it.")
    i = _first_difference(got, _accumulated_lr, ACCUMULATED_LR_CASES)
    lr, b0, m, k = ACCUMULATED_LR_CASES[i]
    return wrong(f"accumulated_lr{ACCUMULATED_LR_CASES[i]} gave {got[i]:.6g}; it is "
                 f"{_accumulated_lr(lr, b0, m, k):.6g}: the effective batch is {m} x {k} = {m * k}, and the rate "
                 f"is {lr} x {m * k} / {b0}.")
