"""Checks for notebook 06 · Mixed precision (section "Exercises").

Both exercises ask for a function, and the checks call it on values they make up:

* ``min_loss_scale(gradient)`` on gradients from 1 down to 4e-12, positive and negative, one exactly a
  power of two, so a constant, the exponent instead of the power of two, a scale one doubling short or
  long (``<=`` for ``<``), the threshold of subnormals, of bfloat16 or of float16's largest number
  instead of float16's smallest normal, a scale below 1, and a forgotten ``abs`` each give a wrong
  answer somewhere.
* ``next_scale(scale, finite, good_steps, growth_steps)`` -> ``(new_scale, new_good_steps, applied)``
  over made-up sequences of finite and inf/NaN steps, compared step by step with the rule Keras'
  ``LossScaleOptimizer`` follows (the tests check that rule against the real optimizer), so doubling
  instead of halving, a count not reset, and an inf/NaN update not skipped are refused.
"""

from __future__ import annotations

import math
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any

from helpers.check._feedback import Feedback, not_filled, number, returned_none, wrong

__all__ = ["min_loss_scale", "next_scale", "GRADIENTS", "SEQUENCES"]

SMALLEST_NORMAL = 2.0**-14  # float16's smallest normal number, 6.1e-5
SMALLEST_SUBNORMAL = 2.0**-24  # float16's smallest subnormal, 6.0e-8
FLOAT16_MAX = 65504.0
BFLOAT16_SMALLEST_NORMAL = 2.0**-126  # float32's too: such formats need no loss scale

# Made-up gradients: two are negative, one (2**-20) is a power of two, so that abs(g) * 64 lands exactly
# on 2**-14 and `<=` in place of `<` doubles once too often.
GRADIENTS = (1e-3, 1.0, 5e-6, 2.0**-20, -2e-7, 3e-8, 1e-8, 7e-10, -4e-12)


class _TooSlow(Exception):
    pass


