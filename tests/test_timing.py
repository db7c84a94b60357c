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
    l40s = timing.gpu_peak("NVIDIA L40S", tf32=True)  # dense TF32, 183 TFLOP/s (NVIDIA L40S datasheet)
    assert l40s.gflops == pytest.approx(183000.0) and "TF32" in l40s.peak_source
    from helpers.data import load_gpu_specs

    blank = [dict(r, tf32_tensor_tflops_dense=None) for r in load_gpu_specs()]  # a row without a TF32 figure
    l40s = timing.gpu_peak("NVIDIA L40S", blank, tf32=True)
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
    assert "Matmul on GPU (TensorFlow): at best 4,403 GFLOP/s (n = 2048), 54% of its peak 8,100." in text
    assert "the GPU ran it 5.16x as fast as the CPU (faster), against 13.76x published in a blog post" in text
    assert "a T4 measured by NVIDIA: 289 images/s at batch 4" in text
    assert timing.closing_note({}) == []


def test_published_figures_are_the_blog_posts_and_nvidias():
    assert [p["speedup"] for p in timing.PUBLISHED_SPEEDUPS] == ["13.76x", "804 % faster = 9.04x", "23.2x"]
    assert round(198.2 / 14.4, 2) == 13.76
    assert timing.NVIDIA_T4_RESNET50["fp32"] == {1: 136, 4: 289, 64: 424}
    assert "DeepLearningExamples" in timing.NVIDIA_SOURCE


# ---------------------------------------------------------------- readings
def test_bound_peak_names_a_matrix_unit_the_peak_does_not_count():
    _, source = timing.bound_peak(166.0, "8 cores x 3.2 GHz x 16.", 900.0)
    assert "Apple's AMX" in source and "Intel's AMX" in source and "clock" in source


SYNCED, HOST = "sync_devices()", "context.async_wait() (host queue only)"


def test_async_reading_compares_each_wait_with_its_own_naive_reading():
    times = {SYNCED: (0.0193, 2.4), ".numpy() on each result": (0.00203, 0.64), HOST: (0.00053, 0.627)}
    first, per_row, host, why = timing.async_reading(times, synced=SYNCED, host_queue=[HOST])
    assert "19.3 ms for work that took 2,400 ms (sync_devices()): 124x too short" in first
    assert "124x to 315x its own naive reading" in per_row  # 2.4 / 0.0193, not 2.4 / 0.00053
    assert "sync_devices(): 124x" in per_row and ".numpy() on each result: 315x" in per_row
    assert HOST not in per_row, "a host-queue wait is not one that waited for the work"
    assert "host-side queue" in host and "on a CPU that queue runs the ops themselves" in host
    assert "0.53 to 19.3 ms" in why and "dispatch" in why and "not the work" in why


def test_async_reading_on_a_gpu_says_a_host_queue_wait_did_not_wait_for_the_kernels():
    # A GPU run: async_wait() returned once the kernels were queued, long before the GPU finished them.
    times = {SYNCED: (0.0011, 0.040), ".numpy() on each result": (0.0012, 0.041), HOST: (0.0010, 0.0016)}
    lines = timing.async_reading(times, synced=SYNCED, host_queue=[HOST], device="GPU")
    text = "\n".join(lines)
    assert "each waited for the work" in lines[1] and HOST not in lines[1]
    assert f"{HOST} read 1.6 ms against 40.0 ms for sync_devices()" in text
    assert "while the GPU was still running them" in text and "does not wait for the device" in text
    close = timing.async_reading({SYNCED: (0.001, 0.040), HOST: (0.001, 0.039)}, SYNCED, [HOST], device="GPU")
    assert "nothing made it wait" in close[-1] and "can return while kernels still run" in close[-1]


def test_async_reading_says_nothing_about_naive_readings_that_agree():
    lines = timing.async_reading({"a": (0.0010, 0.05), "b": (0.0012, 0.05)}, synced="a")
    assert len(lines) == 2 and "42x to 50x" in lines[1]


@pytest.mark.parametrize("bad", [{}, {"a": (0.0, 1.0)}, {"a": (2.0, 1.0)}, {"a": (1.0,)}])
def test_async_reading_refuses_bad_times(bad):
    with pytest.raises(ValueError, match="times"):
        timing.async_reading(bad, synced="a")


@pytest.mark.parametrize("synced, host", [("z", ()), ("a", ["a"]), ("a", ["c"])])
def test_async_reading_refuses_rows_it_does_not_have(synced, host):
    with pytest.raises(ValueError, match="synced="):
        timing.async_reading({"a": (0.001, 0.05), "b": (0.001, 0.05)}, synced, host)


def test_noise_reading_is_steady_when_spreads_are_small_and_curves_rise():
    text = timing.noise_reading({"CPU n = 512": 0.04, "CPU n = 1024": 0.5}, {"CPU": {128: 20.0, 256: 60.0, 512: 58.0}})
    assert text.startswith("Noise: every spread is within 50%") and "no curve falls" in text
    assert "rerun" not in text


def test_noise_reading_flags_a_spread_above_half_the_median():
    text = timing.noise_reading({"the warm calls": 3.71, "n = 64": 0.1})
    assert "above 50% for the warm calls (371%)" in text and "n = 64" not in text
    assert "the machine was busy" in text and "rerun the cell" in text


