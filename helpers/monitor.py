"""A small utilisation sampler: how busy the GPU (or, without one, the CPU) is while code runs.

Used by notebook 02 ("GPU readings through NVML", "Watching utilisation during training", the
exercise's example server) and notebook 09 (:class:`PowerSampler`, "Power and temperature, live":
the GPU's power read while its benchmark runs).

:class:`UtilisationSampler` runs a background thread that reads one number every ``interval``
seconds, labelled with the phase you are in (``"idle"``, ``"training"``, ...):

* with an NVIDIA driver: the GPU's utilisation from NVML (percent of time a kernel was running);
* without one: the CPU time this Python process used, from psutil, as a percent of all cores.

Example (in a notebook)::

    with helpers.monitor.UtilisationSampler() as sampler:
        time.sleep(1)                  # idle baseline
        sampler.phase("training")
        model.fit(x, y, verbose=0)
    sampler.summary()   # {"idle": {"mean": ..., "max": ..., "n": ...}, "training": {...}}
"""

from __future__ import annotations

import importlib
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any

from helpers import nvml as nvml_api
from helpers.env import tensorflow
from helpers.nvml import NvmlReading
from helpers.tables import text_table

GPU_SOURCE = "GPU (NVML)"
CPU_SOURCE = "CPU (psutil)"
SOURCES = (GPU_SOURCE, CPU_SOURCE)
GIB = 1024**3

# A made-up 4-GPU server for the exercises (not measured anywhere): what helpers.nvml.readings() returns.
EXAMPLE_READINGS = [
    NvmlReading(0, "Tesla T4", utilization_pct=92.0, memory_used_bytes=14 * GIB,
                memory_total_bytes=15 * GIB, power_w=68.0, temperature_c=71.0),
    NvmlReading(1, "Tesla T4", utilization_pct=3.0, memory_used_bytes=13 * GIB,
                memory_total_bytes=15 * GIB, power_w=31.0, temperature_c=48.0),
    NvmlReading(2, "Tesla T4", utilization_pct=35.0, memory_used_bytes=4 * GIB,
                memory_total_bytes=15 * GIB, power_w=45.0, temperature_c=60.0),
    NvmlReading(3, "Tesla T4", utilization_pct=61.0, memory_used_bytes=2 * GIB,
                memory_total_bytes=15 * GIB, power_w=52.0, temperature_c=64.0),
]


def _fmt(value: float | None, unit: str, scale: float = 1.0, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value / scale:.{digits}f} {unit}"


def readings_table(readings: list[NvmlReading]) -> str:
    """Format NVML readings (``helpers.nvml.readings()``) as a text table; '' when there are none.

    Example:
        >>> print(readings_table(EXAMPLE_READINGS[:1]))  # doctest: +NORMALIZE_WHITESPACE
        GPU  name      util   memory used / total  power  temperature
        0    Tesla T4  92 %   14.0 / 15.0 GiB      68 W   71 °C
    """
    if not readings:
        return ""
    rows = [("GPU", "name", "util", "memory used / total", "power", "temperature")]
    for r in readings:
        memory = ("n/a" if r.memory_used_bytes is None or r.memory_total_bytes is None
                  else f"{r.memory_used_bytes / GIB:.1f} / {r.memory_total_bytes / GIB:.1f} GiB")
        rows.append((str(r.index), r.name, _fmt(r.utilization_pct, "%"), memory,
                     _fmt(r.power_w, "W"), _fmt(r.temperature_c, "°C")))
    return text_table(rows)


def _psutil() -> Any | None:
    try:
        return importlib.import_module("psutil")
    except ImportError:
        return None