def _call(fn: Callable[..., Any], *args: Any, seconds: float = 2.0) -> tuple[Any, Feedback | None]:
    """Call the learner's function; an exception or an endless loop becomes a Feedback, never a crash."""
    alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if alarm:
        def stop(signum: int, frame: Any) -> None:
            raise _TooSlow

        previous = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args), None
    except _TooSlow:
        shown = ", ".join(repr(a) for a in args)
        return None, wrong(f"Your function did not return within {seconds:g} s for ({shown}): a loop that never "
                           "ends? For a negative gradient, compare abs(gradient) * scale with the threshold.")
    except Exception as exc:  # the learner's code failed: say how, never raise
        return None, wrong(f"Your function raised {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _reference_scale(gradient: float, threshold: float = SMALLEST_NORMAL) -> int:
    scale = 1
    while abs(gradient) * scale < threshold:
        scale *= 2
    return scale




def min_loss_scale(answer: Any) -> Feedback:
    """Exercise 06.1: ``min_loss_scale(gradient)``, the smallest power of two that lifts ``abs(gradient)``
    into float16's normal range (at least 2**-14), so it keeps float16's full precision.

    Example:
        >>> def min_loss_scale_(g):
        ...     scale = 1
        ...     while abs(g) * scale < 2.0**-14:
        ...         scale *= 2
        ...     return scale
        >>> min_loss_scale(min_loss_scale_).ok
        True
        >>> min_loss_scale(lambda g: 2**15).ok  # Keras' initial scale: too large for most, too small for some
        False
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong(f"Define a function, `def min_loss_scale(gradient): ...`, and set answer_1 to it, not to a "
                     f"{type(answer).__name__}: the check calls it on gradients it makes up.")
    for g in GRADIENTS:
        got, failed = _call(answer, g)
        if failed is not None:
            return failed
        if got is None or got is Ellipsis:
            return returned_none("min_loss_scale")
        value = number(got)
        if value is None:
            return wrong(f"min_loss_scale({g:g}) returned {type(got).__name__}; return a number (a power of two).")
        expected = _reference_scale(g)
        if value == expected:
            continue
        shown = f"min_loss_scale({g:g}) returned {value:g}, expected {expected:g}"
        if g < 0 and value == 1:
            return wrong(f"{shown}. Gradients can be negative: compare abs(gradient) * scale with the threshold.")
        if value == math.log2(expected):
            return wrong(f"{shown}. You returned the exponent k; return the scale 2**k.")
        if value > 0 and not math.log2(value).is_integer():
            return wrong(f"{shown}. Loss scales are powers of two: multiplying by 2**k changes only the "
                         "exponent, so scaling and unscaling lose no bits.")
        if 0 < value < 1:
            return wrong(f"{shown}. The scale is 2**k with k >= 0: a loss scale never shrinks a gradient, and "
                         "one already at or above 2**-14 needs a scale of 1.")
        if value == 1 and expected > 1 and value == _reference_scale(g, BFLOAT16_SMALLEST_NORMAL):
            return wrong(f"{shown}: no scaling at all. The threshold is float16's smallest normal, 2**-14 (6.1e-5); "
                         "bfloat16's and float32's (1.2e-38) are far lower, which is why bfloat16 needs no loss "
                         "scaling.")
        if value == _reference_scale(g, SMALLEST_SUBNORMAL):
            return wrong(f"{shown}. That scale only keeps the gradient from becoming 0 (float16's smallest "
                         "subnormal); aim for the smallest normal, np.finfo(np.float16).smallest_normal (2**-14), "
                         "where float16 keeps all its significant bits.")
        if value in (_reference_scale(g, FLOAT16_MAX), _reference_scale(g, FLOAT16_MAX) / 2):
            return wrong(f"{shown}. You aimed at float16's largest number, 65504; the smallest scale lifts the "
                         "gradient only to float16's smallest normal, 2**-14.")
        if value == 2 * expected and abs(g) * expected == SMALLEST_NORMAL:
            return wrong(f"{shown}: one doubling too many. Here abs(gradient) * {expected:g} is exactly 2**-14, "
                         "which already reaches it: double while the product is < 2**-14, not <=.")
        if value == expected / 2:
            return wrong(f"{shown}: one doubling short. abs(gradient) * scale must reach the smallest normal "
                         "(>=), not stay below it.")
        if value > expected:
            return wrong(f"{shown}: larger than needed. Start from 1 and double while abs(gradient) * scale is "
                         "below 2**-14; stop at the first scale that reaches it.")
        return wrong(f"{shown}: too small, the scaled gradient stays below float16's smallest normal (2**-14).")
    return Feedback(True, f"Right on {len(GRADIENTS)} gradients from 1 down to 4e-12, negative ones included: "
                          f"a gradient of 1e-8 needs a loss scale of {_reference_scale(1e-8)}, "
                          f"one of 3e-8 needs {_reference_scale(3e-8)}.")


# --------------------------------------------------------------------------- exercise 2
# (growth_steps, initial scale, sequence of finite (True) / inf-or-NaN (False) steps)
SEQUENCES: tuple[tuple[int, float, tuple[bool, ...]], ...] = (
    (3, 1024.0, (True, True, True, True, False, True, True, True, False, False, True)),
    (2, 32768.0, (False, False, True, True, True, False, True, True, True, True)),
    (1, 8.0, (True, True, False, True)),
)


def _reference_next(scale: float, finite: bool, good_steps: int, growth_steps: int) -> tuple[float, int, bool]:
    """The rule of Keras' LossScaleOptimizer: skip and halve on inf/NaN, double after `growth_steps` finite steps."""
    if not finite:
        return scale / 2, 0, False
    if good_steps + 1 >= growth_steps:
        return scale * 2, 0, True
    return scale, good_steps + 1, True


def _trajectory(fn: Callable[..., Any], growth: int, scale: float,
                steps: Sequence[bool]) -> tuple[list[tuple[float, int, bool]] | None, Feedback | None]:
    out, good = [], 0
    for finite in steps:
        got, failed = _call(fn, scale, finite, good, growth)
        if failed is not None:
            return None, failed
        if got is None or got is Ellipsis:
            return None, returned_none("next_scale")
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            return None, wrong(f"next_scale returned {type(got).__name__} {got!r}; return three values "
                               "(new_scale, new_good_steps, applied), e.g. `return scale * 2, 0, True`.")
        new_scale, new_good = number(got[0]), number(got[1])
        if new_scale is None or new_good is None or got[2] not in (True, False):
            return None, wrong(f"next_scale returned {got!r}; return two numbers and a bool "
                               "(new_scale, new_good_steps, applied).")
        out.append((new_scale, int(new_good), bool(got[2])))
        scale, good = new_scale, int(new_good)
    return out, None


def _variant(kind: str) -> Callable[..., tuple[float, int, bool]]:
    def fn(scale: float, finite: bool, good: int, growth: int) -> tuple[float, int, bool]:
        if not finite:
            return scale / 2, (good if kind == "no_reset" else 0), False
        if kind == "always_double":
            return scale * 2, 0, True
        if kind == "late" and good + 1 > growth:
            return scale * 2, 0, True
        if kind == "late":
            return scale, good + 1, True
        return _reference_next(scale, finite, good, growth)
    return fn


def next_scale(answer: Any) -> Feedback:
    """Exercise 06.2: ``next_scale(scale, finite, good_steps, growth_steps)`` returns
    ``(new_scale, new_good_steps, applied)`` by the dynamic loss-scaling rule of ``LossScaleOptimizer``.

    Example:
        >>> def next_scale_(scale, finite, good_steps, growth_steps):
        ...     if not finite:
        ...         return scale / 2, 0, False
        ...     if good_steps + 1 == growth_steps:
        ...         return scale * 2, 0, True
        ...     return scale, good_steps + 1, True
        >>> next_scale(next_scale_).ok
        True
        >>> next_scale(lambda s, f, g, n: next_scale_(s, True, g, n)).ok  # treats inf/NaN steps as finite
        False
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong(f"Define a function, `def next_scale(scale, finite, good_steps, growth_steps): ...`, and set "
                     f"answer_2 to it, not to a {type(answer).__name__}: the check runs it over made-up steps.")
    for growth, start, steps in SEQUENCES:
        got, failed = _trajectory(answer, growth, start, steps)
        if failed is not None:
            return failed
        expected, _ = _trajectory(_reference_next, growth, start, steps)
        if got == expected:
            continue
        where = next(i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b)
        shown = (f"With growth_steps={growth}, starting at scale {start:g}, over the steps "
                 f"{''.join('F' if s else 'X' for s in steps)} (F finite, X inf/NaN): step {where + 1} gave "
                 f"{got[where]}, expected {expected[where]}")
        for kind, hint in (
                ("always_double", "you double after every finite step; double only after growth_steps finite "
                                  "steps in a row, then count again from 0."),
                ("no_reset", "after an inf/NaN step the count of good steps starts again from 0."),
                ("late", "you double one step late: the growth_steps-th finite step in a row doubles the scale "
                         "(good_steps + 1 == growth_steps).")):
            variant, _ = _trajectory(_variant(kind), growth, start, steps)
            if got == variant:
                return wrong(f"{shown}: {hint}")
        scale_got, scale_expected = got[where][0], expected[where][0]
        applied_wrong = got[where][2] != expected[where][2]
        if not steps[where] and got[where][2] and scale_got >= 2 * scale_expected:
            return wrong(f"{shown}: you treated the inf/NaN step as a finite one. It skips the update "
                         "(applied False) and halves the scale.")
        if not steps[where] and applied_wrong:
            return wrong(f"{shown}. An inf/NaN step skips the update: return applied = False for it, so the "
                         "weights keep their values.")
        if applied_wrong:
            return wrong(f"{shown}. A finite step's update is applied: return applied = True for it.")
        if not steps[where] and scale_got != scale_expected:
            return wrong(f"{shown}. An inf/NaN step halves the scale (scale / 2) and skips the update.")
        if got[where][1] != expected[where][1]:
            return wrong(f"{shown}. The second number counts finite steps in a row since the last change: add 1 "
                         "after a finite step, reset to 0 after doubling or halving.")
        return wrong(f"{shown}. Double after growth_steps finite steps in a row; halve after an inf/NaN step.")
    return Feedback(True, f"Right on {len(SEQUENCES)} made-up sequences: your rule gives the same scales and skipped "
                          "updates as Keras' LossScaleOptimizer (skip and halve on inf/NaN, double after "
                          "growth_steps finite steps in a row).")
