"""Topic module of notebook 03 · CPU vs GPU timing: sizes, device peaks, crossover, plots, published figures.

The timing itself is on the notebook's page (``helpers.bench.benchmark``, ``tf.matmul``, the step
timer); this module holds what is too long for a cell: the ``SIZES`` rule, a GPU's peak looked up
in ``data/gpu_specs.csv`` by device name, the size where a GPU starts to win, the sweep and
roofline plots and their readings, the speed-ups the notebook compares with, and the closing note.
The CPU's peak is in :mod:`helpers.cpu`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from helpers import params
from helpers.tables import text_table

SMOKE_SIZES = [64, 256]
MAX_SIZE = 8192  # one 8192 x 8192 float32 matmul is 1.1 TFLOP: about 5 s on a 2-core CPU

# Speed-ups published in blog posts, as the posts state them. Their setups (hardware, software versions, data)
# are documented only in part: anecdotes to compare with, not benchmarks.
BLOG_POST = ("Marko Kovacevic, \"How GPU can Powerfully Speed Up Training in Deep Learning\", "
             "https://marko-kovacevic.com/blog/how-gpu-can-powerfully-speed-up-training-in-deep-learning/")
AZURE_DEPLOYMENT = "https://azure.microsoft.com/en-us/blog/gpus-vs-cpus-for-deployment-of-deep-learning-models/"
AZURE_RAPIDS = "https://azure.microsoft.com/en-us/blog/azure-machine-learning-service-now-supports-nvidia-s-rapids/"
CENTML_GUIDE = "CentML, \"The Power of GPUs in Deep Learning Models\", https://centml.ai/guide-gpus-in-deep-learning/"
PUBLISHED_SPEEDUPS = [
    {"what": "text classification, training, Google Colab", "cpu_s": 198.2, "gpu_s": 14.4, "speedup": "13.76x",
     "source": f"the blog post's author's own run ({BLOG_POST})",
     "differs": "deep learning, as here; Colab's CPU and GPU, another model and data set, setup not documented"},
    {"what": "serving image CNNs (inference), 3 GPUs vs 5 CPUs", "cpu_s": None, "gpu_s": None,
     "speedup": "804 % faster = 9.04x",
     "source": f"the blog post's summary of an Azure post ({AZURE_DEPLOYMENT})",
     "differs": ("deep learning, but deployment (requests served per second by Kubernetes clusters), not "
                 "training; 804 % faster means 100 % + 804 % = 9.04x the speed")},
    {"what": "gradient-boosted decision trees, 4 GPUs vs CPUs", "cpu_s": None, "gpu_s": None, "speedup": "23.2x",
     "source": f"the blog post's summary of an Azure post on RAPIDS ({AZURE_RAPIDS})",
     "differs": "not deep learning: a tree-boosting job on NVIDIA's RAPIDS libraries, not a neural network"},
]
QUOTED = "published in a blog post (anecdote)"

# ResNet-50 v1.5 inference measured by NVIDIA on a T4 (images/s by batch size).
NVIDIA_T4_RESNET50 = {"fp32": {1: 136, 4: 289, 64: 424}, "mixed": {1: 211, 4: 593, 64: 991}}
NVIDIA_SOURCE = ("NVIDIA DeepLearningExamples, TensorFlow/Classification/ConvNets/resnet50v1.5/README.md, "
                 "'Results': TensorFlow 20.06-tf1 NGC container, 20 warm-up then 80 timed iterations")


def run_sizes(sizes: Any, smoke: bool) -> list[int]:
    """The matrix sizes this run times: `sizes` checked (2 to 8 distinct values up to 8192), or the smoke sizes.

    Called before TensorFlow starts, so a bad ``SIZES`` fails in the first second.

    Example:
        >>> run_sizes([512, 128, 256, 128], smoke=False)
        [128, 256, 512]
        >>> run_sizes([512, 1024], smoke=True)
        [64, 256]
    """
    params.validate({"SIZES": sizes})
    distinct = sorted(set(sizes))
    if not 2 <= len(distinct) <= 8 or distinct[-1] > MAX_SIZE or distinct[0] < 8:
        raise ValueError(f"SIZES={sizes!r} is not allowed: use 2 to 8 different integers from 8 to {MAX_SIZE}, "
                         "for example [128, 256, 512, 1024, 2048].")
    return list(SMOKE_SIZES) if smoke else distinct


# --------------------------------------------------------------------------- GPU peaks from the table
_MODELS = ("h200", "h100", "a100", "a10", "l40s", "l4", "v100", "p100", "t4")


def _model(name: str) -> str | None:
    tokens = re.split(r"[\s\-_/]+", name.lower())
    return next((t for t in tokens if t in _MODELS), None)


def _memory_gb(name: str) -> int | None:
    match = re.search(r"(\d+)\s*gb", name.lower())
    return int(match.group(1)) if match else None


@dataclass
class GpuPeak:
    """A GPU's peak from the course's table: ``gflops`` and ``bandwidth_gb_s`` are None when it is not there."""

    name: str
    gflops: float | None
    bandwidth_gb_s: float | None
    row: str | None
    peak_source: str


def gpu_peak(name: str, specs: Sequence[Mapping[str, Any]] | None = None, tf32: bool = False) -> GpuPeak:
    """Look a GPU up in ``data/gpu_specs.csv`` by the name TensorFlow reports; its datasheet peak in GFLOP/s.

    The model (T4, A100, L4, ...) must match; among rows of one model the one with the same memory
    size is taken, else the fastest (an upper bound). With `tf32` (TensorFlow's default on compute
    capability 8.0 and up) float32 matmuls run on TF32 Tensor Cores, so the TF32 peak bounds them.

    Example:
        >>> gpu_peak("Tesla T4").gflops
        8100.0
        >>> gpu_peak("NVIDIA A100-SXM4-80GB").row
        'A100 SXM4 80 GB'
        >>> gpu_peak("NVIDIA GeForce RTX 4090").gflops is None
        True
    """
    if specs is None:
        from helpers.data import load_gpu_specs

        specs = load_gpu_specs()
    model = _model(name)
    rows = [r for r in specs if model is not None and _model(r["name"]) == model]
    if not rows:
        return GpuPeak(name, None, None, None, f"{name} is not in the course's table (data/gpu_specs.csv): look up "
                                                "its FP32 peak in its datasheet")
    same_memory = [r for r in rows if _memory_gb(name) is not None and r.get("memory_gb") == _memory_gb(name)]
    row = max(same_memory or rows, key=lambda r: r["fp32_tflops"])
    use_tf32 = tf32 and (row.get("compute_capability") or 0) >= 8.0
    if use_tf32 and not row.get("tf32_tensor_tflops_dense"):
        return GpuPeak(name, None, row.get("bandwidth_gb_s"), row["name"],
                       f"TF32 is on and the table has no TF32 figure for {row['name']}: turn TF32 off "
                       "(tf.config.experimental.enable_tensor_float_32_execution(False)) to compare with FP32")
    tflops = row["tf32_tensor_tflops_dense"] if use_tf32 else row["fp32_tflops"]
    kind = "TF32 Tensor Core (dense)" if use_tf32 else "FP32"
    return GpuPeak(name, tflops * 1000, row.get("bandwidth_gb_s"), row["name"],
                   f"datasheet peak, {kind}: {tflops:g} TFLOP/s for {row['name']} ({row['source']}; "
                   "data/gpu_specs.csv)")


def bound_peak(peak: float | None, source: str, fastest: float) -> tuple[float, str]:
    """A peak that bounds every measurement: `peak`, or the fastest measurement where it beats (or lacks) one.

    A measurement above a computed peak means a factor of that peak is wrong (most often a clock
    the OS under-reports, or a matrix unit the peak does not count, such as Apple's or Intel's AMX); the
    fastest measurement then stands in, and the source says so.

    Example:
        >>> bound_peak(166.0, "2 cores x 2.6 GHz x 32", 203.0)[0]
        203.0
        >>> bound_peak(332.0, "2 cores x 2.6 GHz x 64", 203.0)
        (332.0, '2 cores x 2.6 GHz x 64')
    """
    if fastest <= 0 or not math.isfinite(fastest):
        raise ValueError(f"fastest={fastest!r}: use the fastest measured GFLOP/s (a positive number).")
    if peak is None:
        return fastest, (f"{source} No peak could be computed, so the fastest measurement, {fastest:,.0f} GFLOP/s, "
                         "stands in: the true peak is at least this.")
    if fastest <= peak:
        return peak, source
    return fastest, (f"{source} Raised to the fastest measurement, {fastest:,.0f} GFLOP/s, which beat the computed "
                     f"{peak:,.0f}: the hardware ran faster than those factors allow (most often a clock above the "
                     "one the OS reports, or a matrix unit the peak does not count, such as Apple's AMX or "
                     "Intel's AMX).")


def crossover(sizes: Sequence[int], cpu_s: Sequence[float], gpu_s: Sequence[float]) -> int | None:
    """The smallest size from which the GPU is strictly faster at that size and every larger one, else None.

    A tie (``gpu_s == cpu_s``) is not a win; None when the GPU is not faster at the largest size.

    Example:
        >>> crossover([64, 256, 1024, 4096], [1e-5, 2e-4, 9e-3, 0.6], [3e-5, 1e-4, 6e-4, 2e-2])
        256
    """
    if not (len(sizes) == len(cpu_s) == len(gpu_s)) or not sizes:
        raise ValueError("sizes, cpu_s and gpu_s must be non-empty lists of the same length (one time per size).")
    if list(sizes) != sorted(sizes):
        raise ValueError(f"sizes={list(sizes)!r}: list them from smallest to largest.")
    found = None
    for n, c, g in zip(reversed(sizes), reversed(cpu_s), reversed(gpu_s), strict=True):
        if g < c:
            found = n
        else:
            break
    return found


# --------------------------------------------------------------------------- plots
def _plain(value: float, _position: Any = None) -> str:
    """A tick label in plain numbers (2,000 and 0.1, not 2×10³ and 10⁻¹)."""
    if value >= 1:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _plain_log_axis(axis: Any) -> None:
    """Label a log axis in plain numbers: every power of ten, plus 2 and 5 times one when it spans few decades."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    low, high = sorted(axis.get_view_interval())
    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(_plain))
    if low > 0 and math.log10(high / low) <= 2.5:
        axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
        axis.set_minor_formatter(FuncFormatter(_plain))
    else:
        axis.set_minor_formatter(NullFormatter())


