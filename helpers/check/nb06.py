"""Checks for notebook 06 · Mixed precision (section "Exercises").

Both exercises ask for a function, and the checks call it on values they make up:

* ``min_loss_scale(gradient)`` on gradients from 1 down to 4e-12, positive and negative, one exactly a
  power of two, so a constant, the exponent instead of the power of two, a scale one doubling short or
  long (``<=`` for ``<``), the threshold of subnormals, of bfloat16 or of float16's largest number
  instead of float16's smallest normal, a rounded decimal for 2**-14 (6.1e-5, 6.1035e-5, 6.10351e-5,
  6.104e-5), a comparison or a division that runs in float16, a scale below 1, and a forgotten ``abs``
  each give a wrong answer somewhere.
* ``next_scale(scale, finite, good_steps, growth_steps)`` -> ``(new_scale, new_good_steps, applied)``
  over made-up sequences of finite and inf/NaN steps, compared step by step with the rule Keras'
  ``LossScaleOptimizer`` follows (the tests check that rule against the real optimizer), so doubling
  instead of halving, a count not reset, and an inf/NaN update not skipped are refused. The answer is
  the tuple the text asks for, ``applied`` a bool: a list, or 1/0 for True/False, is refused with a hint.
"""

from __future__ import annotations

import math
import signal
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from helpers.check._feedback import Feedback, not_filled, number, returned_none, wrong

__all__ = ["min_loss_scale", "next_scale", "GRADIENTS", "SEQUENCES"]

SMALLEST_NORMAL = 2.0**-14  # float16's smallest normal number, 6.1e-5
SMALLEST_SUBNORMAL = 2.0**-24  # float16's smallest subnormal, 6.0e-8
FLOAT16_MAX = 65504.0
BFLOAT16_SMALLEST_NORMAL = 2.0**-126  # float32's too: such formats need no loss scale

# Made-up gradients. Two are negative; 2**-20 is a power of two, so that abs(g) * 64 lands exactly on 2**-14 and
# `<=` in place of `<` doubles once too often; five sit just around 2**-14 = 6.103515625e-05 once scaled, so a
# threshold written as a rounded decimal gives a wrong scale for one of them: 6e-5 and 6.1e-5 at 6.1003e-5;
# 6.1035e-5 and 6.10351e-5 at 6.103515e-5, which is below 2**-14 by 6.25e-12; 6.104e-5 above it, at
# 6.1037e-5. 1e-8 and 3e-8 are where arithmetic in float16 goes wrong (0, and a rounded value, once cast to
# float16). 6.1034e-5 and 6.103515e-5 lie within half a float16 step (2**-25) below 2**-14, so a comparison with
# np.finfo(np.float16).smallest_normal itself, which NumPy 2 runs in float16, rounds them up to 2**-14 and stops a
# doubling short on both; a rounded decimal between them (6.1035e-5) fails on one only.
GRADIENTS = (1e-3, 1.0, 5e-6, 2.0**-20, 3e-8, 1e-8, 7e-10, 6.1003e-5 / 2**10, 6.1037e-5 / 2**12, 6.103515e-5 / 2**9,
             6.1034e-5 / 2**11, -2e-7, -4e-12, -6.05e-5 / 2**7)


class _TooSlow(Exception):
    pass


def _call(fn: Callable[..., Any], *args: Any, seconds: float = 2.0) -> tuple[Any, Feedback | None]:
    """Call the learner's function; an exception or an endless loop becomes a Feedback, never a crash.

    NumPy's warnings (a float16 overflow, a division by zero) stay off the page: the Feedback explains them.
    """
    alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if alarm:
        def stop(signum: int, frame: Any) -> None:
            raise _TooSlow

        previous = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
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


def _float16_scale(gradient: float) -> float | None:
    """What ``2**ceil(log2(smallest_normal / abs(g)))`` gives when the division runs in float16 (NumPy 2 keeps
    ``np.float16 / float`` in float16): None where it fails (the quotient overflows to inf)."""
    with np.errstate(all="ignore"):
        quotient = float(np.float16(SMALLEST_NORMAL) / np.float16(abs(gradient)))
    if not math.isfinite(quotient) or quotient <= 0:
        return None
    return 2 ** max(0, math.ceil(math.log2(quotient)))


