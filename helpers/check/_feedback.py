"""The feedback object every exercise check returns."""

from __future__ import annotations

import html
import numbers
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