def plot_sweep(gflops: Mapping[str, Mapping[int, float]], peaks: Mapping[str, float | None],
               ax: Any = None) -> Any:
    """GFLOP/s against matrix size (log-log), one line per device, each device's peak dashed in its colour.

    `peaks` maps a line's label to its peak; a label whose first word names a device that already
    has a peak line (``"NumPy (CPU)"`` after ``"CPU"``) shares it.

    Example:
        >>> ax = plot_sweep({"CPU": {64: 20.0, 256: 90.0}}, {"CPU": 332.0})
    """
    import matplotlib.pyplot as plt

    if not gflops:
        raise ValueError("gflops is empty: pass {device: {size: GFLOP/s}}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    every_size, top = set(), 0.0
    for i, (label, by_size) in enumerate(gflops.items()):
        sizes = sorted(int(n) for n in by_size)
        every_size |= set(sizes)
        values = [by_size[n] if n in by_size else by_size[str(n)] for n in sizes]
        top = max(top, *values)
        ax.plot(sizes, values, marker="o", color=f"C{i}", label=f"{label} (measured)")
        peak = peaks.get(label)
        if peak:
            top = max(top, peak)
            ax.axhline(peak, color=f"C{i}", linestyle="--", linewidth=1, label=f"{label} peak {peak:,.0f}")
    from matplotlib.ticker import NullFormatter, NullLocator

    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sorted(every_size), [str(n) for n in sorted(every_size)])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(top=3 * top)  # room for the legend above the peak lines
    _plain_log_axis(ax.yaxis)
    ax.set(xlabel="matrix size n (n x n @ n x n)", ylabel="GFLOP/s", title="Matmul throughput against peak")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", ncols=2)
    return ax


def plot_roofline(points: Mapping[str, Sequence[tuple[float, float]]],
                  roofs: Mapping[str, tuple[float, float | None, str]], ax: Any = None) -> Any:
    """A small roofline: GFLOP/s against arithmetic intensity (FLOPs per byte moved), log-log.

    Args:
        points: ``{label: [(flops_per_byte, gflops), ...]}``, measured.
        roofs: ``{device: (peak_gflops, bandwidth_gb_s or None, how the bandwidth was obtained)}``;
            each roof is ``min(peak, bandwidth x intensity)``.

    Example:
        >>> ax = plot_roofline({"CPU matmul": [(40.0, 150.0)]}, {"CPU": (332.0, 20.0, "measured")})
    """
    import matplotlib.pyplot as plt
    import numpy as np

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    xs = [x for pts in points.values() for x, _ in pts] or [1.0]
    grid = np.logspace(math.log10(min(xs) / 2), math.log10(max(xs) * 2), 100)
    for i, (device, (peak, bandwidth, how)) in enumerate(roofs.items()):
        roof = np.full_like(grid, peak) if bandwidth is None else np.minimum(peak, bandwidth * grid)
        label = f"{device} roof: {peak:,.0f} GFLOP/s" + (f", {bandwidth:,.0f} GB/s ({how})" if bandwidth else "")
        ax.plot(grid, roof, color=f"C{i}", linestyle="--", linewidth=1, label=label)
    for j, (label, pts) in enumerate(points.items()):
        ax.scatter([x for x, _ in pts], [y for _, y in pts], marker="os^v"[j % 4], color=f"C{j + len(roofs)}",
                   label=label, zorder=3)
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOPs per byte moved)", ylabel="GFLOP/s",
           title="A small roofline: memory-bound left, compute-bound right")
    from matplotlib.ticker import NullFormatter, NullLocator

    ticks = sorted(set(xs))
    ax.set_xticks(ticks, [_plain(x) for x in ticks])  # plain numbers at the intensities measured
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    _plain_log_axis(ax.yaxis)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return ax


# --------------------------------------------------------------------------- readings
BUSY_SPREAD = 0.5  # IQR / median above this: the machine was busy during the repeats
FALL = 0.8  # a larger size below this share of a smaller size's rate: the curve falls
TOO_SHORT = 1.5  # a naive reading this many times shorter than the real time (or more) "timed the dispatch"
ADD_ARRAYS = 3  # a + b reads a and b and writes the sum: three arrays, its working set
MIN_STEADY_ROWS = 2  # fewer steady sizes than this: a sweep has no peak to read, only the one rate left
ABOVE = 1.1  # a rate at least this many times the largest arrays' rate "ran above" it


