"""One unit per table in notebook 09: every table its helpers build counts memory in MiB/GiB or in MB/GB, not both.

The notebook's claims run the same check (``claims.nb09.one_unit_per_table``) over every table the page printed;
these tests feed it each table builder's output, with the GPU-side tables (NVML readings) from fakes.
"""

from __future__ import annotations

import re

import pytest
from claims.nb09 import BINARY, DECIMAL, one_unit_per_table, without_row_names

from helpers import gpus, monitor

TABLE = gpus.specs()


def families(text: str) -> set[str]:
    """The memory units a table's cells use (its rows' names left out), or a label's."""
    cells = without_row_names(text) if "\n" in text else text
    return {name for name, pattern in (("binary", BINARY), ("decimal", DECIMAL)) if pattern.search(cells)}


def every_table() -> dict[str, str]:
    estimate = gpus.MemoryEstimate(100 * 2**20, 0, 100 * 2**20, 200 * 2**20, 300 * 2**20)
    jobs = {"ResNet-50 b256 mixed_float16": 19.4e9, "transformer 1B Adam": 18e9}
    totals = [(gpus.short_name(g), g["memory_gb"], gpus.NVML_TOTAL_MIB[g["name"]]) for g in TABLE
              if g["name"] in gpus.NVML_TOTAL_MIB]
    return {
        "spec table": gpus.spec_table(TABLE),
        "features table": gpus.features_table(TABLE),
        "estimate table": estimate.table(measured=650 * 2**20),
        "fits table": gpus.fits_table(jobs, TABLE),
        "driver totals table": gpus.driver_totals_table(totals + [("your GPU 0 (NVML, measured here)", 16.0, 15360)]),
        "cost table": gpus.cost_table(gpus.run_cost(1e8, TABLE, {"Tesla T4": 0.35}, job_bytes=19.4e9)),
        "units table": gpus.units_table(20.0),
        "NVML readings table": monitor.readings_table(monitor.EXAMPLE_READINGS),
    }


@pytest.mark.parametrize("name", list(every_table()))
def test_each_table_of_notebook_09_counts_memory_in_one_unit(name):
    text = every_table()[name]
    assert len(families(text)) <= 1, f"{name} mixes units:\n{text}"
    one_unit_per_table(text)


def test_the_memory_tables_say_their_unit():
    tables = every_table()
    assert families(tables["estimate table"]) == {"binary"} and "MiB" in tables["estimate table"].splitlines()[0]
    assert families(tables["fits table"]) == {"binary"} and "(GiB)" in tables["fits table"].splitlines()[0]
    assert families(tables["driver totals table"]) == {"binary"}
    assert all(h.endswith("(MiB)") for h in re.split(r" {2,}", tables["driver totals table"].splitlines()[0])[1:3])
    # The spec table's memory counts binary GB (2**30 bytes, as the page reads a datasheet's "16 GB"): GiB, with the
    # datasheet's label quoted; its GB/s is a decimal rate, not a memory count.
    spec = tables["spec table"]
    assert families(spec) == {"binary"}, spec.splitlines()[0]
    assert "GiB (datasheet 'GB')" in spec.splitlines()[0] and "GB/s" in spec.splitlines()[0]


def test_the_plot_labels_memory_in_gib_and_marks_the_gpu_without_tensor_cores():
    import matplotlib

    matplotlib.use("Agg")
    ax = gpus.plot_specs(TABLE)
    assert families(ax.get_ylabel()) == {"binary"} and "GiB" in ax.get_ylabel(), ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert gpus.NO_TENSOR_CORES_LABEL in labels, labels
    without = [g for g in TABLE if not gpus.has_tensor_cores(g)]
    marked = next(c for c in ax.collections if c.get_label() == gpus.NO_TENSOR_CORES_LABEL)
    assert sorted(map(tuple, marked.get_offsets().tolist())) == sorted(
        (g["fp16_tensor_tflops_dense"], g["memory_gb"]) for g in without)
    assert all(c.get_label() != gpus.NO_TENSOR_CORES_LABEL for c in ax.collections if c is not marked)


def test_a_rate_and_a_quoted_datasheet_label_are_not_memory_units():
    assert families("bandwidth, GB/s") == set() and families("memory, GiB (datasheet 'GB')") == {"binary"}
    assert families("16 GB") == {"decimal"} and families("memory GB") == {"decimal"}


def test_the_driver_totals_table_converts_the_datasheet_gb_to_mib():
    line = gpus.driver_totals_table([("T4", 16.0, 15360)]).splitlines()[1]
    assert line.split() == ["T4", "16,384", "15,360", "93.8%"]
    with pytest.raises(ValueError, match="rows is empty"):
        gpus.driver_totals_table([])
    with pytest.raises(ValueError, match="must be positive"):
        gpus.driver_totals_table([("T4", 0, 15360)])


def test_a_table_that_mixes_mib_and_gb_is_refused():
    mixed = "GPU  reported  datasheet\nT4   15,360 MiB  16 GB"  # the line the page printed before: both kinds
    with pytest.raises(AssertionError, match="mixes units"):
        one_unit_per_table(mixed)
    one_unit_per_table("a sentence with 16 GB and 15,360 MiB is not a table")  # prose may set both side by side
