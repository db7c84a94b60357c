"""Plain-text tables and numbers as you would write them (00 and ``make doctor``, 01, 02, and later notebooks).

:func:`text_table` aligns columns that read the same in a terminal and in a notebook; :func:`sci` writes
``1.4×10⁵``.
"""

from __future__ import annotations

import math
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
    ragged = [i for i, row in enumerate(rows) if len(row) != len(rows[0])]
    if ragged:
        raise ValueError(f"rows: row {ragged[0]} has {len(rows[ragged[0]])} cells and the header {len(rows[0])}; "
                         "give every row as many cells as the header.")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(f"{cell:<{w}}" for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(value: float, digits: int = 2) -> str:
    """`value` in scientific notation with `digits` significant figures, as you would write it.

    Example:
        >>> sci(141_234.0)
        '1.4×10⁵'
        >>> sci(0.00031)
        '3.1×10⁻⁴'
    """
    if not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits={digits!r}: use an integer >= 1.")
    if not math.isfinite(value):
        raise ValueError(f"value={value!r}: use a finite number (scientific notation has no NaN or infinity).")
    mantissa, exponent = f"{float(value) + 0.0:.{digits - 1}e}".split("e")  # + 0.0: no "-0" for -0.0
    return f"{mantissa}×10{str(int(exponent)).translate(_SUPERSCRIPT)}"