def async_reading(times: Mapping[str, Sequence[float]], synced: str, host_queue: Sequence[str] = (),
                  device: str = "CPU", spreads: Mapping[str, float] | None = None,
                  limit: float = BUSY_SPREAD) -> list[str]:
    """The reading of the asynchronous demo: each wait against its own naive reading, and what each one waited for.

    A naive reading counts as "too short" when the real time is at least ``TOO_SHORT`` (1.5) times
    it; the sentence states that rule.

    Args:
        times: ``{wait: (seconds when the calls returned, seconds after the wait)}``, one row per wait,
            each timing the same calls from an idle device.
        synced: the row that waits for the device itself (``sync_devices()``): the reference.
        host_queue: rows that wait only for TensorFlow's host-side queue (``context.async_wait()``),
            which on a GPU can return while kernels still run.
        device: ``"CPU"`` or ``"GPU"``: where the calls ran.
        spreads: ``{wait: (max - min) / median}`` of each row's repeated waited times; a row above
            `limit` (or NaN) is noisy: a noisy reference row is flagged as rough, and a host-queue row is
            not compared with the reference when either is noisy (noise may explain the gap).
        limit: the largest spread still called steady (the notebook shows it as a named constant).

    Example:
        >>> async_reading({"sync": (0.001, 0.05), "numpy": (0.01, 0.05)}, synced="sync")[1][:72]
        'After each wait for the device the clock read 5x to 50x its own naive re'
    """
    if not times:
        raise ValueError("times is empty: pass {wait: (naive seconds, waited seconds)}.")
    if any(len(t) != 2 or not all(math.isfinite(x) for x in t) or not 0 < t[0] <= t[1] for t in times.values()):
        raise ValueError(f"times={dict(times)!r}: each row is (naive seconds, waited seconds), 0 < naive <= waited.")
    if synced not in times or synced in host_queue or not set(host_queue) <= set(times):
        raise ValueError(f"synced={synced!r}, host_queue={list(host_queue)!r}: name rows of times ({list(times)}); "
                         "synced is the row that waits for the device, not one of host_queue.")
    if device not in ("CPU", "GPU"):
        raise ValueError(f"device={device!r}: use 'CPU' or 'GPU'.")
    if not (isinstance(limit, (int, float)) and math.isfinite(limit) and limit > 0):
        raise ValueError(f"limit={limit!r}: use a positive share, such as 0.5 for 50%.")
    noisy = {wait: s for wait, s in (spreads or {}).items() if wait in times and not s <= limit}
    naive, waited = times[synced]
    waiting = {wait: w / n for wait, (n, w) in times.items() if wait not in host_queue}
    naives = [n for n, _ in times.values()]
    ratio = waited / naive
    verdict = (f"{ratio:,.0f}x too short: it timed the dispatch, not the work" if ratio >= TOO_SHORT else
               f"only {ratio:,.2f}x shorter (less than {TOO_SHORT}x): here the calls had nearly finished when they "
               "returned")
    short = [wait for wait, r in waiting.items() if r < TOO_SHORT]
    flag = (f" The {synced} repeats spread {noisy[synced]:.0%} of their median (above {limit:.0%}): the machine was "
            "busy while they ran, so read these times as rough and rerun the cell for steadier ones."
            if synced in noisy else "")
    lines = [f"Reading: the naive timer read {naive * 1e3:.3g} ms for work that took {waited * 1e3:,.0f} ms "
             f"({synced}): {verdict}.{flag}",
             f"After each wait for the device the clock read {min(waiting.values()):,.0f}x to "
             f"{max(waiting.values()):,.0f}x its own naive reading ("
             + ", ".join(f"{wait}: {r:,.0f}x" for wait, r in waiting.items()) + ")"
             + (": each waited for the work." if not short else
                f"; {', '.join(short)} read less than {TOO_SHORT}x its naive reading, so the calls had nearly "
                "finished before it waited.")]
    for wait in host_queue:
        host = times[wait][1]
        read = f"{wait} read {host * 1e3:,.1f} ms against {waited * 1e3:,.1f} ms for {synced}"
        if noisy.keys() & {wait, synced}:  # a gap between noisy rows may be the noise, not the wait
            spreads_read = _and([f"{noisy[w]:.0%} ({w})" for w in (wait, synced) if w in noisy])
            lines.append(f"{read}, but the repeats spread {spreads_read} of their median (above {limit:.0%}): too "
                         "noisy to compare, as the machine was busy while they ran; rerun the cell. It waits only for "
                         "TensorFlow's host-side queue of pending ops.")
            continue
        if device == "CPU":
            why = ("on a CPU that queue runs the ops themselves, so an empty queue means finished work. On a GPU it "
                   "empties once the kernels are queued on the GPU, which may still be running them.")
        elif host < FALL * waited:
            why = (f"on this GPU it read less than {FALL:.0%} of the {synced} time: it returned once the kernels "
                   "were queued on the GPU, while the GPU was still running them. It does not wait for the device: "
                   "use sync_devices() or .numpy().")
        else:
            why = ("here the GPU had finished the kernels by the time the queue was empty, but nothing made it wait "
                   "for them: on a GPU it can return while kernels still run. Use sync_devices() or .numpy().")
        lines.append(f"{read}: it waits only for TensorFlow's host-side queue of pending ops; {why}")
    if len(naives) > 1 and max(naives) > 1.5 * min(naives):
        lines.append(f"The naive readings of the same calls range from {min(naives) * 1e3:.3g} to "
                     f"{max(naives) * 1e3:.3g} ms: they time the dispatch (handing each call to TensorFlow's queue), "
                     "not the work, and dispatch takes longer when the queue is full or Python is busy elsewhere.")
    return lines


def noise_reading(spreads: Mapping[str, float], curves: Mapping[str, Mapping[int, float]] | None = None,
                  limit: float = BUSY_SPREAD) -> str:
    """One sentence on noise: spreads (IQR / median) above `limit`, and rate curves that fall at larger sizes.

    Args:
        spreads: ``{label: IQR / median}`` of some timings; NaN (no spread measured) counts as noisy.
        curves: ``{label: {size: rate}}``; every larger size that reaches less than 80% of a smaller
            size's rate is flagged, since more work per call should run at least as fast.
        limit: the largest spread still called steady (the notebook shows it as a named constant).

    Example:
        >>> noise_reading({"n = 512": 0.04})
        'Noise: every spread is within 50% of its median, so these medians are steady enough to compare.'
        >>> noise_reading({"n = 512": 6.07, "n = 1024": 0.1})[:56]
        'Noise: the spread is above 50% for n = 512 (607%); the m'
    """
    if not (isinstance(limit, (int, float)) and math.isfinite(limit) and limit > 0):
        raise ValueError(f"limit={limit!r}: use a positive share, such as 0.5 for 50%.")
    noisy = [f"{label} ({spread:.0%})" for label, spread in spreads.items() if not spread <= limit]
    falling = []
    for label, curve in (curves or {}).items():
        sizes = sorted(curve, key=int)
        for i, n in enumerate(sizes[1:], 1):
            before = max(curve[m] for m in sizes[:i])
            if curve[n] < FALL * before:  # every size that falls, not only the first
                falling.append(f"{label} at n = {n} ({curve[n]:,.0f}, down from {before:,.0f}; below {FALL:.0%})")
    if not noisy and not falling:
        return (f"Noise: every spread is within {limit:.0%} of its median" + (
            " and no curve falls at larger sizes" if curves else "") + ", so these medians are steady enough to "
            "compare.")
    found = "; ".join(part for part in (
        f"the spread is above {limit:.0%} for {', '.join(noisy)}" if noisy else "",
        f"the rate falls at a larger size for {', '.join(falling)}" if falling else "") if part)
    return (f"Noise: {found}; the machine was busy during this measurement (other programs took the cores for part "
            "of it); rerun the cell for steadier numbers.")


def steady_rates(rates: Mapping[Any, float], spreads: Mapping[Any, float] | None,
                 limit: float = BUSY_SPREAD) -> dict[Any, float]:
    """The rates whose spread is at most `limit`: the ones steady enough to headline (all of them without spreads).

    Example:
        >>> steady_rates({512: 80.0, 2048: 49.0}, {512: 0.04, 2048: 14.36})
        {512: 80.0}
    """
    if not (isinstance(limit, (int, float)) and math.isfinite(limit) and limit > 0):
        raise ValueError(f"limit={limit!r}: use a positive share, such as 0.5 for 50%.")
    if spreads is None:
        return dict(rates)
    return {n: g for n, g in rates.items() if (s := _by_size(spreads, n)) is not None and s <= limit}


def clock_note(fastest: float, at_os_clock: float | None) -> str:
    """Whether the CPU's fastest matmul beat the peak at the clock the OS reports, and why that can happen.

    Noise (other programs taking the cores) only makes a timing longer, so even a noisy row's rate is
    work the core did: any row may show that the core ran above the OS's clock.

    Example:
        >>> clock_note(150.0, 140.8)[:39]
        "The CPU's 150 GFLOP/s beats 141 GFLOP/s"
        >>> clock_note(90.0, None)
        'The OS reports no clock, so the peak rests on the measured clock alone.'
    """
    if not (math.isfinite(fastest) and fastest > 0):
        raise ValueError(f"fastest={fastest!r}: use the fastest measured GFLOP/s (a positive number).")
    if at_os_clock is None:
        return "The OS reports no clock, so the peak rests on the measured clock alone."
    if fastest <= at_os_clock:
        return (f"The CPU's fastest, {fastest:,.0f} GFLOP/s, stays at or below {at_os_clock:,.0f} GFLOP/s, the peak "
                "at the clock the OS reports: this run needs no boost to explain it.")
    return (f"The CPU's {fastest:,.0f} GFLOP/s beats {at_os_clock:,.0f} GFLOP/s, the peak at the clock the OS "
            "reports: the core ran faster than that clock (noise only slows a timing, so this holds even for a "
            "noisy row). That is boost: the core raises its clock while it can stay within its power and heat "
            "limits, and a virtual machine often shows only the base clock.")