def _product(gradient: float, scale: float) -> float:
    return abs(gradient) * scale / SMALLEST_NORMAL  # 1.0: exactly 2**-14


def _rounds_up_in_float16(gradient: float, scale: float) -> bool:
    """Whether abs(gradient) * scale is below 2**-14 but becomes 2**-14 in float16 (within half a float16 step)."""
    below = abs(gradient) * scale
    return below < SMALLEST_NORMAL and float(np.float16(below)) == SMALLEST_NORMAL


def _outcomes(answer: Callable[..., Any]) -> tuple[dict[float, Any], Feedback | None]:
    """The answer on every gradient (positives first): a number, or the Feedback of a failed call.

    After an endless loop the remaining gradients are not tried (each would cost the time limit again).
    """
    out: dict[float, Any] = {}
    for g in sorted(GRADIENTS, key=lambda g: g < 0):
        got, failed = _call(answer, g)
        if failed is not None:
            out[g] = failed
            if "did not return" in failed.message:
                break
            continue
        if got is None or got is Ellipsis:
            return out, returned_none("min_loss_scale")
        if isinstance(got, np.floating) and got.dtype == np.float16:
            return out, wrong(f"min_loss_scale({g:g}) returned a np.float16 ({float(got):g}): your arithmetic ran in "
                              f"float16. {FLOAT16_ARITHMETIC}")
        value = number(got)
        if value is None:
            return out, wrong(f"min_loss_scale({g:g}) returned {type(got).__name__}; return a number (a power of "
                              "two).")
        out[g] = value
    return out, None


FLOAT16_ARITHMETIC = ("np.finfo(np.float16).smallest_normal is itself a float16 number, and under NumPy 2 "
                      "dividing it by a Python float stays in float16: the gradient is first rounded to float16 (1e-8 "
                      "becomes 0, 3e-8 loses digits) and a quotient above 65504 becomes inf. Convert the threshold "
                      "first, float(np.finfo(np.float16).smallest_normal), or write 2.0**-14.")


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
    got, failed = _outcomes(answer)
    if failed is not None:
        return failed
    expected = {g: _reference_scale(g) for g in GRADIENTS}
    bad = [g for g in GRADIENTS if g not in got or isinstance(got[g], Feedback) or got[g] != expected[g]]
    if not bad:
        return Feedback(True, f"Right on {len(GRADIENTS)} gradients from 1 down to 4e-12, negative ones and some close "
                              f"to 2**-14 once scaled included: a gradient of 1e-8 needs a loss scale of "
                              f"{_reference_scale(1e-8)}, one of 3e-8 needs {_reference_scale(3e-8)}.")
    return _diagnose_scale(answer, got, expected, bad)


def _shown(g: float, got: dict[float, Any], expected: dict[float, int]) -> str:
    if g not in got:
        return f"min_loss_scale({g:g}) was not tried (an earlier call did not return)"
    if isinstance(got[g], Feedback):
        return f"min_loss_scale({g:g}) failed: {got[g].message.removeprefix('Not yet. ')}"
    return f"min_loss_scale({g:g}) returned {got[g]:g}, expected {expected[g]:g}"


