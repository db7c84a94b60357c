"""Tests for helpers.monitor: the utilisation sampler (fake NVML, fake and real psutil) and tables."""

from __future__ import annotations

import time
from types import SimpleNamespace

import fakes
import pytest

from helpers import monitor


class FakeNvml(fakes.FakeNVML):
    """The shared fake NVML with one twist for the sampler: utilisation rises by 10 with each reading."""

    def __init__(self, count: int = 1, fail_init: bool = False, unsupported=()) -> None:
        one = {"name": "Tesla T4", "util": 0, "used": 0, "total": 16 * 1024**3, "power_mw": 0, "temp": 0}
        super().__init__(gpus=[dict(one) for _ in range(count)], fail_init=fail_init, unsupported=unsupported)
        self.calls = 0

    def nvmlDeviceGetUtilizationRates(self, h):  # noqa: N802 - pynvml's name
        if "util" in self.unsupported:
            raise fakes.NVMLError("Not Supported")
        self.calls += 1
        return SimpleNamespace(gpu=min(100, 10 * self.calls), memory=5)


class FakePsutil:
    def __init__(self, percent: float = 150.0, cores: int = 2, machine: float = 90.0) -> None:
        self.percent, self.cores, self.machine = percent, cores, machine

    def cpu_count(self):
        return self.cores

    def cpu_percent(self, interval=None):  # the whole machine, every process
        return self.machine

    def Process(self):
        return SimpleNamespace(cpu_percent=lambda interval=None: self.percent)


def test_source_is_gpu_when_tensorflow_uses_a_gpu_nvml_sees():
    assert monitor.choose_source(FakeNvml(count=1), tf_gpu_count=1) == monitor.GPU_SOURCE


def test_source_falls_back_to_cpu_without_driver_or_gpu():
    assert monitor.choose_source(FakeNvml(fail_init=True), tf_gpu_count=1) == monitor.CPU_SOURCE
    assert monitor.choose_source(FakeNvml(count=1), gpu_index=1, tf_gpu_count=1) == monitor.CPU_SOURCE
    assert monitor.choose_source(FakeNvml(count=1), gpu_index=None, tf_gpu_count=1) == monitor.CPU_SOURCE


def test_source_is_cpu_when_tensorflow_does_not_use_the_gpu():
    # A CPU-only TensorFlow on a GPU machine: the GPU would read 0 % during training.
    assert monitor.choose_source(FakeNvml(count=1), tf_gpu_count=0) == monitor.CPU_SOURCE
    assert monitor.choose_source(FakeNvml(count=1)) == monitor.CPU_SOURCE  # this machine: TF sees no GPU


def test_sampler_reads_gpu_utilisation_through_nvml():
    nvml = FakeNvml()
    sampler = monitor.UtilisationSampler(interval=0.02, nvml=nvml, tf_gpu_count=1)
    nvml.calls = 0  # choosing the source read NVML once; count the sampler's own readings
    with sampler:
        time.sleep(0.15)
    assert sampler.source == "GPU (NVML)"
    assert len(sampler.values) >= 3
    assert sampler.values[:3] == [10.0, 20.0, 30.0]
    assert nvml.shutdowns == nvml.inits >= 1


def test_sampler_normalises_process_cpu_percent_by_cores():
    with monitor.UtilisationSampler(interval=0.02, source=monitor.CPU_SOURCE,
                                    psutil_module=FakePsutil(150.0, cores=2)) as sampler:
        time.sleep(0.1)
    assert sampler.source == "CPU (psutil)"
    assert sampler.values and all(v == 75.0 for v in sampler.values)
    assert all(sample.machine == 90.0 for sample in sampler.samples), "the whole machine is sampled beside"
    assert sampler.summary()["idle"]["machine_mean"] == 90.0