def working_set_bytes(side: int, arrays: int = ADD_ARRAYS) -> int:
    """Bytes an elementwise op touches on ``side x side`` float32 arrays: `arrays` arrays of ``4 * side**2`` bytes.

    Example:
        >>> working_set_bytes(2048) / 2**20  # a + b on 16 MiB arrays: a, b and the sum
        48.0
    """
    if isinstance(side, bool) or not isinstance(side, int) or side < 1:
        raise ValueError(f"side={side!r}: use a positive whole number of rows.")
    if isinstance(arrays, bool) or not isinstance(arrays, int) or arrays < 1:
        raise ValueError(f"arrays={arrays!r}: use the number of arrays the op reads and writes (3 for a + b).")
    return arrays * 4 * side**2


def elementwise_table(gb_s: Mapping[str, Mapping[int, float]], cache_bytes: float | None = None,
                      arrays: int = ADD_ARRAYS) -> str:
    """A table of the GB/s ``a + b`` moved, by array size (rows) and device (columns), with each working set.

    Args:
        gb_s: ``{device: {side: GB/s}}`` for ``side x side`` float32 arrays.
        cache_bytes: the CPU's largest cache; with it a column says whether each working set fits it.
        arrays: how many arrays the op touches (3 for ``a + b``).

    Example:
        >>> print(elementwise_table({"CPU": {512: 22.7, 4096: 9.1}}).splitlines()[2])  # doctest: +NORMALIZE_WHITESPACE
        4096 x 4096  64 MiB  192 MiB  9.1 GB/s
    """
    if not gb_s:
        raise ValueError("gb_s is empty: pass {device: {side: GB/s}}.")
    devices = list(gb_s)
    sides = sorted({int(side) for by_side in gb_s.values() for side in by_side})
    fit_column = () if cache_bytes is None else (f"fits the {cache_bytes / 2**20:,.4g} MiB cache?",)
    rows = [("array", "MiB each", f"working set ({arrays} arrays)", *fit_column, *(f"{d}: a + b" for d in devices))]
    for side in sides:
        rates = [_by_size(gb_s[d], side) for d in devices]
        ws = working_set_bytes(side, arrays)
        fits = () if cache_bytes is None else ("yes" if ws <= cache_bytes else "no",)
        rows.append((f"{side} x {side}", f"{4 * side**2 / 2**20:,.4g} MiB", f"{ws / 2**20:,.4g} MiB", *fits,
                     *(f"{g:,.1f} GB/s" if g is not None else "-" for g in rates)))
    return text_table(rows)


def _by_size(values: Mapping[Any, float], n: Any) -> float | None:
    """`values[n]`, also when the keys are strings (results read back from JSON)."""
    return values.get(n, values.get(str(n), values.get(int(n)) if str(n).isdigit() else None))


def sweep_reading(label: str, gflops: Mapping[int, float], peak: float | None,
                  spreads: Mapping[int, float] | None = None, limit: float = BUSY_SPREAD) -> str:
    """The reading of one line of the matmul sweep: the best steady size, the cost of calls at the smallest, a fall.

    Only sizes whose spread (IQR / median) is at most `limit` are read; the others are named as left out.
    With fewer than ``MIN_STEADY_ROWS`` steady sizes there is no curve to find a peak on: the sentence
    gives the one steady rate and says so.

    Example:
        >>> sweep_reading("TensorFlow on the CPU", {128: 20.0, 512: 100.0, 2048: 50.0}, 200.0).split(". ")[0]
        'TensorFlow on the CPU peaks at n = 512 with 100 GFLOP/s, 50% of the peak'
        >>> sweep_reading("CPU", {128: 30.0, 512: 80.0, 2048: 49.0}, 80.0, {128: 0.1, 512: 0.04, 2048: 14.36})[:80]
        'CPU peaks at n = 512 with 80 GFLOP/s, 100% of the peak (n = 2048 left out: its s'
        >>> sweep_reading("CPU", {512: 80.0, 2048: 49.0}, 80.0, {512: 0.04, 2048: 14.36})[:78]
        'CPU: only n = 512 was steady (80 GFLOP/s, 100% of the peak), too few steady ro'
    """
    if not gflops:
        raise ValueError("gflops is empty: pass {size: GFLOP/s}.")
    steady = steady_rates(gflops, spreads, limit)
    left_out = [n for n in sorted(gflops, key=int) if n not in steady]
    out = "; ".join(f"n = {n}" for n in left_out)
    if not steady:
        return (f"{label}: no size was steady enough to read (every spread is above {limit:.0%}: "
                f"{', '.join(f'n = {n}, {_by_size(spreads or {}, n):.0%}' for n in left_out)}); rerun the cell.")
    sizes = sorted(steady, key=int)
    if len(sizes) < MIN_STEADY_ROWS:
        n, rate = sizes[0], steady[sizes[0]]
        return (f"{label}: only n = {n} was steady ({rate:,.0f} GFLOP/s" + (f", {rate / peak:.0%} of the peak" if peak
                                                                          else "")
                + f"), too few steady rows to read a peak (it takes {MIN_STEADY_ROWS}; "
                + f"{_and([f'n = {m}' for m in left_out])} left out, spread above {limit:.0%}); rerun the cell.")
    best_n = max(sizes, key=lambda n: steady[n])
    best, smallest, largest = steady[best_n], steady[sizes[0]], steady[sizes[-1]]
    why_out = ""
    if left_out:
        why_out = (f" ({out} left out: {'its spread' if len(left_out) == 1 else 'their spreads'}, "
                   f"{', '.join(f'{_by_size(spreads or {}, n):.0%}' for n in left_out)}, "
                   f"{'is' if len(left_out) == 1 else 'are'} above {limit:.0%})")
    text = (f"{label} peaks at n = {best_n} with {best:,.0f} GFLOP/s" + (f", {best / peak:.0%} of the peak" if peak
                                                                         else "") + why_out + ".")
    if best_n != sizes[0] and smallest < 0.5 * best:
        text += (f" At n = {sizes[0]} it reaches {smallest / best:.0%} of that (under half): calling the op costs "
                 "more than its arithmetic.")
    if best_n != sizes[-1] and largest < FALL * best:
        text += (f" At n = {sizes[-1]} it falls back to {largest:,.0f} GFLOP/s (under {FALL:.0%} of the best), "
                 "although a larger product has more work per call: see the noise line.")
    return text


def _duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:,.3g} s"
    return f"{seconds * 1e6:,.0f} µs" if seconds < 1e-3 else f"{seconds * 1e3:,.3g} ms"


def _mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.4g}"


def _and(items: Sequence[str]) -> str:
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else list(items))