def _diagnose_scale(answer: Callable[..., Any], got: dict[float, Any], expected: dict[float, int],
                    bad: list[float]) -> Feedback:
    """Name the mistake behind the wrong values: each rule looks at all the gradients the answer got wrong."""
    values = {g: v for g, v in got.items() if not isinstance(v, Feedback)}
    first = bad[0]
    shown = _shown(first, got, expected)
    # 1. Right on every positive gradient, wrong (or failing, or endless) on negative ones: abs() is missing.
    if all(g < 0 for g in bad):
        g = bad[0]
        positive, failed = _call(answer, abs(g))
        if failed is None and number(positive) == expected[g]:
            return wrong(f"{_shown(g, got, expected)}, while min_loss_scale({abs(g):g}) is right: abs() is missing. "
                         "For a negative gradient, gradient * scale stays negative and never reaches 2**-14 (the "
                         "loop doubles forever, or the scale overflows): compare abs(gradient) * scale.")
    # 2. `<=` for `<`: wrong only where abs(g) * expected is exactly 2**-14, by one doubling.
    if all(_product(g, expected[g]) == 1.0 and values.get(g) == 2 * expected[g] for g in bad):
        return wrong(f"{shown}: one doubling too many. Here abs(gradient) * {expected[first]:g} is exactly 2**-14, "
                     "which already reaches it: double while the product is < 2**-14, not <=.")
    # 3. A comparison in float16: wrong at every gradient whose scaled value float16 rounds up to 2**-14, only there.
    rounds_up = {g for g in GRADIENTS if _rounds_up_in_float16(g, expected[g] / 2)}
    if set(bad) == rounds_up and all(values.get(g) == expected[g] / 2 for g in bad):
        below = abs(first) * expected[first] / 2
        return wrong(f"{shown}: abs(gradient) * {expected[first] / 2:g} = {below:.10g} is still below 2**-14 = "
                     f"{SMALLEST_NORMAL!r}, but your comparison ran in float16, which rounds it to 2**-14. "
                     "np.finfo(np.float16).smallest_normal is a float16 number, and under NumPy 2 comparing a "
                     "Python float with it converts the float to float16 first. Convert the threshold: "
                     "float(np.finfo(np.float16).smallest_normal), or write 2.0**-14.")
    # 4. A rounded decimal for 2**-14: wrong only at gradients whose scaled value sits just around it.
    if all(values.get(g) == expected[g] / 2 and _product(g, expected[g]) > 1.96 for g in bad):
        below = abs(first) * expected[first] / 2
        return wrong(f"{shown}: abs(gradient) * {expected[first] / 2:g} = {below:.10g} is still below 2**-14 = "
                     f"{SMALLEST_NORMAL!r}, though it passes your threshold: your threshold is a rounded decimal "
                     "(6.1e-5, 6.1035e-5 and 6.10351e-5 are all below 2**-14). Write it exactly: 2.0**-14, or "
                     "float(np.finfo(np.float16).smallest_normal).")
    if all(values.get(g) == 2 * expected[g] and 1.0 <= _product(g, expected[g]) < 1.02 for g in bad):
        above = abs(first) * expected[first]
        return wrong(f"{shown}: abs(gradient) * {expected[first]:g} = {above:.10g} already reaches 2**-14 = "
                     f"{SMALLEST_NORMAL!r}: your threshold is a rounded decimal above it. Write it exactly: "
                     "2.0**-14, or float(np.finfo(np.float16).smallest_normal).")
    # 5. Arithmetic in float16: wrong only where float16 arithmetic goes wrong, and not only at the boundary.
    float16_wrong = {g for g in GRADIENTS if _float16_scale(g) != expected[g]}
    if set(bad) <= float16_wrong and any(1.02 <= _product(g, expected[g]) <= 1.96 for g in bad):
        return wrong(f"{shown}: your arithmetic ran in float16. {FLOAT16_ARITHMETIC}")
    # 6. One answer on all gradients that follows another rule.
    for name, rule in _WRONG_RULES:
        if all(g in values and values[g] == rule(g) for g in GRADIENTS):
            return wrong(f"{shown}. {name}")
    # 7. Otherwise: what is wrong with the first wrong value.
    if isinstance(got.get(first), Feedback):
        return got[first]
    if first not in got:
        return wrong(f"{shown}.")
    value, want = values[first], expected[first]
    if value == math.log2(want):
        return wrong(f"{shown}. You returned the exponent k; return the scale 2**k.")
    if value > 0 and not math.log2(value).is_integer():
        return wrong(f"{shown}. Loss scales are powers of two: multiplying by 2**k changes only the "
                     "exponent, so scaling and unscaling lose no bits.")
    if 0 < value < 1:
        return wrong(f"{shown}. The scale is 2**k with k >= 0: a loss scale never shrinks a gradient, and "
                     "one already at or above 2**-14 needs a scale of 1.")
    if value == want / 2:
        return wrong(f"{shown}: one doubling short. abs(gradient) * scale must reach the smallest normal "
                     "(>=), not stay below it.")
    if value > want:
        return wrong(f"{shown}: larger than needed. Start from 1 and double while abs(gradient) * scale is "
                     "below 2**-14; stop at the first scale that reaches it.")
    return wrong(f"{shown}: too small, the scaled gradient stays below float16's smallest normal (2**-14).")