def choose(nvml: Any | None = None, gpu_index: int | None = 0, tf_gpu_count: int | None = None,
           why: str = "") -> tuple[str, str]:
    """The source to sample and one sentence that says why: ``(GPU_SOURCE or CPU_SOURCE, reason)``.

    ``GPU_SOURCE`` when TensorFlow uses a GPU and NVML reads the utilisation of GPU `gpu_index`
    (NVML's number of the card TensorFlow calls GPU:0, see :func:`helpers.nvml.locate`); otherwise
    ``CPU_SOURCE``, and the reason names what was missing, so a CPU figure on a GPU machine is never
    shown silently. `tf_gpu_count` is how many GPUs TensorFlow sees (None: ask TensorFlow); `why` is
    the reason `gpu_index` is None, when it is.

    Example:
        >>> choose(tf_gpu_count=0)
        ('CPU (psutil)', "TensorFlow uses no GPU here, so the sampler measures this process's CPU time.")
    """
    cpu = "the sampler measures this process's CPU time instead."
    if tf_gpu_count is None:
        tf_gpu_count = len(tensorflow().config.list_physical_devices("GPU"))
    if tf_gpu_count == 0:
        return CPU_SOURCE, "TensorFlow uses no GPU here, so the sampler measures this process's CPU time."
    if gpu_index is None:
        return CPU_SOURCE, f"{why or 'NVML cannot tell which GPU TensorFlow uses.'} So {cpu}"
    reading = next((r for r in nvml_api.readings(nvml) if r.index == gpu_index), None)  # [] without a driver
    if reading is None:
        return CPU_SOURCE, f"NVML has no reading of GPU {gpu_index} (no driver, or nvidia-ml-py missing), so {cpu}"
    if reading.utilization_pct is None:
        return CPU_SOURCE, f"NVML reads no utilisation of GPU {gpu_index} ({reading.name}), so {cpu}"
    return GPU_SOURCE, f"The sampler reads NVML's utilisation of GPU {gpu_index} ({reading.name}), TensorFlow's GPU:0."


def choose_source(nvml: Any | None = None, gpu_index: int | None = 0, tf_gpu_count: int | None = None) -> str:
    """``GPU_SOURCE`` when TensorFlow uses a GPU and NVML reads GPU `gpu_index`'s utilisation, else ``CPU_SOURCE``.

    `tf_gpu_count` is how many GPUs TensorFlow sees (None: ask TensorFlow). A GPU that TensorFlow does
    not use (a CPU-only build on a GPU machine) would show 0 % "during training": the CPU is measured.
    :func:`choose` also says why.

    Example:
        >>> choose_source() in SOURCES
        True
    """
    return choose(nvml, gpu_index, tf_gpu_count)[0]


@dataclass
class Sample:
    """One reading: seconds since the sampler started, percent busy, and the phase it fell in.

    With the CPU source, ``value`` is this Python process's share of all cores and ``machine`` the
    whole machine's (every process, as ``top`` shows it); with the GPU source ``machine`` is None.
    """

    t: float
    value: float
    phase: str
    machine: float | None = None


