"""helpers.tables: aligned text tables and scientific notation."""

import pytest

from helpers import tables


def test_text_table_aligns_columns_and_refuses_no_rows():
    assert tables.text_table([("a", "bb"), ("ccc", "d")]).splitlines() == ["a    bb", "ccc  d"]
    with pytest.raises(ValueError, match="rows"):
        tables.text_table([])


def test_sci_writes_two_significant_figures_with_superscript_exponent():
    assert tables.sci(141_234.0) == "1.4×10⁵"
    assert tables.sci(0.00031) == "3.1×10⁻⁴"
    assert tables.sci(9.96e4) == "1.0×10⁵"
    assert tables.sci(123.0, digits=3) == "1.23×10²"
    with pytest.raises(ValueError, match="digits=0"):
        tables.sci(1.0, digits=0)