def test_noise_reading_flags_a_curve_that_falls_at_larger_sizes():
    curves = {"CPU": {128: 20.0, 256: 150.0, 512: 140.0, 1024: 96.0, 2048: 107.0}, "GPU": {128: 30.0, 256: 900.0}}
    text = timing.noise_reading({"CPU n = 1024": 0.2}, curves)
    assert "falls at a larger size for CPU at n = 1024 (96, down from 150; below 80%)" in text
    assert "GPU" not in text and "spread is above" not in text and "rerun the cell" in text


def test_noise_reading_refuses_a_bad_limit():
    with pytest.raises(ValueError, match="limit"):
        timing.noise_reading({"a": 0.1}, limit=0)


def test_sweep_reading_points_a_falling_curve_to_the_noise_line():
    text = timing.sweep_reading("TensorFlow on the CPU", {256: 150.0, 1024: 96.0, 2048: 100.0}, 200.0)
    assert text.startswith("TensorFlow on the CPU peaks at n = 256 with 150 GFLOP/s, 75% of the peak.")
    assert "falls back to 100 GFLOP/s" in text and "noise line" in text
    assert "falls" not in timing.sweep_reading("GPU", {256: 150.0, 1024: 960.0}, None)


def test_clock_note_explains_boost_only_when_a_measurement_beats_the_os_clock():
    assert "boost" in timing.clock_note(150.0, 140.8) and "beats 141 GFLOP/s" in timing.clock_note(150.0, 140.8)
    assert "needs no boost" in timing.clock_note(90.0, 140.8)
    assert "reports no clock" in timing.clock_note(90.0, None)


def test_elementwise_table_gives_gb_s_per_array_size_and_device():
    table = timing.elementwise_table({"CPU": {512: 22.7, 4096: 9.1}, "GPU": {"512": 49.8, "4096": 238.6}})
    lines = table.splitlines()
    assert len(lines) == 3 and "MiB each" in lines[0] and "working set (3 arrays)" in lines[0]
    assert "1 MiB" in lines[1] and "22.7 GB/s" in lines[1] and "49.8 GB/s" in lines[1]
    assert "64 MiB" in lines[2] and "9.1 GB/s" in lines[2] and "238.6 GB/s" in lines[2]
    with pytest.raises(ValueError, match="gb_s"):
        timing.elementwise_table({})


CPU_ADD = {512: 22.7, 1024: 47.6, 2048: 27.0, 4096: 16.7}  # a run of the review: caches, then main memory


def test_roofline_reading_draws_the_cpu_slope_from_the_largest_arrays_beyond_the_cache():
    memory, cache, matmul = timing.roofline_reading("CPU", 166.0, 16.7, CPU_ADD, 2048, 55.0, 32 * 2**20)
    assert "3.97 GFLOP/s, 2.39% of the peak" in memory and "memory, not arithmetic" in memory
    assert "22.7 GB/s on 1 MiB arrays and 16.7 GB/s on 64 MiB ones" in cache
    assert "working set, 3 arrays of 64 MiB = 192 MiB, exceeds the 32 MiB cache" in cache and "main memory's" in cache
    assert "by construction" in cache and "as the 1 and 4 MiB ones did here (working sets 3 and 12 MiB" in cache
    assert "The 16 MiB ones ran above it too although their working set (48 MiB) exceeds the cache" in cache
    assert "341 FLOPs per byte" in matmul and "(10 FLOPs per byte)" in matmul and "compute-bound" in matmul
    assert "Compute-bound does not mean near the peak: it reached 33%" in matmul


def test_roofline_reading_when_the_cache_is_unknown_or_holds_every_array():
    unknown = timing.roofline_reading("CPU", 166.0, 16.7, CPU_ADD, 2048, 150.0)
    assert "not known" in unknown[1] and "It reached 90% of the peak." in unknown[2]
    fits = timing.roofline_reading("CPU", 166.0, 16.7, CPU_ADD, 2048, 55.0, 512 * 2**20)
    assert "even the last ones' working set, 3 arrays = 192 MiB, fits the 512 MiB cache" in fits[1]


def test_roofline_reading_on_a_gpu_uses_the_datasheet_and_a_small_matmul_can_be_memory_bound():
    gpu = GPU_RUN["elementwise_gb_s"]["GPU"]
    lines = timing.roofline_reading("GPU", 8100.0, 320.0, gpu, 64, 35.0, datasheet=True)
    assert "75% of the datasheet bandwidth, 320 GB/s" in lines[1]
    assert "11 FLOPs per byte, left of where the roofs meet (25 FLOPs per byte)" in lines[2]
    flat = timing.roofline_reading("GPU", 8100.0, None, gpu, 2048, 4400.0)
    assert "roof is flat" in flat[1] and "compute-bound" in flat[2]
    with pytest.raises(ValueError, match="add_gb_s"):
        timing.roofline_reading("CPU", 166.0, 16.7, {}, 2048, 55.0)


def test_log_axes_are_labelled_in_plain_numbers_at_the_sizes(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    import matplotlib.pyplot as plt

    ax = timing.plot_sweep({"CPU": {128: 20.0, 256: 60.0, 2048: 90.0}}, {"CPU": 192.0})
    assert [t.get_text() for t in ax.get_xticklabels()] == ["128", "256", "2048"]
    ax.figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all("10^" not in t and "times" not in t for t in labels), labels
    ax = timing.plot_roofline({"CPU matmul": [(128 / 6, 60.0), (2048 / 6, 90.0)], "CPU a + b": [(1 / 12, 1.0)]},
                              {"CPU": (192.0, 9.1, "measured")})
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.0833", "21", "341"]
    assert timing._plain(2000.0) == "2,000" and timing._plain(0.1) == "0.1"
    plt.close("all")