class UtilisationSampler:
    """Sample utilisation every `interval` seconds in a background thread; a context manager.

    Args:
        interval: seconds between samples (0.01 to 10).
        source: ``"GPU (NVML)"``, ``"CPU (psutil)"`` or None to choose (GPU when NVML sees one).
        nvml: the pynvml module, or a fake in tests (default: the installed one, if any).
        psutil_module: psutil, or a fake in tests.
        gpu_index: which GPU NVML reads; None (default) means the card TensorFlow calls GPU:0
            (NVML numbers all GPUs and ignores CUDA_VISIBLE_DEVICES; see helpers.nvml.locate).
        tf_gpu_count: GPUs TensorFlow sees (None: ask TensorFlow); with 0 the CPU is sampled.

    ``reason`` is one sentence on why this source was chosen (print it: on a GPU machine where NVML
    cannot read the GPU, a MIG slice for one, it says why the CPU is measured).

    Example:
        >>> with UtilisationSampler(interval=0.05) as s:
        ...     time.sleep(0.3)
        >>> len(s.values) >= 2
        True
    """

    def __init__(self, interval: float = 0.15, source: str | None = None, nvml: Any | None = None,
                 psutil_module: Any | None = None, gpu_index: int | None = None,
                 tf_gpu_count: int | None = None) -> None:
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or not 0.01 <= interval <= 10:
            raise ValueError(f"interval={interval!r}: use a number of seconds from 0.01 to 10.")
        if source is not None and source not in SOURCES:
            raise ValueError(f"source={source!r}: use None, {GPU_SOURCE!r} or {CPU_SOURCE!r}.")
        self.interval = float(interval)
        if nvml is None and source != CPU_SOURCE:
            nvml = nvml_api.module()
        self._nvml = nvml
        why = ""
        if gpu_index is None and source != CPU_SOURCE:
            where = nvml_api.locate(0, nvml=nvml)  # follows CUDA_VISIBLE_DEVICES: indices, UUIDs, MIG names
            gpu_index, why = where.index, where.why
        self.gpu_index = gpu_index
        if source is None:
            self.source, self.reason = choose(nvml, gpu_index, tf_gpu_count, why)
        else:
            self.source, self.reason = source, f"The caller chose {source}."
        self._psutil = psutil_module
        if self.source == CPU_SOURCE and self._psutil is None:
            self._psutil = _psutil()
            if self._psutil is None:
                raise ValueError("psutil is not installed: `pip install psutil` to sample CPU utilisation.")
        self.samples: list[Sample] = []
        self._phase = "idle"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = 0.0
        self._read: Any = None
        self._close: Any = None

    # -- the two readers -------------------------------------------------------------------
    def _open_reader(self) -> None:
        if self.source == GPU_SOURCE:
            nvml = self._nvml
            nvml.nvmlInit()
            handle = nvml.nvmlDeviceGetHandleByIndex(self.gpu_index)
            self._read = lambda: (float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu), None)
            self._close = nvml.nvmlShutdown
        else:
            process = self._psutil.Process()
            cores = self._psutil.cpu_count() or 1
            process.cpu_percent(None)  # the first call only starts psutil's clock
            self._psutil.cpu_percent(None)
            self._read = lambda: (min(100.0, process.cpu_percent(None) / cores), self._psutil.cpu_percent(None))
            self._close = None

    def _run(self) -> None:
        next_at = time.perf_counter() + self.interval
        while not self._stop.wait(max(0.0, next_at - time.perf_counter())):
            next_at += self.interval
            try:
                value, machine = self._read()
            except Exception:  # a reading that fails is skipped, never fatal
                continue
            self.samples.append(Sample(time.perf_counter() - self._start, value, self._phase, machine))

    # -- public API --------------------------------------------------------------------------
    def start(self) -> UtilisationSampler:
        """Start sampling (phase ``"idle"``). Raises RuntimeError when already running."""
        if self._thread is not None:
            raise RuntimeError("The sampler is already running: call stop() first.")
        self.samples = []
        self._phase = "idle"
        self._stop.clear()
        self._open_reader()
        self._start = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="utilisation-sampler", daemon=True)
        self._thread.start()
        return self

    def phase(self, name: str) -> None:
        """Label the samples from now on with `name` (e.g. ``"training"``)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"name={name!r}: use a non-empty phase name such as 'training'.")
        self._phase = name

    def stop(self) -> UtilisationSampler:
        """Stop sampling and wait for the thread; safe to call twice."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            if self._close is not None:
                try:
                    self._close()
                except Exception:
                    pass
        return self

    def __enter__(self) -> UtilisationSampler:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def times(self) -> list[float]:
        return [s.t for s in self.samples]

    @property
    def values(self) -> list[float]:
        return [s.value for s in self.samples]

    def phases(self) -> list[str]:
        """The phase names in the order they first appear."""
        return list(dict.fromkeys(s.phase for s in self.samples))

    def summary(self) -> dict[str, dict[str, float]]:
        """Per phase: mean and max utilisation (percent), the number of samples, and with the CPU source
        the whole machine's mean (``machine_mean``).

        Example:
            >>> s = UtilisationSampler(source=CPU_SOURCE)
            >>> s.samples = [Sample(0.1, 2.0, "idle", 30.0), Sample(0.2, 90.0, "training", 95.0)]
            >>> s.summary()["training"]
            {'mean': 90.0, 'max': 90.0, 'n': 1, 'machine_mean': 95.0}
        """
        out = {}
        for name in self.phases():
            points = [s for s in self.samples if s.phase == name]
            values = [s.value for s in points]
            out[name] = {"mean": round(statistics.fmean(values), 2), "max": round(max(values), 2), "n": len(values)}
            machine = [s.machine for s in points if s.machine is not None]
            if machine:
                out[name]["machine_mean"] = round(statistics.fmean(machine), 2)
        return out

    def plot(self, ax: Any = None, title: str = "") -> Any:
        """Utilisation over time, one colour per phase."""
        import matplotlib.pyplot as plt

        if not self.samples:
            raise ValueError("No samples yet: run some code inside `with sampler:` first.")
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 3))
        for i, name in enumerate(self.phases()):
            points = [s for s in self.samples if s.phase == name]
            ax.plot([s.t for s in points], [s.value for s in points], "o-", markersize=3,
                    color=f"C{i}", label=name + (" (this process)" if self.source == CPU_SOURCE else ""))
        machine = [s for s in self.samples if s.machine is not None]
        if machine:
            ax.plot([s.t for s in machine], [s.machine for s in machine], "--", color="grey",
                    label="whole machine (all processes)")
        ax.set(xlabel="seconds since start", ylabel=f"utilisation (%), {self.source}", ylim=(0, 105),
               title=title)
        ax.grid(True, alpha=0.3)
        ax.legend()
        return ax