def test_sampler_labels_samples_with_the_phase_and_summarises_each():
    with monitor.UtilisationSampler(interval=0.02, nvml=FakeNvml(), tf_gpu_count=1) as sampler:
        time.sleep(0.1)
        sampler.phase("training")
        time.sleep(0.1)
    summary = sampler.summary()
    assert list(summary) == ["idle", "training"]
    assert summary["training"]["mean"] > summary["idle"]["mean"]
    assert summary["idle"]["n"] + summary["training"]["n"] == len(sampler.times)
    assert sampler.times == sorted(sampler.times)


def test_sampler_with_real_psutil_sees_busy_work_above_idle():
    with monitor.UtilisationSampler(interval=0.05, source=monitor.CPU_SOURCE) as sampler:
        time.sleep(0.5)
        sampler.phase("training")
        end = time.perf_counter() + 0.6
        while time.perf_counter() < end:
            sum(i * i for i in range(1000))
    summary = sampler.summary()
    assert summary["idle"]["n"] >= 3 and summary["training"]["n"] >= 3
    assert summary["training"]["mean"] > summary["idle"]["mean"]
    assert all(0 <= v <= 100 for v in sampler.values)


def test_sampler_skips_failed_readings_and_stops_twice_safely():
    nvml = FakeNvml(unsupported={"util"})
    sampler = monitor.UtilisationSampler(interval=0.02, source=monitor.GPU_SOURCE, nvml=nvml, gpu_index=0,
                                         tf_gpu_count=1).start()
    time.sleep(0.08)
    sampler.stop().stop()
    assert sampler.samples == []


def test_sampler_cannot_start_twice():
    sampler = monitor.UtilisationSampler(interval=0.05, nvml=FakeNvml(), tf_gpu_count=1).start()
    try:
        with pytest.raises(RuntimeError, match="already running"):
            sampler.start()
    finally:
        sampler.stop()


def test_sampler_rejects_bad_arguments():
    with pytest.raises(ValueError, match="interval"):
        monitor.UtilisationSampler(interval=0)
    with pytest.raises(ValueError, match="source"):
        monitor.UtilisationSampler(source="TPU")
    with pytest.raises(ValueError, match="phase name"):
        monitor.UtilisationSampler(source=monitor.CPU_SOURCE).phase("")


def test_plot_needs_samples_then_draws_one_line_per_phase():
    import matplotlib

    matplotlib.use("Agg")
    sampler = monitor.UtilisationSampler(source=monitor.CPU_SOURCE, psutil_module=FakePsutil())
    with pytest.raises(ValueError, match="No samples"):
        sampler.plot()
    sampler.samples = [monitor.Sample(0.1, 1.0, "idle", 5.0), monitor.Sample(0.2, 80.0, "training", 95.0)]
    ax = sampler.plot()
    assert [line.get_label() for line in ax.get_lines()] == [
        "idle (this process)", "training (this process)", "whole machine (all processes)"]


def test_readings_table_formats_each_gpu_and_missing_values():
    reading = monitor.EXAMPLE_READINGS[0]
    partial = monitor.NvmlReading(1, "GPU 1", None, None, None, None, None)
    lines = monitor.readings_table([reading, partial]).splitlines()
    assert lines[0].split()[:3] == ["GPU", "name", "util"]
    assert "92 %" in lines[1] and "14.0 / 15.0 GiB" in lines[1] and "68 W" in lines[1]
    assert lines[2].count("n/a") == 4
    assert monitor.readings_table([]) == ""


# --------------------------------------------------------------------------- which GPU NVML reads, and saying why not
def test_sampler_without_a_utilisation_reading_measures_the_cpu_and_says_why():
    sampler = monitor.UtilisationSampler(nvml=FakeNvml(unsupported={"util"}), psutil_module=FakePsutil(),
                                         tf_gpu_count=1, gpu_index=0)
    assert sampler.source == monitor.CPU_SOURCE
    assert sampler.reason.startswith("NVML reads no utilisation of GPU 0 (Tesla T4)")


