"""The feedback object every exercise check returns."""

from __future__ import annotations

import html
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


def wrong(message: str) -> Feedback:
    """Shorthand for a Feedback that says what to look at."""
    return Feedback(False, f"Not yet. {message}")