def roofline_reading(device: str, peak: float, bandwidth: float | None, add_gb_s: Mapping[int, float],
                     matmul_n: int, matmul_gflops: float, cache_bytes: float | None = None,
                     datasheet: bool = False, arrays: int = ADD_ARRAYS) -> list[str]:
    """What one device's roofline shows, worded from the numbers measured.

    The cache test compares each size's **working set** (all `arrays` arrays ``a + b`` touches, see
    :func:`working_set_bytes`) with `cache_bytes`; a size "ran above" the largest arrays' rate when
    it reached at least ``ABOVE`` (1.1) times it, and "ran slower" when it stayed below it (then the
    sentence gives the time of one call: the bytes it moved over its rate).

    Args:
        device: ``"CPU"`` or ``"GPU"``.
        peak: the device's peak GFLOP/s; bandwidth: the slope of its roof in GB/s (None: no slope).
        add_gb_s: ``{side: GB/s}`` that ``a + b`` moved on ``side x side`` float32 arrays.
        matmul_n, matmul_gflops: the largest matmul of the sweep and its rate.
        cache_bytes: the largest cache the OS reports (CPU), or None.
        datasheet: True when `bandwidth` is a datasheet figure; False when it is the rate measured on
            the largest arrays (the slope drawn through that point).
        arrays: arrays the op reads and writes (3 for ``a + b``).

    Example:
        >>> roofline_reading("CPU", 332.0, 9.1, {512: 22.7, 4096: 9.1}, 2048, 150.0, 32 * 2**20)[0][:60]
        'Reading (CPU): a + b reached at most 1.89 GFLOP/s, 0.57% of '
    """
    if not add_gb_s:
        raise ValueError("add_gb_s is empty: pass {side: GB/s}.")
    if not (math.isfinite(peak) and peak > 0):
        raise ValueError(f"peak={peak!r}: use the device's peak in GFLOP/s (a positive number).")
    sides = sorted(int(side) for side in add_gb_s)
    rate = {side: _by_size(add_gb_s, side) for side in sides}
    first, last = rate[sides[0]], rate[sides[-1]]
    best = max(rate.values())
    each = {side: 4 * side**2 for side in sides}
    ws = {side: working_set_bytes(side, arrays) for side in sides}
    lines = [f"Reading ({device}): a + b reached at most {best / 12:,.2f} GFLOP/s, {best / 12 / peak:.2%} of the "
             f"peak, while the n = {matmul_n} matmul reached {matmul_gflops / peak:.0%}: at 1 FLOP per 12 bytes "
             "moved, the arithmetic units wait for data (or, on small arrays, for the call itself): memory, not "
             "arithmetic, bounds a + b."]
    moved = (f"It moved {first:,.1f} GB/s on {_mib(each[sides[0]])} MiB arrays and {last:,.1f} GB/s on "
             f"{_mib(each[sides[-1]])} MiB ones")
    if bandwidth is None:
        lines.append(f"{moved}. The course's table has no bandwidth for this {device}, so its roof is flat at the "
                     "peak.")
    elif datasheet:
        lines.append(f"{moved}: {last / bandwidth:.0%} of the datasheet bandwidth, {bandwidth:,.0f} GB/s, which "
                     "draws the slope.")
    elif cache_bytes is None:
        lines.append(f"{moved}; the slope is drawn through that last rate, so that point sits on it by construction. "
                     "The OS reports no cache size here, so whether those arrays outgrow the caches is not known.")
    elif ws[sides[-1]] > cache_bytes:
        cache = f"{_mib(cache_bytes)} MiB cache"
        fits = [side for side in sides if ws[side] <= cache_bytes]
        above = [side for side in sides[:-1] if rate[side] >= ABOVE * last]
        text = (f"{moved}. The last ones' working set, {arrays} arrays of {_mib(each[sides[-1]])} MiB = "
                f"{_mib(ws[sides[-1]])} MiB, exceeds the {cache} the OS reports, so that rate is main memory's, and "
                "the slope is drawn through it (that point sits on it by construction).")
        in_cache = [side for side in above if side in fits]
        beyond = [side for side in above if side not in fits]
        if in_cache:
            plural = "s" if len(in_cache) > 1 else ""
            text += (f" Arrays whose working set fits the cache can run above it, as the "
                     f"{_and([_mib(each[s]) for s in in_cache])} MiB ones did here (working set{plural} "
                     f"{_and([_mib(ws[s]) for s in in_cache])} MiB; at least {ABOVE}x the last rate).")
        slower = [side for side in fits if side not in above and rate[side] < last]
        level = [side for side in fits if side not in above and side not in slower]
        if level:
            text += (f" The {_and([_mib(each[s]) for s in level])} MiB ones, whose working set fits the cache "
                     f"({_and([_mib(ws[s]) for s in level])} MiB), ran within {ABOVE}x that rate here.")
        if slower:
            text += (f" The {_and([_mib(each[s]) for s in slower])} MiB ones ran slower than that although their "
                     f"working set fits the cache ({_and([f'{rate[s]:,.1f} GB/s' for s in slower])}): a call on them "
                     f"took {_and([_duration(ws[s] / (rate[s] * 1e9)) for s in slower])}, and on arrays that small "
                     "the fixed cost of each call (dispatching the op, starting threads) can outweigh the faster "
                     "cache.")
        if not fits:
            text += " No size's working set fits the cache here."
        if beyond:
            text += (f" The {_and([_mib(each[s]) for s in beyond])} MiB ones ran above it too although their working "
                     f"set ({_and([_mib(ws[s]) for s in beyond])} MiB) exceeds the cache: part of it stays cached.")
        lines.append(text)
    else:
        lines.append(f"{moved}: even the last ones' working set, {arrays} arrays = {_mib(ws[sides[-1]])} MiB, fits "
                     f"the {_mib(cache_bytes)} MiB cache the OS reports, so the slope drawn through that rate may be "
                     "above what main memory allows.")
    intensity = matmul_n / 6
    bend = peak / bandwidth if bandwidth else None
    if bend is not None and intensity <= bend:
        lines.append(f"The n = {matmul_n} matmul does about {intensity:,.0f} FLOPs per byte, left of where the roofs "
                     f"meet ({bend:,.0f} FLOPs per byte): at this size memory, not arithmetic, bounds it too.")
        return lines
    where = f", right of where the roofs meet ({bend:,.0f} FLOPs per byte)" if bend is not None else ""
    share = matmul_gflops / peak
    lines.append(f"The n = {matmul_n} matmul does about {intensity:,.0f} FLOPs per byte{where}: compute-bound, so "
                 "the arithmetic units, not memory, set its limit." + (
                     f" Compute-bound does not mean near the peak: it reached {share:.0%} of it, as the work around "
                     "the arithmetic (moving blocks between cache levels, threads waiting for each other) takes its "
                     "share." if share < 0.8 else f" It reached {share:.0%} of the peak."))
    return lines


# --------------------------------------------------------------------------- tables and the closing note
def speedup_table(epoch_s: Mapping[str, float]) -> str:
    """The learner's own epoch times and ratio beside the published speed-ups, each with its source.

    Example:
        >>> print(speedup_table({"CPU": 3.1}).splitlines()[1])  # doctest: +NORMALIZE_WHITESPACE
        Embedding + LSTM(64), SMS spam, 1 epoch  3.1 s  not measured here  -  measured here (median step x steps)
    """
    cpu = epoch_s.get("CPU")
    gpu = epoch_s.get("GPU")
    rows = [("figure", "CPU", "GPU", "GPU speed-up", "source, and what differs")]
    rows.append(("Embedding + LSTM(64), SMS spam, 1 epoch", f"{cpu:.3g} s" if cpu else "not measured here",
                 f"{gpu:.3g} s" if gpu else "not measured here", f"{cpu / gpu:.2f}x" if cpu and gpu else "-",
                 "measured here (median step x steps)"))
    for p in PUBLISHED_SPEEDUPS:
        rows.append((p["what"], f"{p['cpu_s']} s" if p["cpu_s"] else "-", f"{p['gpu_s']} s" if p["gpu_s"] else "-",
                     p["speedup"], f"{QUOTED}: {p['differs']}"))
    return text_table(rows)


def published_sources() -> list[str]:
    """One line per published speed-up: where it comes from, for the page under the table.

    Example:
        >>> published_sources()[0].split(" (")[0]
        "13.76x: the blog post's author's own run"
    """
    return [f"{p['speedup']}: {p['source']}" for p in PUBLISHED_SPEEDUPS]