@pytest.mark.parametrize("visible, index", [("2,3", 2), (fakes.uuid(3), 3), (fakes.uuid(2)[:16], 2)])
def test_sampler_reads_the_gpu_that_cuda_visible_devices_names(monkeypatch, visible, index):
    # SLURM sets indices (2,3), Kubernetes' device plugin full UUIDs; CUDA also takes a unique prefix.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    nvml = FakeNvml(count=4)
    sampler = monitor.UtilisationSampler(interval=0.02, nvml=nvml, tf_gpu_count=2)
    assert sampler.source == monitor.GPU_SOURCE and sampler.gpu_index == index
    assert f"GPU {index} (Tesla T4)" in sampler.reason


def test_sampler_on_a_mig_slice_measures_the_cpu_and_says_it_is_a_mig_slice(monkeypatch):
    mig = "MIG-2b3c4d5e-6f70-5182-93a4-b5c6d7e8f901"
    gpus = [dict(name="A100", util=0, used=0, total=40 * 1024**3, power_mw=0, temp=0) for _ in range(2)]
    gpus[1]["mig"] = [{"uuid": mig, "used": 0, "total": 5 * 1024**3}]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", mig)
    sampler = monitor.UtilisationSampler(nvml=fakes.FakeNVML(gpus=gpus), psutil_module=FakePsutil(), tf_gpu_count=1)
    assert sampler.source == monitor.CPU_SOURCE and sampler.gpu_index is None
    assert "MIG slice of NVML's GPU 1" in sampler.reason and "CPU time instead" in sampler.reason


def test_choose_names_the_reason_for_every_cpu_fallback():
    assert monitor.choose(FakeNvml(), tf_gpu_count=0)[1].startswith("TensorFlow uses no GPU")
    assert "no reading of GPU 0" in monitor.choose(FakeNvml(fail_init=True), tf_gpu_count=1)[1]
    assert monitor.choose(FakeNvml(), None, 1, why="Because.")[1].startswith("Because. So the sampler")


# ---------------------------------------------------------------- PowerSampler: power read during the run
def fake_benchmark(nvml, watts, seconds):
    """A GPU that draws `watts` while it works for `seconds`, and idles at 20 W as soon as it is done."""
    nvml.watts = watts
    time.sleep(seconds)
    nvml.watts = 20.0


def test_power_is_sampled_during_the_benchmark_not_read_once_after_it():
    nvml = fakes.PowerNVML(watts=20.0)
    with monitor.PowerSampler(interval=0.02, nvml=nvml, gpu_index=0) as power:
        started = time.perf_counter()
        fake_benchmark(nvml, 65.0, 0.3)
        ended = time.perf_counter()
    after = monitor.nvml_api.readings(nvml)[0].power_w  # what a reading after the run sees: the idle GPU
    s = power.summary()
    assert after == 20.0 and s["samples"] >= 5, (after, s)
    during = [w for t, w in nvml.reads if started <= t <= ended]
    assert len(during) >= 5 and set(during) == {65.0}, during  # many readings, all while it worked
    assert all(t <= ended + 0.05 for t, _ in nvml.reads[:-1]), "sampled after the run"
    assert 55.0 <= s["mean_w"] <= 65.0 and s["max_w"] == 65.0, s  # at most the first, idle, sample is 20 W
    assert abs(s["energy_j"] - s["mean_w"] * s["seconds"]) < 1e-9 and s["seconds"] >= 0.3, s


def test_the_benchmark_clock_keeps_only_the_timed_repeats():
    from helpers import bench

    nvml = fakes.PowerNVML(watts=20.0)

    def step():
        nvml.watts = 80.0
        time.sleep(0.03)

    with monitor.PowerSampler(interval=0.01, nvml=nvml, gpu_index=0) as power:
        time.sleep(0.15)  # idle before the benchmark (tracing, a copy): outside the timed window
        bench.benchmark(step, warmup=0, repeats=8, sync=None, clock=power.clock)
        nvml.watts = 20.0
        time.sleep(0.15)  # idle after it
    s = power.summary()
    assert len(power.window) == 2 and 0.15 <= power.window[0] < power.window[1], power.window
    assert s["samples"] >= 5 and s["mean_w"] >= 70.0 and s["max_w"] == 80.0, s  # the idle samples are left out
    assert min(w for _, w in power.samples) == 20.0  # they were taken, outside the window
    assert abs(s["seconds"] - (power.window[1] - power.window[0])) < 1e-9


