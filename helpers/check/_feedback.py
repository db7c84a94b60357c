"""The feedback object every exercise check returns."""

from __future__ import annotations

import html
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer: `ok` and a message that explains it.

    Example:
        >>> Feedback(True, "2 GPUs: right.")
        ✅ 2 GPUs: right.
    """

    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"{'✅' if self.ok else '❌'} {self.message}"

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.ok else "#b35900"
        mark = "✅" if self.ok else "❌"
        return f'<div style="color:{colour}">{mark} {html.escape(self.message)}</div>'


def not_filled(answer: Any) -> Feedback | None:
    """A 'fill it in first' Feedback when the answer is still the placeholder (``...`` or None)."""
    if answer is Ellipsis or answer is None:
        return Feedback(False, "Not answered yet: replace the `...` in the cell above with your code, then run it.")
    return None


def returned_none(name: str) -> Feedback:
    """The Feedback for a function that returns None: not written yet, or no ``return`` at its end."""
    return Feedback(False, f"Not answered yet: `{name}` returns None. Replace the `...` in it with your code, and end "
                           "it with `return` and the result.")


def wrong(message: str) -> Feedback:
    """Shorthand for a Feedback that says what to look at."""
    return Feedback(False, f"Not yet. {message}")


def whole_number(answer: Any) -> int | Feedback:
    """The answer as an int, or the Feedback that says why it is not one.

    Accepts ints, NumPy integers, whole floats (3.0) and scalar tensors (anything with ``.numpy()``).

    Example:
        >>> whole_number(3.0)
        3
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if hasattr(answer, "numpy") and not isinstance(answer, numbers.Number):
        answer = answer.numpy()
        if getattr(answer, "ndim", 0) == 0 and hasattr(answer, "item"):
            answer = answer.item()
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or float(answer) != int(answer):
        return wrong(f"Answer with a whole number (an int), not {type(answer).__name__}.")
    return int(answer)


def call(fn: Callable[..., Any], *args: Any, show_args: bool = False) -> tuple[Any, Feedback | None]:
    """Call the learner's function: its value and None, or None and the Feedback that says how it failed.

    Never raises; with `show_args` the message names the arguments of the failing call.

    Example:
        >>> call(lambda x: 1 / x, 0, show_args=True)[1]
        ❌ Not yet. Your function raised ZeroDivisionError for (0): division by zero
    """
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - the learner's code may raise anything: say how
        detail = (str(exc).splitlines() or [""])[0][:200] or "(no message)"
        where = " for (" + ", ".join(_shown(a) for a in args) + ")" if show_args else ""
        return None, wrong(f"Your function raised {type(exc).__name__}{where}: {detail}")


def _shown(value: Any) -> str:
    if hasattr(value, "shape") and getattr(value, "ndim", 0):
        return "array"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def number(value: Any) -> float | None:
    """A real scalar (Python, NumPy, a one-element array or a scalar tensor) as a float, else None.

    Example:
        >>> number(3), number(True), number("3")
        (3.0, None, None)
    """
    if hasattr(value, "numpy") and not isinstance(value, numbers.Number):
        value = value.numpy()
    if hasattr(value, "size") and hasattr(value, "reshape"):
        if value.size != 1:
            return None
        value = value.reshape(()).item()
    elif hasattr(value, "item") and not isinstance(value, numbers.Number):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)