def closing_note(r: Mapping[str, Any]) -> list[str]:
    """The numbers this run measured, one line each, from the notebook's results.

    A matmul rate is headlined only from rows whose spread (``r["matmul_spread"]``, IQR / median) is
    at most ``r["noise_limit"]`` (default ``BUSY_SPREAD``); without spreads every row counts. The
    copy times are not read when a spread (``numpy_input_spread``, ``device_input_spread`` in
    ``r["copy_s"]``) is above it, and the asynchronous times are called rough when
    ``r["synced_spread"]`` is.

    Example:
        >>> closing_note({"dispatch_only_s": 0.002, "synced_s": 1.0})[0]
        'Asynchronous execution: the naive timer read 2 ms for work that took 1,000 ms (500x too short).'
    """
    lines = []
    limit = r.get("noise_limit", BUSY_SPREAD)
    if "dispatch_only_s" in r and "synced_s" in r:
        d, s = r["dispatch_only_s"], r["synced_s"]
        verdict = f"{s / d:,.0f}x too short" if s / d >= TOO_SHORT else f"only {s / d:,.2f}x shorter"
        noisy = not r.get("synced_spread", 0.0) <= limit
        lines.append(f"Asynchronous execution: the naive timer read {d * 1e3:.3g} ms for work that took "
                     f"{s * 1e3:,.0f} ms ({verdict})" + (f"; rough: its repeats spread {r['synced_spread']:.0%}, "
                                                          f"above {limit:.0%}." if noisy else "."))
    if "first_call_s" in r and "steady_call_s" in r:
        lines.append(f"First call: {r['first_call_s'] * 1e3:,.0f} ms against {r['steady_call_s'] * 1e3:.3g} ms "
                     f"once warm ({r['first_call_s'] / r['steady_call_s']:,.0f}x).")
    if "copy_s" in r:
        c = r["copy_s"]
        spreads = [c.get("numpy_input_spread", 0.0), c.get("device_input_spread", 0.0)]
        if all(x <= limit for x in spreads):
            lines.append(f"Host-to-device copies: {c['numpy_input'] * 1e3:.3g} ms with a NumPy input against "
                         f"{c['device_input'] * 1e3:.3g} ms with a tensor already on {c['device']}.")
        else:
            lines.append(f"Host-to-device copies: not read, a spread above {limit:.0%} "
                         f"({', '.join(f'{x:.0%}' for x in spreads)}); rerun that cell.")
    for device, by_size in r.get("matmul_gflops", {}).items():
        spreads = r.get("matmul_spread", {}).get(device)
        steady = steady_rates(by_size, spreads, limit)
        if not steady:
            lines.append(f"Matmul on {device} (TensorFlow): no size was steady enough to headline (every spread above "
                         f"{limit:.0%}).")
            continue
        n, g = max(((int(k), v) for k, v in steady.items()), key=lambda kv: kv[1])
        peak = r.get("peak_gflops", {}).get(device)
        share = f", {g / peak:.0%} of its peak {peak:,.0f}" if peak else ""
        if len(steady) < MIN_STEADY_ROWS:
            lines.append(f"Matmul on {device} (TensorFlow): only n = {n} was steady, {g:,.0f} GFLOP/s{share}: too few "
                         f"steady rows (under {MIN_STEADY_ROWS}) to read a best size.")
            continue
        note = f", among the sizes with a spread within {limit:.0%}" if len(steady) < len(by_size) else ""
        lines.append(f"Matmul on {device} (TensorFlow): at best {g:,.0f} GFLOP/s (n = {n}){share}{note}.")
    for device, conv in r.get("conv_gflops", {}).items():
        lines.append(f"Conv2D on {device}: forward {conv['forward']:,.0f} GFLOP/s, forward + backward "
                     f"{conv['fwd_bwd']:,.0f} GFLOP/s.")
    epochs = r.get("text_epoch_s", {})
    if epochs:
        times = ", ".join(f"{d} {s:.3g} s" for d, s in epochs.items())
        if "GPU" in epochs and "CPU" in epochs:
            ratio = epochs["CPU"] / epochs["GPU"]
            how = "faster" if ratio > 1 else "as fast" if ratio == 1 else "slower"
            ratio_text = (f": the GPU ran it {ratio:.2f}x as fast as the CPU ({how}), against 13.76x published in a "
                          "blog post")
        else:
            ratio_text = "; a blog post publishes 13.76x (198.2 s vs 14.4 s) for another model on Colab"
        lines.append(f"Text model, one epoch: {times}{ratio_text}.")
    if "resnet50_images_per_s" in r:
        rate, batch = r["resnet50_images_per_s"], r["resnet50_batch"]
        t4 = NVIDIA_T4_RESNET50["fp32"].get(batch)
        vs = f"; a T4 measured by NVIDIA: {t4} images/s at batch {batch}" if t4 else ""
        lines.append(f"ResNet-50 inference on {r.get('resnet50_device', 'this device')}: {rate:.3g} images/s{vs}.")
    lines += _compilation_lines(r, limit)
    return lines


def _compilation_lines(r: Mapping[str, Any], limit: float) -> list[str]:
    """closing_note's lines for the compilation section: figures only, a warm time whose spread is above `limit`
    marked as noisy."""
    lines = []
    if "compile_first_s" in r and "compile_steady_s" in r:
        spreads = r.get("compile_spread", {})
        parts = [f"{m} {_duration(r['compile_first_s'][m])} then {_duration(r['compile_steady_s'][m])} per warm step"
                 + ("" if spreads.get(m, 0.0) <= limit else " (noisy)") for m in MODES]
        lines.append(f"Training step, first call then warm: {'; '.join(parts)}.")
    if "trace_counts" in r and "retrace_calls" in r:
        counts = r["trace_counts"]
        listed = "; ".join(f"{label}: {n}" for label, n in counts.items())
        lines.append(f"Retracing, traces in {r['retrace_calls']} calls: {listed}.")
    if "launch_s" in r and "launch_ops" in r:
        spreads = r.get("launch_spread", {})
        steady = [f"{m} {r['launch_s'][m] / r['launch_ops'] * 1e6:,.3g} µs" for m in MODES
                  if spreads.get(m, 0.0) <= limit]
        lines.append(f"Launch overhead, per add of {r['launch_ops']} chained: " + (", ".join(steady) if steady else
                                                                                  "every row too noisy to read") + ".")
    return lines


# --------------------------------------------------------------------------- compilation and launch overhead
# Published by NVIDIA: Alan Gray, "Getting Started with CUDA Graphs", NVIDIA Technical Blog (2019), measured on a
# Tesla V100 with CUDA 10.1: a short kernel that runs for 2.9 µs, launched 20 times per step.
GPU_LAUNCH_SOURCE = ("Alan Gray, \"Getting Started with CUDA Graphs\", NVIDIA Technical Blog, "
                     "https://developer.nvidia.com/blog/cuda-graphs/")
GPU_LAUNCH_US = {"kernel": 2.9, "waiting after each launch": 9.6, "launches back to back": 3.8,
                 "one CUDA graph for all launches": 3.4}


def _check_seconds(name: str, values: Mapping[Any, float]) -> None:
    if not values or any(not (isinstance(s, (int, float)) and math.isfinite(s) and s > 0) for s in values.values()):
        raise ValueError(f"{name}={dict(values)!r}: use positive, finite seconds.")


def _check_limit(limit: Any) -> None:
    if isinstance(limit, bool) or not (isinstance(limit, (int, float)) and math.isfinite(limit) and limit > 0):
        raise ValueError(f"limit={limit!r}: use a positive share, such as 0.5 for 50%.")


def payoff_steps(first_graph: float, steady_graph: float, first_xla: float, steady_xla: float) -> int | None:
    """Steps (the first call included) after which XLA's total time is at most the plain graph's; None: never.

    After n steps a mode has spent ``first + (n - 1) * steady``. XLA is ahead from the first step when
    its first call is not slower; it never catches up when its steady step is not faster. Otherwise
    n is the smallest whole number with ``(n - 1) * (steady_graph - steady_xla) >= first_xla - first_graph``.

    Example:
        >>> payoff_steps(first_graph=0.25, steady_graph=0.125, first_xla=1.0, steady_xla=0.0625)
        13
        >>> payoff_steps(0.05, 0.001, 0.3, 0.0012) is None
        True
    """
    _check_seconds("times", {"first_graph": first_graph, "steady_graph": steady_graph, "first_xla": first_xla,
                             "steady_xla": steady_xla})
    if first_xla <= first_graph:
        return 1
    if steady_xla >= steady_graph:
        return None
    return 1 + math.ceil((first_xla - first_graph) / (steady_graph - steady_xla))