def test_the_power_sampler_says_why_it_has_no_samples():
    for nvml, why in ((False, "NVML is not installed"), (fakes.FakeNVML(fail_init=True), "NVML could not start"),
                      (fakes.PowerNVML(unsupported={"power_mw"}), "NVML reads no power of GPU 0")):
        with monitor.PowerSampler(interval=0.01, nvml=nvml, gpu_index=0) as power:
            time.sleep(0.05)
        s = power.summary()
        assert s["samples"] == 0 and s["mean_w"] is s["energy_j"] is None and why in s["reason"], s


def test_the_power_sampler_reads_the_gpu_tensorflow_calls_gpu_0(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    nvml = fakes.PowerNVML(gpus=[dict(fakes.FakeNVML().gpus[0]) for _ in range(2)])
    assert monitor.PowerSampler(nvml=nvml).gpu_index == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-5d3e8a10")
    power = monitor.PowerSampler(nvml=nvml)
    assert power.gpu_index is None and "CUDA_VISIBLE_DEVICES" in power.reason


def test_the_power_sampler_rejects_bad_arguments_and_a_second_start():
    for bad in (0, 11, True, "0.1"):
        with pytest.raises(ValueError, match="interval="):
            monitor.PowerSampler(interval=bad, nvml=False)
    for bad in (-1, 1.0, True):
        with pytest.raises(ValueError, match="gpu_index="):
            monitor.PowerSampler(gpu_index=bad, nvml=False)
    power = monitor.PowerSampler(interval=0.01, nvml=fakes.PowerNVML(), gpu_index=0).start()
    with pytest.raises(RuntimeError, match="already running"):
        power.start()
    power.stop()
    power.stop()


def test_the_window_covers_the_timed_repeats_not_the_warm_up_nor_the_idle_waits():
    from helpers import bench

    nvml = fakes.PowerNVML(watts=20.0)
    calls = []

    def step():  # the warm-up call draws 50 W, the timed ones 80 W
        nvml.watts = 50.0 if not calls else 80.0
        calls.append(time.perf_counter())
        time.sleep(0.03)

    def sync():  # a wait: the device idles
        time.sleep(0.01)

    with monitor.PowerSampler(interval=0.01, nvml=nvml, gpu_index=0) as power:
        timing = bench.benchmark(step, warmup=1, repeats=6, sync=sync, calls_per_sync=1, clock=power.clock)
        nvml.watts = 20.0
        time.sleep(0.05)
    s = power.summary(timing)
    first_timed = calls[1] - power._start
    assert power.window[0] <= first_timed and power.window[0] > calls[0] - power._start + 0.03, power.window
    assert s["seconds"] == pytest.approx(sum(timing.times), rel=0.05), (s, timing.times)
    assert s["samples"] >= 5 and 50.0 in [w for _, w in power.samples], s  # warm-up sampled, outside the window
    assert s["mean_w"] >= 75.0 and s["max_w"] == 80.0, s
    with pytest.raises(ValueError, match="timing="):
        power.summary(object())


def test_without_a_timing_the_clock_marks_the_window_and_benchmarks_warm_up_would_count():
    from helpers import bench

    nvml = fakes.PowerNVML(watts=20.0)
    with monitor.PowerSampler(interval=0.01, nvml=nvml, gpu_index=0) as power:
        timing = bench.benchmark(lambda: time.sleep(0.02), warmup=1, repeats=3, sync=lambda: None,
                                 calls_per_sync=1, clock=power.clock)
    clock_window = list(power.window)
    power.summary(timing)
    assert clock_window[0] < power.window[0] and timing.window[1] - timing.window[0] < clock_window[1] - clock_window[0]
