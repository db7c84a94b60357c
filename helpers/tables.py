"""Plain-text tables: aligned columns that read the same in a terminal and in a notebook."""

from __future__ import annotations

from collections.abc import Sequence


def text_table(rows: Sequence[Sequence[str]]) -> str:
    """Left-align every column (two spaces between columns); the first row is the header.

    Example:
        >>> print(text_table([("op", "ran on"), ("matmul", "CPU:0")]))
        op      ran on
        matmul  CPU:0
    """
    if not rows:
        raise ValueError("rows is empty: pass a header row and the data rows.")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(f"{cell:<{w}}" for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)