_WRONG_RULES: tuple[tuple[str, Callable[[float], float]], ...] = (
    ("That is no scaling at all. The threshold is float16's smallest normal, 2**-14 (6.1e-5); bfloat16's and float32's "
     "(1.2e-38) are far lower, which is why bfloat16 needs no loss scaling.",
     lambda g: _reference_scale(g, BFLOAT16_SMALLEST_NORMAL)),
    ("That scale only keeps the gradient from becoming 0 (float16's smallest subnormal); aim for the smallest "
     "normal, np.finfo(np.float16).smallest_normal (2**-14), where float16 keeps all its significant bits.",
     lambda g: _reference_scale(g, SMALLEST_SUBNORMAL)),
    ("You aimed at float16's largest number, 65504; the smallest scale lifts the gradient only to float16's "
     "smallest normal, 2**-14.", lambda g: _reference_scale(g, FLOAT16_MAX)),
    ("You aimed at float16's largest number, 65504; the smallest scale lifts the gradient only to float16's "
     "smallest normal, 2**-14.", lambda g: _reference_scale(g, FLOAT16_MAX) / 2),
    ("You returned the exponent k; return the scale 2**k.", lambda g: math.log2(_reference_scale(g))),
)


# --------------------------------------------------------------------------- exercise 2
# (growth_steps, initial scale, sequence of finite (True) / inf-or-NaN (False) steps)
SEQUENCES: tuple[tuple[int, float, tuple[bool, ...]], ...] = (
    (3, 1024.0, (True, True, True, True, False, True, True, True, False, False, True)),
    (2, 32768.0, (False, False, True, True, True, False, True, True, True, True)),
    (1, 8.0, (True, True, False, True)),
    (4, 2.0, (False, False, True, False)),  # halves below 1: 1.0, 0.5, 0.5, 0.25 (Keras sets no floor)
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
        if not isinstance(got, tuple):
            return None, wrong(f"next_scale returned a {type(got).__name__}, {got!r}; return a tuple, as the "
                               "exercise asks: `return new_scale, new_good_steps, applied` (no brackets).")
        new_scale, new_good = number(got[0]), number(got[1])
        if new_scale is None or new_good is None:
            return None, wrong(f"next_scale returned {got!r}; return two numbers and a bool "
                               "(new_scale, new_good_steps, applied).")
        if not isinstance(got[2], (bool, np.bool_)):
            return None, wrong(f"next_scale returned applied = {got[2]!r}, a {type(got[2]).__name__}; applied is a "
                               "bool: return True (the update is applied) or False (skipped), not 1 or 0.")
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
        if not steps[where] and scale_got == math.floor(scale_expected) != scale_expected:
            return wrong(f"{shown}: the scale was rounded down to a whole number. Halve with true division, "
                         "scale / 2: `//` (or int()) turns 0.5 into 0, and a scale can fall below 1.")
        if not steps[where] and scale_got != scale_expected:
            return wrong(f"{shown}. An inf/NaN step halves the scale (scale / 2) and skips the update.")
        if steps[where] and scale_got * 2 == scale_expected and got[where][1] == expected[where][1] + growth:
            return wrong(f"{shown}: the scale never doubled. After growth_steps finite steps in a row (here "
                         f"{growth}: good_steps + 1 == growth_steps) double it; use the growth_steps argument, "
                         "not a fixed number.")
        if steps[where] and scale_got == 2 * scale_expected and got[where][1] == 0:
            return wrong(f"{shown}: you double one step early. Double when the count of finite steps in a row, "
                         "this one included (good_steps + 1), reaches growth_steps.")
        if got[where][1] != expected[where][1]:
            return wrong(f"{shown}. The second number counts finite steps in a row since the last change: add 1 "
                         "after a finite step, reset to 0 after doubling or halving.")
        return wrong(f"{shown}. Double after growth_steps finite steps in a row; halve after an inf/NaN step.")
    return Feedback(True, f"Right on {len(SEQUENCES)} made-up sequences: your rule gives the same scales and skipped "
                          "updates as Keras' LossScaleOptimizer (skip and halve on inf/NaN, double after "
                          "growth_steps finite steps in a row).")
