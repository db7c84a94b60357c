"""helpers.timing: the SIZES rule, GPU peaks from the table, the bounded peak, crossover, plots, notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import timing

GPU_RUN = json.loads((Path(__file__).parent / "claims" / "gpu_nb03.json").read_text())["results"]


# ---------------------------------------------------------------- SIZES
def test_run_sizes_sorts_and_deduplicates_or_uses_the_smoke_sizes():
    assert timing.run_sizes([2048, 128, 512, 128], smoke=False) == [128, 512, 2048]
    assert timing.run_sizes([2048, 128], smoke=True) == timing.SMOKE_SIZES


@pytest.mark.parametrize("bad", [[512], [512, 512], [64, 16384], [4, 64], list(range(16, 160, 16)), "512", [],
                                 [128, 256.0], None])
def test_run_sizes_refuses_bad_values_naming_sizes(bad):
    with pytest.raises(ValueError, match="SIZES"):
        timing.run_sizes(bad, smoke=False)


def test_run_sizes_refuses_before_smoke_mode_replaces_them():
    with pytest.raises(ValueError, match="SIZES"):
        timing.run_sizes([512], smoke=True)


# ---------------------------------------------------------------- GPU peaks
@pytest.mark.parametrize("name, row, gflops", [
    ("Tesla T4", "Tesla T4", 8100.0),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40 GB", 19500.0),
    ("NVIDIA A100 80GB PCIe", "A100 SXM4 80 GB", 19500.0),
    ("NVIDIA A10", "A10", 31200.0),
    ("NVIDIA L4", "L4", 30300.0),
    ("NVIDIA L40S", "L40S", 91600.0),
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80 GB", 67000.0),
    ("Tesla V100-SXM2-16GB", "Tesla V100 SXM2", 15700.0),
    ("Tesla P100-PCIE-16GB", "Tesla P100 PCIe 16 GB", 9300.0),
])
def test_gpu_peak_matches_the_names_tensorflow_reports(name, row, gflops):
    peak = timing.gpu_peak(name)
    assert peak.row == row and peak.gflops == pytest.approx(gflops), peak
    assert peak.peak_source.startswith("datasheet peak, FP32") and "data/gpu_specs.csv" in peak.peak_source
    assert peak.bandwidth_gb_s and peak.bandwidth_gb_s > 0


def test_gpu_peak_of_an_unknown_gpu_says_it_is_not_in_the_table():
    peak = timing.gpu_peak("NVIDIA GeForce RTX 4090")
    assert peak.gflops is None and peak.bandwidth_gb_s is None and peak.row is None
    assert "not in the course's table" in peak.peak_source


def test_gpu_peak_with_tf32_uses_the_tensor_core_figure_from_ampere_on():
    a100 = timing.gpu_peak("NVIDIA A100-SXM4-40GB", tf32=True)
    assert a100.gflops == pytest.approx(156000.0) and "TF32" in a100.peak_source
    assert timing.gpu_peak("Tesla T4", tf32=True).gflops == pytest.approx(8100.0)  # Turing: no TF32
    l40s = timing.gpu_peak("NVIDIA L40S", tf32=True)  # the table has no TF32 figure for it
    assert l40s.gflops is None and "turn TF32 off" in l40s.peak_source


def test_gpu_peak_takes_a_table_passed_in():
    specs = [{"name": "Tesla T4", "fp32_tflops": 1.0, "compute_capability": 7.5, "memory_gb": 16.0,
              "bandwidth_gb_s": 10.0, "tf32_tensor_tflops_dense": None, "source": "made up"}]
    assert timing.gpu_peak("Tesla T4", specs=specs).gflops == pytest.approx(1000.0)
    assert timing.gpu_peak("NVIDIA L4", specs=specs).gflops is None


# ---------------------------------------------------------------- the bounded peak
def test_bound_peak_keeps_a_peak_that_bounds_the_measurements():
    assert timing.bound_peak(332.0, "source", 203.0) == (332.0, "source")


def test_bound_peak_raises_a_peak_a_measurement_beat_and_says_so():
    peak, source = timing.bound_peak(166.0, "2 cores x 2.6 GHz x 32.", 203.0)
    assert peak == 203.0 and source.startswith("2 cores x 2.6 GHz x 32.")
    assert "beat the computed 166" in source and "clock" in source


def test_bound_peak_without_a_peak_lets_the_fastest_stand_in():
    peak, source = timing.bound_peak(None, "not in the table.", 4400.0)
    assert peak == 4400.0 and "stands in" in source


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bound_peak_refuses_a_bad_fastest(bad):
    with pytest.raises(ValueError, match="fastest"):
        timing.bound_peak(100.0, "s", bad)


# ---------------------------------------------------------------- crossover
@pytest.mark.parametrize("cpu_s, gpu_s, expected", [
    ([1, 2, 3, 4], [2, 1, 1, 1], 2),
    ([1, 2, 3, 4], [0.5, 3, 1, 1], 3),  # wins at the smallest, loses, then wins for good
    ([1, 2, 3, 4], [2, 3, 4, 5], None),
    ([1, 2, 3, 4], [0.1, 0.1, 0.1, 0.1], 1),
    ([1, 2, 3, 4], [0.1, 0.1, 0.1, 4], None),  # a tie at the largest size is not a win
])
def test_crossover(cpu_s, gpu_s, expected):
    assert timing.crossover([1, 2, 3, 4], cpu_s, gpu_s) == expected


def test_crossover_refuses_mismatched_or_unsorted_input():
    with pytest.raises(ValueError, match="same length"):
        timing.crossover([1, 2], [1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="smallest to largest"):
        timing.crossover([2, 1], [1.0, 1.0], [1.0, 1.0])


# ---------------------------------------------------------------- plots
def test_plot_sweep_draws_a_peak_line_per_device_with_a_peak(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    import matplotlib.pyplot as plt

    gflops = {k: {int(n): v for n, v in d.items()} for k, d in GPU_RUN["matmul_gflops"].items()}
    gflops["NumPy (CPU)"] = {int(n): v for n, v in GPU_RUN["numpy_gflops"].items()}
    ax = timing.plot_sweep(gflops, {"CPU": 192.0, "GPU": 8100.0, "NumPy (CPU)": None})
    assert len(ax.lines) == 3 + 2  # three measured lines, two peak lines
    assert ax.get_ylim()[1] >= 8100.0
    plt.close("all")
    with pytest.raises(ValueError, match="empty"):
        timing.plot_sweep({}, {})


def test_plot_roofline_draws_roofs_with_and_without_a_bandwidth(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    import matplotlib.pyplot as plt

    ax = timing.plot_roofline({"GPU matmul": [(340.0, 4400.0)], "GPU a + b": [(1 / 12, 20.0)]},
                              {"CPU": (192.0, None, "none"), "GPU": (8100.0, 320.0, "datasheet")})
    assert len(ax.lines) == 2 and len(ax.collections) == 2
    plt.close("all")


# ---------------------------------------------------------------- tables and the closing note
def test_speedup_table_on_a_gpu_run_shows_the_measured_ratio_and_the_published_ones():
    table = timing.speedup_table({"CPU": 9.8, "GPU": 1.9})
    assert "5.16x" in table and "not measured here" not in table
    for published in ("198.2 s", "14.4 s", "13.76x", "804 %", "23.2x", "blog post"):
        assert published in table


def test_speedup_table_on_a_cpu_run_says_not_measured_here():
    table = timing.speedup_table({"CPU": 2.2})
    assert "not measured here" in table and "2.2 s" in table


def test_closing_note_covers_every_measurement_of_a_gpu_run():
    lines = timing.closing_note(GPU_RUN | {"resnet50_images_per_s": 233.0, "resnet50_batch": 4})
    text = "\n".join(lines)
    assert "34x too short" in text
    assert "Matmul on GPU: at best 4,403 GFLOP/s (n = 2048), 54% of its peak 8,100." in text
    assert "the GPU is 5.16x faster, against 13.76x quoted from a blog post" in text
    assert "a T4 measured by NVIDIA: 289 images/s at batch 4" in text
    assert timing.closing_note({}) == []


def test_published_figures_are_the_seed_articles_and_nvidias():
    assert [p["speedup"] for p in timing.PUBLISHED_SPEEDUPS] == ["13.76x", "faster by 804 %", "23.2x"]
    assert round(198.2 / 14.4, 2) == 13.76
    assert timing.NVIDIA_T4_RESNET50["fp32"] == {1: 136, 4: 289, 64: 424}
    assert "DeepLearningExamples" in timing.NVIDIA_SOURCE
