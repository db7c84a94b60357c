"""Property tests of the sentences and tables helpers.gpus and helpers.tables return (notebook 09, and the
tables of 00-08): each one quotes the numbers it was given, rounded as printed, and never says what they
contradict (a "yes" that does not fit, a "measured" rate that was scaled, a "published" figure that was
computed, an error of the wrong sign)."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from helpers import gpus, tables

TABLE = gpus.specs()
GIB = 2**30
finite = st.floats(min_value=1e-6, max_value=1e9, allow_nan=False, allow_infinity=False)
bad_rates = st.sampled_from([0.0, -1.0, math.nan, math.inf, -math.inf])


# ---------------------------------------------------------------- tables.sci and tables.text_table
@given(st.floats(min_value=-1e300, max_value=1e300, allow_nan=False).filter(lambda v: v == 0 or abs(v) > 1e-300),
       st.integers(min_value=1, max_value=6))
def test_sci_quotes_the_value_to_the_digits_asked(value, digits):
    text = tables.sci(value, digits)
    mantissa, exponent = text.split("×10")
    exponent = int(exponent.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
    assert len(mantissa.lstrip("-").replace(".", "")) == digits
    back = float(mantissa) * 10.0**exponent
    assert math.isclose(back, value, rel_tol=0.5 * 10 ** (1 - digits) * 1.0001, abs_tol=1e-300)
    assert (value < 0) == text.startswith("-")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_sci_refuses_what_has_no_scientific_notation(value):
    with pytest.raises(ValueError, match="value="):
        tables.sci(value)


cells = st.text(alphabet=st.characters(codec="ascii", categories=["L", "N", "P"]), min_size=0, max_size=8)


@given(st.integers(min_value=1, max_value=5).flatmap(
    lambda n: st.lists(st.lists(cells, min_size=n, max_size=n), min_size=1, max_size=6)))
def test_text_table_keeps_every_cell_in_its_column(rows):
    lines = tables.text_table(rows).split("\n")
    assert len(lines) == len(rows)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    starts = [sum(widths[:i]) + 2 * i for i in range(len(widths))]
    for line, row in zip(lines, rows, strict=True):
        for start, width, cell in zip(starts, widths, row, strict=True):
            assert line[start:start + width].rstrip() == cell.rstrip()


def test_text_table_refuses_ragged_rows_naming_them():
    with pytest.raises(ValueError, match="row 1 has 1 cells and the header 2"):
        tables.text_table([("a", "b"), ("c",)])


# ---------------------------------------------------------------- lookup notes
variants = st.sampled_from(["", " Ti", " Laptop GPU", " D"])
prefixes = st.sampled_from(["", "NVIDIA ", "Tesla ", "NVIDIA GeForce "])


@given(st.sampled_from(TABLE), prefixes, variants, st.sampled_from([None, 8, 16, 24, 32, 40, 48, 80, 141]))
def test_a_lookup_note_agrees_with_what_was_found(row, prefix, variant, memory):
    name = prefix + row["name"] + variant + (f" {memory}GB" if memory else "")
    found = gpus.lookup(name, TABLE)
    assert found.note.startswith("in the table") == found.found
    if not found.found:
        assert found.row is None and "not in the table" in found.note
        return
    assert found.note.startswith(f"in the table as {found.row['name']!r}")
    listed = gpus.parse_name(found.row["name"]).memory_gb or found.row["memory_gb"]
    asked = gpus.parse_name(name).memory_gb
    assert (f"this card has {asked} GB" in found.note) == (asked is not None and asked != listed)


# ---------------------------------------------------------------- compute capability
@given(st.floats(min_value=1.0, max_value=12.0, allow_nan=False))
def test_the_suggested_policy_follows_the_gates(cc):
    policy, on = gpus.suggested_policy(cc), gpus.features(cc)
    if cc >= 8.0:
        assert policy == "mixed_bfloat16" and on["bfloat16 and TF32 Tensor Cores"]
    elif cc >= 7.0:
        assert policy.startswith("mixed_float16") and not on["bfloat16 and TF32 Tensor Cores"]
    else:
        assert policy.startswith("float32") and not any(on.values())


@given(st.lists(st.sampled_from([3.7, 6.0, 6.1, 7.0, 7.5, 8.0, 8.6, 8.9, 9.0, 10.0]), min_size=1, max_size=6))
def test_the_features_table_marks_what_features_says(ccs):
    rows = [{"name": f"GPU {i}", "compute_capability": cc} for i, cc in enumerate(ccs)]
    lines = gpus.features_table(rows).splitlines()[1:]
    for line, row in zip(lines, rows, strict=True):
        marks = line.split()[-3:]
        assert marks == ["yes" if on else "-" for on in gpus.features(row["compute_capability"]).values()]
        assert f"{row['compute_capability']:.1f}" in line


# ---------------------------------------------------------------- the memory estimate's table
part = st.integers(min_value=0, max_value=10**12)


@given(part, part, part, part, part, st.one_of(st.none(), st.integers(min_value=1, max_value=10**12)))
def test_the_estimate_table_quotes_its_parts_and_the_error_with_its_sign(w, c, g, o, a, measured):
    est = gpus.MemoryEstimate(w, c, g, o, a)
    text = est.table(measured)
    assert text.split()[:3] == ["part", "MiB", "share"]  # binary units, as the GiB of the fits table
    total = re.search(r"^estimate, total\s+(\S+)\s+100%$", text, re.M)
    assert total and total[1] == f"{est.total / 2**20:,.1f}"
    for value in (w, c, g, o, a):
        assert f"{value / 2**20:,.1f}" in text
    if est.total == 0:
        assert "%" not in text.splitlines()[1]  # no share of nothing
    if measured:
        error = (est.total - measured) / measured
        m = re.search(r"error ([+-][\d.]+)%$", text, re.M)
        assert m and m[1] == f"{error:+.1%}"[:-1]
        assert m[1].startswith("-") == (error < 0)  # below the measurement reads negative, never positive
    else:
        assert "measured peak" not in text


# ---------------------------------------------------------------- fits and the fits table
@given(st.floats(min_value=0, max_value=1e13, allow_nan=False), st.sampled_from([g["memory_gb"] for g in TABLE]),
       st.floats(min_value=0.01, max_value=1.0))
def test_fits_is_the_rule_it_states(job, gb, usable):
    assert gpus.fits(job, gb, usable) == (job <= usable * gb * GIB)
    assert gpus.fits(job * 0.5, gb, usable) or not gpus.fits(job, gb, usable)  # smaller never fits less


@given(st.dictionaries(st.text(alphabet="abcxyz", min_size=1, max_size=6), st.floats(min_value=0, max_value=2e11),
                       min_size=1, max_size=5))
def test_the_fits_table_marks_yes_exactly_where_fits_says_so(jobs):
    lines = gpus.fits_table(jobs, TABLE).splitlines()
    assert lines[0].split()[:3] == ["job", "needs", "(GiB)"]
    for line, (job, need) in zip(lines[1:], jobs.items(), strict=True):
        cells = line.split()
        assert cells[0] == job and cells[1] == f"{need / GIB:,.1f}"
        assert cells[2:] == ["yes" if gpus.fits(need, g["memory_gb"]) else "-" for g in TABLE]


@pytest.mark.parametrize("usable", [0, -0.1, 1.01, math.nan])
def test_fits_refuses_a_share_outside_zero_to_one(usable):
    with pytest.raises(ValueError, match="usable="):
        gpus.fits(1e9, 16, usable)


# ---------------------------------------------------------------- rates, units and speed-ups
@given(finite)
def test_the_units_table_divides_each_published_rate_by_the_cpu_rate(cpu):
    lines = gpus.units_table(cpu).splitlines()[1:]
    for line, m in zip(lines, gpus.MEASURED_INFERENCE, strict=True):
        assert line.split()[-1] == f"{m['images_per_s'] / cpu:,.0f}"
        assert f"{m['images_per_s']:,.0f}" in line


@given(bad_rates)
def test_the_units_table_refuses_a_rate_that_is_not_positive_and_finite(cpu):
    with pytest.raises(ValueError, match="cpu_images_per_s="):
        gpus.units_table(cpu)


@given(finite, finite, st.floats(min_value=0.01, max_value=100), st.integers(1, 4096), st.integers(1, 4096))
def test_a_speedup_note_says_which_figure_is_published_and_which_computed(base, mixed, published, b1, b2):
    row = {"gpu": "GPU X", "baseline": "FP32", "baseline_images_per_s": base, "baseline_batch": b1,
           "mixed_images_per_s": mixed, "mixed_batch": b2, "published_speedup": published}
    note = gpus.speedup_note(row)
    assert f"{base:,.0f} images/s in FP32 (batch {b1})" in note
    assert f"{mixed:,.0f} in mixed precision (batch {b2})" in note
    assert f"prints a {published:.2f}x speed-up (published)" in note
    assert f"{mixed:,.0f} / {base:,.0f} = {mixed / base:.2f} (computed here" in note


def test_nvidias_a100_speedup_is_published_as_2_60_and_computes_to_2_61():
    a100 = next(r for r in gpus.MEASURED_SPEEDUP if r["baseline"] == "TF32")
    note = gpus.speedup_note(a100)
    assert "2.60x speed-up (published)" in note and "2,375 / 909 = 2.61 (computed" in note


@given(bad_rates)
def test_a_speedup_note_refuses_rates_that_are_not_positive(rate):
    row = dict(gpus.MEASURED_SPEEDUP[0], baseline_images_per_s=rate)
    with pytest.raises(ValueError, match="rates"):
        gpus.speedup_note(row)


@given(st.sampled_from(TABLE))
def test_a_training_rate_says_measured_only_where_nvidia_measured(row):
    rate, source = gpus.training_rate(row, TABLE)
    assert source.startswith("measured by NVIDIA") == (row["name"] in gpus.MEASURED_TRAINING)
    if row["compute_capability"] < 7.0:  # no Tensor Cores: no rate scaled by a Tensor Core peak
        assert rate is None and source.startswith(gpus.NOT_COMPARABLE), (rate, source)
    elif row["name"] not in gpus.MEASURED_TRAINING:
        a100 = next(g for g in TABLE if g["name"] == gpus.SCALE_FROM)
        assert math.isclose(rate, 2375 * row["fp16_tensor_tflops_dense"] / a100["fp16_tensor_tflops_dense"])
        assert "rough guess" in source and f"{row['fp16_tensor_tflops_dense']:g}" in source


def test_the_v100_row_names_the_16_gb_card_nvidia_measured():
    rate, source = gpus.training_rate(next(g for g in TABLE if g["name"] == "Tesla V100 SXM2"), TABLE)
    assert rate == 1270.0 and "V100 SXM2 16 GB" in source and "not this row's 32 GB card" in source


@given(st.floats(min_value=1, max_value=1e10), st.dictionaries(st.sampled_from([g["name"] for g in TABLE]),
                                                               st.floats(min_value=0, max_value=1e3), max_size=4))
def test_the_cost_table_quotes_the_run_and_labels_each_rate_by_its_source(images, prices):
    costs = gpus.run_cost(images, TABLE, prices, job_bytes=18e9)
    lines = gpus.cost_table(costs).splitlines()
    # a cost column where some GPU has a price and a rate (a priced P100 has no rate, so no cost)
    assert ("cost" in lines[0].split()) == any(costs[name]["images_per_s"] is not None for name in prices)
    for line, (name, c) in zip(lines[1:], costs.items(), strict=True):
        assert line.startswith(name)
        if c["images_per_s"] is None:  # the P100: the words in place of a number, and no figure derived from one
            assert gpus.NOT_COMPARABLE in line and c["hours"] is c["kwh"] is c["cost"] is None, line
            assert not any(ch.isdigit() for ch in line[len(name):].replace(gpus.NOT_COMPARABLE, "")), line
            continue
        assert f"{c['hours']:,.1f}" in line and f"{c['kwh']:,.2f}" in line and f"{c['images_per_s']:,.0f}" in line
        assert ("measured by NVIDIA" in line) == c["rate_source"].startswith("measured")
        assert ("scaled by peak: rough" in line) == (not c["rate_source"].startswith("measured"))
        if name in prices:
            assert f"{c['hours'] * prices[name]:,.2f}" in line
        fit = "yes" if gpus.fits(18e9, next(g for g in TABLE if g["name"] == name)["memory_gb"]) else "no"
        assert line[len(name):].split()[0] == fit


def test_the_spec_table_quotes_every_row():
    lines = gpus.spec_table(TABLE).splitlines()[1:]
    for line, g in zip(lines, TABLE, strict=True):
        assert line.startswith(g["name"]) and line.rstrip().endswith(g["source"])
        assert f"  {g['memory_gb']:g} {g['memory_type']}  " in line and f"{g['fp16_tensor_tflops_dense']:g}" in line


def test_the_published_nvml_totals_sit_above_the_usable_share():
    shares = {n: mib * 2**20 / (next(g for g in TABLE if g["name"] == n)["memory_gb"] * GIB)
              for n, mib in gpus.NVML_TOTAL_MIB.items()}
    assert all(gpus.USABLE < s <= 1.0 for s in shares.values()), shares


@given(st.floats(min_value=0.0, max_value=0.5), st.floats(min_value=-0.99, max_value=3.0))
def test_the_estimate_reading_rule_on_the_page_never_contradicts_the_error(tolerance, error):
    """The rule notebook 09 prints (cell "Checked against a measurement"), applied to any error and tolerance."""
    assume(abs(abs(error) - tolerance) > 1e-12)
    verdict = "this estimate is." if abs(error) <= tolerance else "this one is not"
    said = f"the estimate is {abs(error):.1%} {'below' if error < 0 else 'above'} the peak"
    assert ("below" in said) == (error < 0)
    assert (verdict == "this estimate is.") == (abs(error) <= tolerance)