# --------------------------------------------------------------------------- power during a benchmark
POWER_SOURCE = ("NVML API Reference, nvmlDeviceGetPowerUsage: milliwatts for the GPU and its memory; on Ampere "
                "(except GA100) and newer GPUs the value is averaged over 1 s, on GA100 and older it is instantaneous")


class PowerSampler:
    """Read a GPU's power draw through NVML every `interval` seconds while code runs; a context manager.

    The samples are taken during the run, from a background thread, and none after it: a reading taken
    after a benchmark shows the GPU idling down, not working. Give the result of
    :func:`helpers.bench.benchmark` (timed with its default clock, or ``clock=sampler.clock``) to
    :meth:`summary`: its ``window`` marks the timed repeats, and only the samples between them count
    (warm-up, the idle waits that calibrate the benchmark, and tracing left out).
    Without a GPU NVML can read (no driver, no nvidia-ml-py, a MIG slice) it takes no samples and
    ``reason`` says why.

    Args:
        interval: seconds between samples (0.01 to 10).
        nvml: the pynvml module, or a fake in tests (default: the installed one, if any).
        gpu_index: NVML's index of the GPU; None (default) means the card TensorFlow calls GPU:0
            (:func:`helpers.nvml.locate`, which follows CUDA_VISIBLE_DEVICES).

    Example:
        >>> with PowerSampler(interval=0.05, nvml=False) as power:
        ...     time.sleep(0.1)
        >>> power.summary()["samples"], power.reason
        (0, 'NVML is not installed (pip package nvidia-ml-py): no power readings.')
    """

    def __init__(self, interval: float = 0.05, nvml: Any | None = None, gpu_index: int | None = None) -> None:
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or not 0.01 <= interval <= 10:
            raise ValueError(f"interval={interval!r}: use a number of seconds from 0.01 to 10.")
        if gpu_index is not None and (not isinstance(gpu_index, int) or isinstance(gpu_index, bool) or gpu_index < 0):
            raise ValueError(f"gpu_index={gpu_index!r}: use None (TensorFlow's GPU:0) or NVML's index, an int >= 0.")
        self.interval = float(interval)
        self._nvml = nvml_api.module() if nvml is None else (nvml or None)  # nvml=False: no NVML, for examples
        self.gpu_index, self.reason = gpu_index, ""
        if self._nvml is None:
            self.reason = "NVML is not installed (pip package nvidia-ml-py): no power readings."
        elif gpu_index is None:
            where = nvml_api.locate(0, nvml=self._nvml)
            self.gpu_index, self.reason = where.index, where.why
        self.samples: list[tuple[float, float]] = []  # (seconds since start, watts)
        self.window: list[float] = []  # the clock's first and last readings, in seconds since start
        self.seconds = 0.0
        self._start = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def clock(self) -> float:
        """``time.perf_counter()``; each reading widens the window :meth:`summary` keeps when it gets no timing.

        Call it yourself around the work to mark it. ``bench.benchmark`` reads its clock during the warm-up
        too: give its result to :meth:`summary` instead, whose ``window`` covers the timed repeats only.
        """
        now = time.perf_counter()
        self.window = [self.window[0] if self.window else now - self._start, now - self._start]
        return now

    def _open(self) -> Any | None:
        if self._nvml is None or self.gpu_index is None:
            return None
        try:
            self._nvml.nvmlInit()
        except Exception as exc:
            self.reason = f"no NVIDIA driver here (NVML could not start: {exc}): no power readings."
            return None
        handle = nvml_api._nvml_call(self._nvml.nvmlDeviceGetHandleByIndex, self.gpu_index)
        if handle is None or nvml_api._nvml_call(self._nvml.nvmlDeviceGetPowerUsage, handle) is None:
            self.reason = f"NVML reads no power of GPU {self.gpu_index}: no power readings."
            nvml_api._nvml_call(self._nvml.nvmlShutdown)
            return None
        return handle

    def _run(self, handle: Any) -> None:
        while True:
            milliwatts = nvml_api._nvml_call(self._nvml.nvmlDeviceGetPowerUsage, handle)
            if milliwatts is not None and not self._stop.is_set():
                self.samples.append((time.perf_counter() - self._start, milliwatts / 1000.0))
            if self._stop.wait(self.interval):
                break

    def start(self) -> PowerSampler:
        """Start sampling. Raises RuntimeError when already running."""
        if self._thread is not None:
            raise RuntimeError("The power sampler is already running: call stop() first.")
        self.samples, self.window, self.seconds = [], [], 0.0
        self._stop.clear()
        self._start = time.perf_counter()
        handle = self._open()
        if handle is not None:
            self._thread = threading.Thread(target=self._run, args=(handle,), name="power-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> PowerSampler:
        """Stop sampling (no sample is taken after this) and wait for the thread; safe to call twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            nvml_api._nvml_call(self._nvml.nvmlShutdown)
        if self._start and not self.seconds:
            self.seconds = time.perf_counter() - self._start
        return self

    def __enter__(self) -> PowerSampler:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def summary(self, timing: Any = None) -> dict[str, Any]:
        """The samples of the timed window (all of them when neither `timing` nor :meth:`clock` marked one), summed up.

        Args:
            timing: a :class:`helpers.bench.BenchResult` timed with ``time.perf_counter`` (the default clock,
                or :meth:`clock`): its ``window``, the timed repeats, is the window. None: the readings of
                :meth:`clock`, if any.

        ``energy_j`` is the mean power of those samples times the window's seconds: the energy of the
        timed work, from power read while it ran. Without samples the figures are None.

        Example:
            >>> p = PowerSampler(nvml=False)
            >>> p.samples, p.window = [(0.1, 60.0), (0.2, 70.0), (0.9, 20.0)], [0.05, 0.55]
            >>> s = p.summary()
            >>> s["samples"], s["mean_w"], s["max_w"], s["seconds"], s["energy_j"]
            (2, 65.0, 70.0, 0.5, 32.5)
        """
        if timing is not None:
            window = getattr(timing, "window", None)
            if window is None or len(window) != 2:
                raise ValueError(f"timing={timing!r}: pass the result of helpers.bench.benchmark (it has a window), "
                                 "or None.")
            self.window = [window[0] - self._start, window[1] - self._start]
        start, end = self.window if len(self.window) == 2 else (0.0, self.seconds)
        watts = [w for t, w in self.samples if start <= t <= end]
        mean = statistics.fmean(watts) if watts else None
        return {"samples": len(watts), "seconds": end - start, "mean_w": mean, "max_w": max(watts, default=None),
                "energy_j": None if mean is None else mean * (end - start), "reason": self.reason}