def _versus(a: float, a_spread: float, b: float, b_spread: float) -> tuple[str, float]:
    """'faster', 'slower' or 'within noise' for a against b, and the noise band (the larger IQR of the two)."""
    band = max(a * a_spread, b * b_spread)
    if abs(a - b) <= band:
        return "within noise", band
    return ("faster" if a < b else "slower"), band


MODES = ("eager", "tf.function", "tf.function + XLA")
XLA = MODES[2]


def _modes_given(*dicts: Mapping[str, Any]) -> tuple[str, ...]:
    """The modes the dicts hold: all of ``MODES``, or all but XLA's (skipped where XLA cannot compile)."""
    keys = [set(d) for d in dicts]
    for modes in (MODES, MODES[:2]):
        if all(k == set(modes) for k in keys):
            return modes
    raise ValueError(f"need exactly the modes {list(MODES)}, or {list(MODES[:2])} when XLA's row was skipped.")


def xla_skip(hw: Any) -> dict[str, str]:
    """``{XLA: why}`` when XLA cannot compile for this run's first GPU with this TensorFlow, else ``{}``.

    The rule is :func:`helpers.env.xla_compile_problem` (compute capability 12.x with a build whose CUDA is
    older than 12.8): there XLA's compiler stops the whole process with an LLVM error
    (tensorflow/tensorflow#111958), which no ``try`` can catch, so the row is skipped before it runs. Prints
    the one sentence that says so.

    Args:
        hw: the report ``helpers.setup`` returned (its ``gpus`` and ``build``).

    Example:
        >>> xla_skip(type("Report", (), {"gpus": [], "build": {}})())
        {}
    """
    from helpers import env

    gpus = getattr(hw, "gpus", None)
    if gpus is None or not hasattr(hw, "build"):
        raise ValueError(f"hw={hw!r}: pass the report helpers.setup returned.")
    problem = env.xla_compile_problem(gpus[0].compute_capability, hw.build) if gpus else None
    if not problem:
        return {}
    print(f"{problem} XLA's row is skipped on this GPU.")
    return {XLA: problem}


# What XLA's jit raises when it cannot compile for the device (TensorFlow's XlaCompileOp, tensorflow/compiler/
# jit/kernels/xla_ops.cc, reports XLA's status as the op's error): UNAVAILABLE "No PTX compilation provider is
# available" (no ptxas / nvJitLink), NOT_FOUND "ptxas not found", INTERNAL (ptxas or the driver refusing the
# PTX), UNKNOWN. An LLVM fatal error does not raise: it ends the process, hence xla_skip first.
XLA_COMPILE_ERRORS = ("InternalError", "UnknownError", "UnavailableError", "NotFoundError")


class skip_xla_on_compile_error:  # noqa: N801 - used as a statement: `with skip_xla_on_compile_error(...)`
    """Context manager: on XLA's row, a compile error skips the row (recorded in `skipped`, one sentence printed).

    Only XLA's row and only the errors of ``XLA_COMPILE_ERRORS`` are caught; anything else still raises.

    Example:
        >>> skipped = {}
        >>> with skip_xla_on_compile_error("tf.function", skipped):
        ...     pass
        >>> skipped
        {}
    """

    def __init__(self, mode: str, skipped: dict[str, str]) -> None:
        if mode not in MODES:
            raise ValueError(f"mode={mode!r}: use one of {list(MODES)}.")
        if not isinstance(skipped, dict):
            raise ValueError(f"skipped={skipped!r}: pass the dict xla_skip returned.")
        self.mode, self.skipped = mode, skipped

    def __enter__(self) -> skip_xla_on_compile_error:
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> bool:
        if error is None or self.mode != XLA or kind.__name__ not in XLA_COMPILE_ERRORS:
            return False
        first = (str(getattr(error, "message", "") or error).strip().splitlines() or [kind.__name__])[0][:200]
        self.skipped[XLA] = f"XLA could not compile for this device ({kind.__name__}: {first})"
        print(f"{self.skipped[XLA]}. XLA's row is skipped.")
        return True


def compile_reading(first: Mapping[str, float], steady: Mapping[str, float], spreads: Mapping[str, float],
                    limit: float = BUSY_SPREAD) -> list[str]:
    """The reading of the eager / tf.function / XLA training step: first calls in steady steps, then the comparisons.

    Two steady times differ only when their gap is larger than the larger IQR of the two (IQR =
    spread x median); otherwise they are "within noise". A row whose spread is above `limit` (or
    NaN) is not compared at all. XLA's payoff is :func:`payoff_steps` against the plain graph.

    Args:
        first: ``{mode: seconds of the first call}`` for the modes in ``MODES``.
        steady: ``{mode: median seconds of a warm step}``.
        spreads: ``{mode: IQR / median of the warm steps}``.
        limit: the largest spread still called steady.

    Example:
        >>> compile_reading({"eager": 0.04, "tf.function": 0.056, "tf.function + XLA": 0.218},
        ...                 {"eager": 0.0025, "tf.function": 0.00054, "tf.function + XLA": 0.000455},
        ...                 {"eager": 0.05, "tf.function": 0.08, "tf.function + XLA": 0.08})[2][:62]
        'Reading: XLA saved 85 µs per step against the plain graph (16%'
    """
    modes = _modes_given(first, steady, spreads)  # XLA's row may be missing: skipped where it cannot compile
    _check_seconds("first", first)
    _check_seconds("steady", steady)
    _check_limit(limit)
    lines = ["Rule: a first call costs 'N steady steps' with N = first call / median warm step; two steps differ "
             "only when their gap exceeds the larger IQR of the two, else they are within noise."]
    noisy = [m for m in modes if not spreads[m] <= limit]
    lines[0] += "".join(f" {mode}: first call {_duration(first[mode])} = {first[mode] / steady[mode]:,.0f} steady "
                        f"steps of {_duration(steady[mode])}." if mode not in noisy else
                        f" {mode}: first call {_duration(first[mode])}, not counted in warm steps (their spread, "
                        f"{spreads[mode]:.0%}, is above {limit:.0%})." for mode in modes)
    (e, g), (se, sg) = ([steady[m] for m in MODES[:2]], [spreads[m] for m in MODES[:2]])
    if "eager" in noisy or "tf.function" in noisy:
        lines.append(f"Reading: eager against tf.function not read: a spread is above {limit:.0%} "
                     f"({_and([f'{m} {spreads[m]:.0%}' for m in noisy])}); rerun the cell.")
    else:
        how, band = _versus(g, sg, e, se)
        lines.append(f"Reading: tf.function ran the warm step in {_duration(g)} against {_duration(e)} eager: " + (
            f"{e / g:,.2f}x as fast; the graph runs the step's ops without Python between them." if how == "faster"
            else f"within noise (gap {_duration(abs(e - g))}, larger IQR {_duration(band)})." if how == "within noise"
            else f"slower ({g / e:,.2f}x the time): here calling the graph cost more than Python's op-by-op loop."))
    if XLA not in modes:
        lines.append("Reading: XLA's row was skipped (see above), so no XLA comparison on this device.")
        return lines
    if "tf.function" in noisy or "tf.function + XLA" in noisy:
        lines.append(f"Reading: XLA against the plain graph not read: a spread is above {limit:.0%}; rerun the cell.")
        return lines
    x, sx = steady[XLA], spreads[XLA]
    how, band = _versus(x, sx, g, sg)
    extra = first["tf.function + XLA"] - first["tf.function"]
    if how == "within noise":
        lines.append(f"Reading: XLA's warm step ({_duration(x)}) and the plain graph's ({_duration(g)}) are within "
                     f"noise (gap {_duration(abs(g - x))}, larger IQR {_duration(band)}): no saving to earn back its "
                     f"first call, which took {_duration(first['tf.function + XLA'])}.")
    elif how == "slower":
        lines.append(f"Reading: XLA's warm step was slower than the plain graph's ({_duration(x)} against "
                     f"{_duration(g)}): for this model on this device its compilation never pays off.")
    else:
        n = payoff_steps(first["tf.function"], g, first["tf.function + XLA"], x)
        lines.append(f"Reading: XLA saved {_duration(g - x)} per step against the plain graph ({(g - x) / g:.0%} of "
                     f"its {_duration(g)}), more than the larger IQR ({_duration(band)}). "
                     + (f"Its first call cost {_duration(extra)} more, earned back after {n:,} steps (first call "
                        "included) of this model." if n and n > 1 else
                        "Its first call was no slower, so it is ahead from the first step."))
    return lines


def spe_reading(step_s: Mapping[int, float], spreads: Mapping[int, float], limit: float = BUSY_SPREAD) -> str:
    """What ``steps_per_execution`` saved per step: the largest value against 1, or "within noise".

    The saving counts only when it exceeds the larger IQR (spread x median) of the two rows; a row
    whose spread is above `limit` (or NaN) is not read.

    Args:
        step_s: ``{steps_per_execution: median seconds per training step}``; must hold 1.
        spreads: ``{steps_per_execution: IQR / median}`` of the same rows.

    Example:
        >>> spe_reading({1: 0.00077, 8: 0.00049, 32: 0.0004}, {1: 0.1, 8: 0.1, 32: 0.1})[:60]
        'Reading: steps_per_execution=32 saved 370 µs per step agains'
    """
    steps = {int(k): v for k, v in step_s.items()}
    spread = {int(k): v for k, v in spreads.items()}
    if 1 not in steps or len(steps) < 2 or set(spread) != set(steps):
        raise ValueError(f"step_s={dict(step_s)!r}: give 1 and at least one larger steps_per_execution, with a "
                         "spread for each.")
    _check_seconds("step_s", steps)
    _check_limit(limit)
    k = max(steps)
    one, many = steps[1], steps[k]
    noisy = [f"{n}: {spread[n]:.0%}" for n in (1, k) if not spread[n] <= limit]
    if noisy:
        return (f"Reading: steps_per_execution=1 against {k} not read: a spread is above {limit:.0%} "
                f"({', '.join(noisy)}); rerun the cell.")
    how, band = _versus(many, spread[k], one, spread[1])
    if how == "within noise":
        return (f"Reading: steps_per_execution={k} took {_duration(many)} per step against {_duration(one)} at 1: "
                f"within noise (gap {_duration(abs(one - many))}, larger IQR {_duration(band)}), so the per-step "
                "overhead it removes is too small to see beside this step's own time.")
    if how == "slower":
        return (f"Reading: steps_per_execution={k} took {_duration(many)} per step against {_duration(one)} at 1: "
                f"slower by more than the larger IQR ({_duration(band)}); here running {k} steps in one call saved "
                "nothing.")
    return (f"Reading: steps_per_execution={k} saved {_duration(one - many)} per step against 1 "
            f"({_duration(one)} -> {_duration(many)}), {(one - many) / one:.0%} of the step, more than the larger IQR "
            f"({_duration(band)}): Python's loop, the callbacks and the call into the graph ran once per {k} steps "
            "instead of every step.")


def auto_jit_reading(resolved: bool, device_types: Sequence[str]) -> str:
    """What Keras' ``jit_compile="auto"`` resolved to in this kernel, against its rule for the devices listed.

    Keras 3 (``Trainer._resolve_auto_jit_compile``): XLA off when TensorFlow lists only CPUs; with
    another device, off under a ``tf.distribute`` strategy, else on when every layer supports it
    (``model_supports_jit``).

    Example:
        >>> auto_jit_reading(False, ["CPU"])[:57]
        'Reading: jit_compile="auto" resolved to False (XLA off): '
    """
    if not isinstance(resolved, bool):
        raise ValueError(f"resolved={resolved!r}: pass the model's jit_compile after compile (True or False).")
    if not device_types or any(not isinstance(d, str) for d in device_types):
        raise ValueError(f"device_types={device_types!r}: pass the types TensorFlow lists, such as ['CPU', 'GPU'].")
    accelerator = [d for d in device_types if d != "CPU"]
    listed = ", ".join(sorted(set(device_types)))
    head = f"Reading: jit_compile=\"auto\" resolved to {resolved} (XLA {'on' if resolved else 'off'}): "
    if not accelerator and not resolved:
        return (head + f"TensorFlow lists only {listed} devices, and Keras turns XLA off on a CPU-only machine. A "
                "default compile() on this machine times plain graphs; the same notebook on a Colab GPU would time "
                "XLA.")
    if accelerator and resolved:
        return (head + f"TensorFlow lists {listed}, so Keras turns XLA on (every layer here supports it). A default "
                "compile() on this machine times XLA; on a laptop without a GPU the same code times plain graphs.")
    if accelerator:
        return (head + f"TensorFlow lists {listed}, but a layer without XLA support, a tf.distribute strategy or op "
                "determinism kept XLA off.")
    return (head + f"TensorFlow lists only {listed} devices, yet Keras chose XLA: this kernel's Keras does not follow "
            "its stock rule (the course's tests patch it to take a GPU's compile path on a CPU).")


def launch_reading(chain_s: Mapping[str, float], spreads: Mapping[str, float], ops: int,
                   limit: float = BUSY_SPREAD) -> list[str]:
    """Per-op cost of a chain of `ops` tiny adds run op by op (eager), as one graph, and fused by XLA.

    The per-op cost is the chain's time / `ops`. XLA is compared with the graph with the same
    noise rule as :func:`compile_reading` (the gap against the larger IQR); a noisy row is not read.

    Args:
        chain_s: ``{"eager": s, "tf.function": s, "tf.function + XLA": s}``, median seconds of the whole chain.
        spreads: IQR / median of each row.

    Example:
        >>> launch_reading({"eager": 3.15e-3, "tf.function": 1.82e-4, "tf.function + XLA": 1.03e-4},
        ...                {"eager": 0.01, "tf.function": 0.15, "tf.function + XLA": 0.1}, 200)[0][:57]
        'Reading: one tiny add cost 15.8 µs eager and 0.91 µs in a'
    """
    modes = _modes_given(chain_s, spreads)  # XLA's row may be missing: skipped where it cannot compile
    if isinstance(ops, bool) or not isinstance(ops, int) or ops < 2:
        raise ValueError(f"ops={ops!r}: use the number of chained ops, an integer >= 2.")
    _check_seconds("chain_s", chain_s)
    _check_limit(limit)
    per = {m: chain_s[m] / ops * 1e6 for m in modes}
    noisy = [m for m in modes if not spreads[m] <= limit]
    where = {"eager": "eager", "tf.function": "in a graph"}
    read = [f"{per[m]:,.3g} µs {where[m]}" for m in where if m not in noisy]
    left = [m for m in where if m in noisy]
    head = (f"Reading: one tiny add cost {_and(read)} (chain time / {ops}, measured on this device)" if read else
            f"Reading: the per-add cost is not read (chain time / {ops})")
    if left:
        head += (f"; {_and(left)} not read: {'its' if len(left) == 1 else 'their'} spread is above {limit:.0%}, "
                 "rerun the cell.")
    else:
        head += (f": each op launched on its own costs its dispatch, {per['eager'] / per['tf.function']:,.0f}x more "
                 "when Python hands TensorFlow one op at a time.")
    lines = [head]
    if XLA not in modes:
        lines.append("XLA's row was skipped (see above): no fused chain timed on this device.")
        return lines
    if {"tf.function", "tf.function + XLA"} & set(noisy):
        lines.append(f"XLA against the graph not read: a spread is above {limit:.0%}; rerun the cell.")
        return lines
    x, g = chain_s["tf.function + XLA"], chain_s["tf.function"]
    how, band = _versus(x, spreads["tf.function + XLA"], g, spreads["tf.function"])
    lines.append(f"XLA fused the {ops} adds into one kernel: {_duration(x)} for the chain against {_duration(g)} as "
                 f"{ops} graph ops: " + ("within noise (gap smaller than the larger IQR): on this device a graph op "
                                         "costs little more than the arithmetic." if how == "within noise" else
                                         f"{g / x:,.1f}x as fast: one launch and one pass over the data instead of "
                                         f"{ops}." if how == "faster" else
                                         "slower here: the fused kernel did not beat the graph on this device."))
    return lines
