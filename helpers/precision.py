"""Topic module of notebook 06 · Mixed precision: the plumbing around the lesson.

The lesson itself (``set_global_policy``, ``LossScaleOptimizer``, ``scale_loss``, the casts to float16)
stays on the notebook's page. This module holds what is too long for a cell:

* :data:`TF32`, the one format NumPy has no ``finfo`` for (Tensor Cores' float32 mode, compute
  capability 8.0 and later), and :func:`plot_spacing`, the gap between neighbouring numbers of each
  format (section "Three number formats");
* :func:`plot_gradient_magnitudes`, where real gradients fall against float16's limits ("Underflow");
* :func:`step_timer`, a Keras callback that times training steps and keeps the median ("Speed");
* :func:`native_stderr`, which catches what TensorFlow's C++ code says the first time it meets float16
  (with oneDNN on, on a CPU where oneDNN cannot compute float16: that it falls back to Eigen's kernels), so
  the notebook can show it as a reading instead of red text; :func:`onednn_state` and
  :func:`onednn_float16` say whether that note is due, by TensorFlow's own rules, and
  :func:`fp16_note_reading` words the result;
* :func:`step_timer`'s time box, which stops a slow policy's epoch after a budget of seconds so that its
  epoch time is extrapolated from the steps measured ("Speed");
* :func:`speed_reading` and :func:`gpu_speed_reading`, the sentences that explain the measured speed of
  each policy from the CPU's instruction-set flags (read by :func:`helpers.cpu.flags`) and whether oneDNN
  is on, or from the GPU's compute capability.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from helpers.params import POLICIES  # ("float32", "mixed_float16", "mixed_bfloat16")

# TF32 is not a storage type: Tensor Cores of compute capability 8.0+ read float32 inputs of matmuls
# and convolutions with float32's 8-bit exponent but only float16's 10 mantissa bits, and accumulate in
# float32 (NVIDIA, "TensorFloat-32 in the A100 GPU Accelerates AI Training, HPC up to 20x",
# https://blogs.nvidia.com/blog/tensorfloat-32-precision-format/). Its range is float32's; its precision
# float16's. 19 bits: 1 sign + 8 exponent + 10 mantissa.
TF32_SOURCE = "https://blogs.nvidia.com/blog/tensorfloat-32-precision-format/"
TF32 = {"bits": 19, "nexp": 8, "nmant": 10, "max": float(np.finfo(np.float32).max),
        "smallest_normal": 2.0**-126, "eps": 2.0**-10}

# Instruction-set flags (as /proc/cpuinfo spells them) that give a CPU arithmetic in each format.
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
FP16_FLAGS = ("avx512_fp16", "amx_fp16")

# TensorFlow's rules for oneDNN on x86 Linux (tensorflow/core/util/port.cc, IsMklEnabled): the environment
# variable TF_ENABLE_ONEDNN_OPTS decides ("0"/"false" off, "1"/"true" on); unset, oneDNN is on only where the
# CPU has one of these features (on Windows it is off by default).
ONEDNN_DEFAULT_FLAGS = ("avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16")
# tensorflow/core/util/util.cc, IsDataTypeSupportedByOneDNNOnThisCPU(DT_HALF): oneDNN computes float16 only with
# AVX512BW plus AVX512-FP16 or AMX-FP16, or with AVX-NE-CONVERT. Elsewhere, with oneDNN on, TensorFlow writes
# its note once per process ("oneDNN supports DT_HALF only on platforms with AVX-512. Falling back to the default
# Eigen-based implementation", tensorflow/core/graph/mkl_graph_util.h calls DataTypeUnsupportedWarning).
ONEDNN_FP16_FLAGS = ("avx512_fp16", "amx_fp16")


def _dtypes() -> dict[str, Any]:
    import ml_dtypes

    return {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def spacing(values: Iterable[float], fmt: str) -> np.ndarray:
    """The gap between each value and the next larger number representable in `fmt`.

    `fmt` is ``"float32"``, ``"float16"``, ``"bfloat16"`` or ``"tf32"``. Values outside the format's
    range give NaN (they overflow to inf).

    Example:
        >>> spacing([1.0], "float16").tolist(), spacing([1.0], "bfloat16").tolist()
        ([0.0009765625], [0.0078125])
    """
    x = np.asarray(list(values), dtype=np.float64)
    if fmt == "tf32":
        gaps = spacing(x, "float32") * 2.0**13  # 23 - 10 mantissa bits dropped
        return np.where(np.abs(x) < TF32["smallest_normal"], np.nan, gaps)
    dtypes = _dtypes()
    if fmt not in dtypes:
        raise ValueError(f"fmt={fmt!r}: use one of {', '.join([*dtypes, 'tf32'])}.")
    dtype = dtypes[fmt]
    with np.errstate(over="ignore", invalid="ignore"):
        cast = x.astype(dtype)
        gaps = np.spacing(np.abs(cast)).astype(np.float64)
    return np.where(np.isfinite(cast.astype(np.float64)), gaps, np.nan)


def plot_spacing(ax: Any = None) -> Any:
    """Log-log plot of :func:`spacing` for float32, TF32, bfloat16 and float16, from 1e-45 to 1e39.

    Example:
        >>> ax = plot_spacing()
        >>> len(ax.lines) >= 4
        True
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    x = np.logspace(-46, 38.5, 2000)
    styles = {"float32": "-", "tf32": ":", "bfloat16": "--", "float16": "-"}
    for fmt, style in styles.items():
        gaps = spacing(x, fmt)
        keep = (gaps > 0) & np.isfinite(gaps) & (x >= np.nanmin(np.where(gaps > 0, gaps, np.nan)))
        ax.plot(x[keep], gaps[keep], style, label=fmt, linewidth=1.6)
    ax.axvline(65504, color="grey", linewidth=0.8)
    ax.text(65504, 1e-40, " float16 max\n 65504", fontsize=8, color="grey")
    ax.axvline(2.0**-24, color="grey", linewidth=0.8)
    ax.text(2.0**-24, 1e10, "float16 smallest\nsubnormal 6e-8 ", fontsize=8, color="grey", ha="right")
    ax.set(xscale="log", yscale="log", xlabel="value", ylabel="gap to the next number",
           title="Gap to the next representable number (relative gap: epsilon)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    return ax


def plot_gradient_magnitudes(gradients: np.ndarray, scale: float, ax: Any = None) -> Any:
    """Histogram of |gradient| (non-zero ones), unscaled and multiplied by `scale`, against float16's limits.

    Example:
        >>> ax = plot_gradient_magnitudes(np.array([1e-9, 1e-6, 1e-3]), 2.0**15)
        >>> len(ax.patches) > 0
        True
    """
    import matplotlib.pyplot as plt

    if not scale > 0:
        raise ValueError(f"scale={scale!r}: use a positive loss scale such as 2**15.")
    g = np.abs(np.asarray(gradients, dtype=np.float64).ravel())
    g = g[g > 0]
    if g.size == 0:
        raise ValueError("gradients holds no non-zero value to plot.")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.5))
    edges = np.arange(-40, 20.5, 0.5)
    ax.hist(np.log2(g), bins=edges, alpha=0.6, label="|gradient| in float32")
    ax.hist(np.log2(g * scale), bins=edges, alpha=0.6, label=f"|gradient| x {scale:g} (loss scale)")
    limits = {"max": np.log2(65504.0), "smallest normal": -14, "smallest subnormal": -24,
              "rounds to 0 below": -25}
    for (name, at), colour in zip(limits.items(), ("C3", "C2", "C1", "k"), strict=True):
        ax.axvline(at, color=colour, linestyle="--", linewidth=1, label=f"float16 {name} (2^{at:.3g})")
    ax.set(xlabel="log2 |gradient|", ylabel="count", title="Where the gradients fall in float16")
    ax.legend(fontsize=7, loc="upper left")
    return ax


@contextlib.contextmanager
def native_stderr() -> Iterator[SimpleNamespace]:
    """Catch what native code (TensorFlow's C++ log) writes to file descriptor 2 inside the block.

    The text is in ``.text`` after the block. TensorFlow logs some notes once per process, the first
    time it meets a case (such as the first float16 tensor), so a second run in one kernel catches nothing.

    Example:
        >>> with native_stderr() as caught:
        ...     _ = os.write(2, b"a note from C++\\n")
        >>> caught.text
        'a note from C++\\n'
    """
    caught = SimpleNamespace(text="")
    with contextlib.suppress(AttributeError, ValueError):
        sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield caught
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            caught.text = tmp.read().decode(errors="replace")


def step_timer(budget_s: float | None = None, min_steps: int = 3) -> Any:
    """A Keras callback that times each training step; ``.median`` is the median step in seconds.

    The clock reads at the end of each batch after waiting for the device (so asynchronous GPU work
    is inside the step it belongs to). The first step holds tracing and compilation: it is dropped.

    With `budget_s`, the callback is also a time box: once the timed steps (all but the first) add up to
    `budget_s` seconds and there are at least `min_steps` of them, it stops training (``stopped`` becomes
    True). ``.timed_s`` is the time of the timed steps, ``.steps`` the number of steps that ran.

    Example:
        >>> timer = step_timer(budget_s=5.0)
        >>> timer.times, timer.median, timer.stopped
        ([], None, False)
    """
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and 0 < budget_s < math.inf):
        raise ValueError(f"budget_s={budget_s!r}: use a positive number of seconds, or None for no time box.")
    if not (isinstance(min_steps, int) and min_steps >= 1):
        raise ValueError(f"min_steps={min_steps!r}: use an int >= 1 (timed steps before the box may close).")
    import keras

    from helpers import bench

    class StepTimer(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []
            self.budget_s, self.min_steps, self.stopped = budget_s, min_steps, False
            self._last: float | None = None

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            if self._last is None:
                bench.synchronize()
                self._last = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            bench.synchronize()
            now = time.perf_counter()
            self.times.append(now - self._last)
            self._last = now
            if (self.budget_s is not None and len(self.times) - 1 >= self.min_steps
                    and self.timed_s >= self.budget_s and not self._last_step(batch)):
                self.stopped = True  # steps were left: the epoch is cut short, and its time extrapolated
                self.model.stop_training = True

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self._epoch = epoch

        def _last_step(self, batch: int) -> bool:
            """Whether `batch` ends the whole fit: a box closing there cuts nothing, so it is not a stop."""
            params = getattr(self, "params", None) or {}
            steps, epochs = params.get("steps"), params.get("epochs") or 1
            return steps is not None and batch + 1 >= steps and getattr(self, "_epoch", 0) + 1 >= epochs

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            self._last = None  # the gap between epochs is not a step

        @property
        def steps(self) -> int:
            return len(self.times)

        @property
        def timed_s(self) -> float:
            return sum(self.times[1:])

        @property
        def median(self) -> float | None:
            timed = self.times[1:] or self.times
            return statistics.median(timed) if timed else None

    return StepTimer()


def onednn_state(flags: Iterable[str], environ: Mapping[str, str] | None = None,
                 system: str | None = None, machine: str | None = None) -> tuple[bool, str]:
    """Whether TensorFlow's oneDNN kernels are on for the CPU, by TensorFlow's own rule, and why.

    ``TF_ENABLE_ONEDNN_OPTS`` decides when set (``0``/``false`` off, ``1``/``true`` on). Unset, oneDNN is on
    for x86 Linux CPUs with one of :data:`ONEDNN_DEFAULT_FLAGS` and off elsewhere (tensorflow/core/util/port.cc).

    Example:
        >>> onednn_state({"avx2", "fma"}, {}, "Linux", "x86_64")
        (False, 'off: TF_ENABLE_ONEDNN_OPTS is unset and this CPU has none of avx512_vnni, avx512_bf16, \
avx_vnni, amx_tile, amx_int8, amx_bf16, the features for which TensorFlow turns oneDNN on by default')
    """
    flags = set(flags)
    environ = os.environ if environ is None else environ
    system = platform.system() if system is None else system
    machine = platform.machine() if machine is None else machine
    value = environ.get("TF_ENABLE_ONEDNN_OPTS")
    if value is not None and value.strip().lower() in ("0", "false"):
        return False, f"off: TF_ENABLE_ONEDNN_OPTS={value}"
    if value is not None and value.strip().lower() in ("1", "true"):
        return True, f"on: TF_ENABLE_ONEDNN_OPTS={value}"
    unset = "TF_ENABLE_ONEDNN_OPTS is unset" if value is None else f"TF_ENABLE_ONEDNN_OPTS={value!r} is not a boolean"
    if system != "Linux" or machine.lower() not in ("x86_64", "amd64"):
        return False, f"off: {unset} and TensorFlow turns oneDNN on by default only on x86 Linux"
    have = [f for f in ONEDNN_DEFAULT_FLAGS if f in flags]
    if have:
        return True, f"on: {unset} and this CPU has {', '.join(have)}, for which TensorFlow turns oneDNN on by default"
    return False, (f"off: {unset} and this CPU has none of {', '.join(ONEDNN_DEFAULT_FLAGS)}, the features for "
                   "which TensorFlow turns oneDNN on by default")


def onednn_float16(flags: Iterable[str]) -> bool:
    """Whether oneDNN computes float16 on a CPU with these flags (TensorFlow's test in tensorflow/core/util/util.cc).

    True with ``avx512bw`` plus ``avx512_fp16`` or ``amx_fp16``, or with ``avx_ne_convert``.

    Example:
        >>> onednn_float16({"avx512f", "avx512bw", "avx512_bf16"}), onednn_float16({"avx512bw", "amx_fp16"})
        (False, True)
    """
    flags = set(flags)
    return ("avx512bw" in flags and any(f in flags for f in ONEDNN_FP16_FLAGS)) or "avx_ne_convert" in flags


def fp16_note_reading(note: str | None, onednn_on: bool, onednn_why: str, float16_in_onednn: bool,
                      note_due: bool, on_gpu: bool = False) -> str:
    """Word what TensorFlow said (or did not say) at the first float16 tensor, from the conditions on the page.

    Args:
        note: TensorFlow's note, or None when it wrote none.
        onednn_on, onednn_why: :func:`onednn_state`.
        float16_in_onednn: :func:`onednn_float16`.
        note_due: the notebook's rule, ``onednn_on and not float16_in_onednn and not on_gpu``: the note is due,
            once per process.
        on_gpu: the float16 tensor went to a GPU, whose kernels are not oneDNN's.

    Example:
        >>> fp16_note_reading(None, False, "off: TF_ENABLE_ONEDNN_OPTS=0", False, False)[:60]
        'TensorFlow wrote no float16 note: oneDNN is off: TF_ENABLE_O'
    """
    if note_due != (bool(onednn_on) and not float16_in_onednn and not on_gpu):
        raise ValueError(f"note_due={note_due!r} contradicts onednn_on={onednn_on!r}, float16_in_onednn="
                         f"{float16_in_onednn!r} and on_gpu={on_gpu!r}: use note_due = onednn_on and not "
                         "float16_in_onednn and not on_gpu.")
    rule = ("TensorFlow writes it once per process, when oneDNN is on and oneDNN cannot compute float16 on this "
            "CPU (that needs avx512bw with avx512_fp16 or amx_fp16, or avx_ne_convert)")
    where = f"oneDNN is {onednn_why}" if onednn_why.startswith(("on", "off")) else f"oneDNN: {onednn_why}"
    fp16 = ("oneDNN can compute float16 on this CPU" if float16_in_onednn
            else "this CPU lacks those float16 instructions")
    if note:
        if note_due:
            return (f"TensorFlow's note: \"{note}\" {rule}: here {where}, and {fp16}. Its wording says AVX-512, "
                    "but the test looks for the float16 instructions, so a CPU with AVX-512 and without those gets "
                    "it too. Eigen's kernels then compute float16 by converting to float32 and back.")
        return f"TensorFlow's note: \"{note}\" ({rule}; here {where}, and {fp16}.)"
    if note_due:
        return (f"TensorFlow wrote no float16 note this time, though one is due here ({where}, and {fp16}): {rule}, "
                "and this kernel met a float16 tensor before (restart the kernel to see it).")
    if on_gpu:
        return (f"TensorFlow wrote no float16 note: the float16 tensor went to the GPU, whose kernels are not "
                f"oneDNN's, and the note concerns oneDNN on the CPU (here {where}).")
    if not onednn_on:
        return (f"TensorFlow wrote no float16 note: {where}. Its note concerns oneDNN only; with oneDNN off, "
                "TensorFlow's Eigen kernels compute float16 on any CPU, by converting to float32 and back where the "
                "CPU has no float16 arithmetic.")
    return f"TensorFlow wrote no float16 note: {where}, and {fp16}, so there is nothing to fall back from."


def memory_gap_reading(peak: Mapping[str, float], unscaled: float, close: float = 0.03) -> str:
    """Say whether the two 16-bit policies' peaks differ, and whether loss scaling accounts for the gap.

    Each peak is read as its share of float32's; two shares ``close`` apart or less (0.03: 3 points) are "within".

    Args:
        peak: peak bytes of one step per policy, with "float32", "mixed_float16" and "mixed_bfloat16".
        unscaled: peak bytes of the mixed_float16 step compiled with ``auto_scale_loss=False``.
        close: the largest difference of shares read as the same, between 0 and 1.

    Example:
        >>> memory_gap_reading({"float32": 100, "mixed_float16": 52, "mixed_bfloat16": 63}, 64)[:72]
        'The two 16-bit policies have the same activation bytes, yet their shares'
    """
    if not (isinstance(close, (int, float)) and 0 < close < 1):
        raise ValueError(f"close={close!r}: use a difference of shares between 0 and 1, such as 0.03 (3 points).")
    wanted = ("float32", "mixed_float16", "mixed_bfloat16")
    if not isinstance(peak, Mapping) or any(p not in peak for p in wanted):
        raise ValueError(f"peak must map each of {wanted} to its peak bytes; got {peak!r}.")
    for name, value in [*((p, peak[p]) for p in wanted), ("unscaled", unscaled)]:
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"peak bytes of {name}: {value!r}; use a positive, finite number of bytes.")
    share = {p: peak[p] / peak["float32"] for p in wanted}
    share_unscaled = unscaled / peak["float32"]
    # differences in points as printed (one decimal), so that the verdict agrees with the figures beside it
    gap = round(abs(share["mixed_bfloat16"] - share["mixed_float16"]) * 100, 1)
    gap_unscaled = round(abs(share["mixed_bfloat16"] - share_unscaled) * 100, 1)
    points = f"{close * 100:.3g} points"
    if gap <= close * 100:
        return (f"The two 16-bit policies' shares are {gap:.1f} points apart, within {points}, as their "
                "equal activations suggest.")
    head = (f"The two 16-bit policies have the same activation bytes, yet their shares are {gap:.1f} points "
            f"apart; mixed_float16 without loss scaling peaked at {share_unscaled:.1%} of float32's bytes, "
            f"{gap_unscaled:.1f} points from mixed_bfloat16's {share['mixed_bfloat16']:.1%}")
    if gap_unscaled <= close * 100:
        return (f"{head}, within {points}: the gap comes with the loss-scaling step, not with the 16-bit type. "
                "That step is a different graph of operations, and the peak counts the tensors alive at one "
                "moment, which follows the order the operations run in; which tensors those are, this run does "
                "not measure.")
    return f"{head}, more than {points}: this run does not explain the gap."


# --------------------------------------------------------------------------- memory: the expected share
# The most bytes of float32's peak a 16-bit policy's peak may take, as measured on a CPU with the BFC allocator
# (notebook 06, "Memory"): float16 and bfloat16 activations are half of float32's, the weights stay float32.
PEAK_SHARE = {"mixed_float16": 0.60, "mixed_bfloat16": 0.75}
BF16_NATIVE_CC = (8, 0)  # from compute capability 8.0 (Ampere) TensorFlow's GPU kernels compute bfloat16 as it is
CUDNN_WORKSPACE_DEFAULT_MB = 4096  # TF_CUDNN_WORKSPACE_LIMIT_IN_MB unset: 1 << 32 bytes (see peak_share_limit)


# Below compute capability 8.0 a bfloat16 step keeps float32 copies of a convolution's tensors beside its
# bfloat16 ones (peak_share_limit): its peak may pass float32's. A rule of thumb, with a quarter of margin.
BF16_THROUGH_FLOAT32_SHARE = 1.25


def peak_share_limit(policy: str, device_type: str, compute_capability: tuple[int, int] | None = None,
                     float32_peak: float | None = None, workspace_mb: float | None = None) -> tuple[float, str]:
    """The largest share of float32's peak bytes that `policy`'s peak of one step may take, and why.

    On a CPU: :data:`PEAK_SHARE` (measured there, with the BFC allocator). On a GPU, what the GPU
    really does moves it, by compute capability:

    * **bfloat16 below compute capability 8.0** (a T4, a V100, a P100): TensorFlow computes a
      bfloat16 convolution in float32. ``LaunchConv2DOp<GPUDevice, Eigen::bfloat16>`` in
      tensorflow/core/kernels/conv_ops_bfloat16.cc sets ``cast_to_float = !IsBF16SupportedInOps(stream)``
      (true before Ampere), allocates float32 copies of the input, the filter and the output with
      ``allocate_temp`` and runs the float32 convolution; the backward convolutions
      (conv_grad_filter_ops / conv_grad_input_ops) do the same. Those copies come from the same
      allocator, so no saving is expected. They sit beside the bfloat16 tensors that stay alive (the
      activations, Keras' bfloat16 casts of the weights), so the peak can even pass float32's: the limit,
      a rule of thumb and not a bound, is float32's whole peak and a quarter more
      (:data:`BF16_THROUGH_FLOAT32_SHARE`, 1.25).
    * **cuDNN's workspace**: a GPU convolution takes scratch space from TensorFlow's allocator too, up
      to ``TF_CUDNN_WORKSPACE_LIMIT_IN_MB`` (read by ``GetDnnWorkspaceLimit`` in
      tensorflow/core/kernels/conv_ops_impl.h and the conv_grad files, default ``1LL << 32`` bytes:
      4096 MiB). It lies inside every policy's peak, and need not shrink with the data type, so the
      limit grows by ``workspace_mb`` MiB over `float32_peak` (the float32 peak, in bytes).

    A CPU ignores both (no cuDNN; bfloat16 as it is, or emulated by oneDNN/Eigen, with the same
    tensors). Returns ``(limit, reason)``; the limit is at most 1.0 plus the workspace share.

    Example:
        >>> peak_share_limit("mixed_float16", "CPU")[0]
        0.6
        >>> peak_share_limit("mixed_bfloat16", "GPU", (7, 5), float32_peak=2**30, workspace_mb=64)[0]
        1.3125
    """
    if policy not in PEAK_SHARE:
        raise ValueError(f"policy={policy!r}: use one of {sorted(PEAK_SHARE)}.")
    if device_type not in ("CPU", "GPU"):
        raise ValueError(f"device_type={device_type!r}: use 'CPU' or 'GPU'.")
    if device_type == "CPU":
        return PEAK_SHARE[policy], "measured on a CPU with the BFC allocator"
    if compute_capability is not None and (len(tuple(compute_capability)) != 2 or
                                           not all(isinstance(v, int) for v in compute_capability)):
        raise ValueError(f"compute_capability={compute_capability!r}: use (major, minor), such as (7, 5), or None.")
    if not isinstance(float32_peak, (int, float)) or isinstance(float32_peak, bool) or float32_peak <= 0:
        raise ValueError(f"float32_peak={float32_peak!r}: on a GPU, pass float32's peak in bytes (> 0).")
    workspace_mb = CUDNN_WORKSPACE_DEFAULT_MB if workspace_mb is None else workspace_mb
    if not isinstance(workspace_mb, (int, float)) or isinstance(workspace_mb, bool) or workspace_mb < 0:
        raise ValueError(f"workspace_mb={workspace_mb!r}: use the cuDNN workspace limit in MiB (>= 0), or None.")
    extra = workspace_mb * 2**20 / float32_peak
    why = f"plus up to {workspace_mb:g} MiB of cuDNN workspace"
    cc = tuple(compute_capability) if compute_capability else None
    if policy == "mixed_bfloat16" and (cc is None or cc < BF16_NATIVE_CC):
        known = "compute capability unknown" if cc is None else f"compute capability {cc[0]}.{cc[1]}"
        return BF16_THROUGH_FLOAT32_SHARE + extra, (
            f"{known}, below 8.0: TensorFlow computes bfloat16 convolutions in float32, through float32 copies "
            f"beside the bfloat16 tensors, so no saving is expected (a rule of thumb: float32's peak and a quarter "
            f"more); {why}")
    return PEAK_SHARE[policy] + extra, f"{PEAK_SHARE[policy]:.0%} as on a CPU, {why}"


def tensor_core_note(compute_capability: tuple[int, int] | None) -> str:
    """What the multiple-of-8 experiment can show on a GPU of this compute capability: '' from 7.0 on.

    Tensor Cores (7.0 and later) work on tiles, so a matmul whose sizes are multiples of 8 can use them and
    others are padded. Below 7.0 (a P100, 6.0) there are none: both sizes take the same path.

    Example:
        >>> tensor_core_note((7, 5))
        ''
        >>> tensor_core_note((6, 0))[:40]
        'Compute capability 6.0 has no Tensor Cor'
    """
    cc = tuple(compute_capability) if compute_capability else None
    if cc is None:
        return "This GPU's compute capability is unknown, so whether Tensor Cores took part is too."
    if cc >= (7, 0):
        return ""
    return (f"Compute capability {cc[0]}.{cc[1]} has no Tensor Cores (they start at 7.0): both sizes ran on the "
            "ordinary cores, so a gap here is not the multiple-of-8 rule, which concerns Tensor Cores.")


def _have(flags: set[str], names: Iterable[str]) -> list[str]:
    return [n for n in names if n in flags]


def _check_times(step_s: Mapping[str, float], within: float) -> None:
    if not (isinstance(within, (int, float)) and 1 <= within < math.inf):
        raise ValueError(f"within={within!r}: use a ratio >= 1, such as 1.1 (medians closer than that read 'about "
                         "as fast').")
    unknown = set(step_s) - set(POLICIES)
    if unknown:
        raise ValueError(f"step_s has unknown policies {sorted(unknown)}: use {', '.join(POLICIES)}.")
    for policy, t in step_s.items():
        if t is not None and not (isinstance(t, (int, float)) and 0 < t < math.inf):
            raise ValueError(f"step_s[{policy!r}]={t!r}: use a positive, finite step time in seconds (or None for "
                             "a policy not measured).")
    if step_s.get("float32") is None:
        raise ValueError("step_s must hold a positive 'float32' step time to compare with.")


def _speed(t_ref: float, t: float, within: float) -> tuple[float, str]:
    """(ratio, 'faster than' wording) for t_ref / t; medians closer than `within` read 'about as fast as'."""
    ratio = t_ref / t
    if not 0 < ratio < math.inf:
        raise ValueError(f"step times {t_ref!r} and {t!r} are too far apart to compare: use step times in seconds.")
    if ratio >= within and ratio > 1:
        return ratio, f"{ratio:.1f}x faster than"
    if 1 / ratio >= within and ratio < 1:
        return ratio, f"{1 / ratio:.1f}x slower than"
    return ratio, "about as fast as"


def _ms(seconds: float) -> str:
    """Milliseconds as printed: whole ones from 100 ms, three significant digits below (54.8, 4.1, 0.52)."""
    ms = seconds * 1e3
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}"


def _head(policy: str, t_ref: float, t: float, within: float, where: str) -> tuple[bool, str]:
    """(faster?, the sentence's head quoting both medians) for `policy` against float32."""
    _, words = _speed(t_ref, t, within)
    rule = f"; medians within {within:g}x of each other read 'about as fast'" if words.startswith("about") else ""
    return words.endswith("faster than"), (f"{policy} ran {words} float32 on this {where} (measured: median step "
                                           f"{_ms(t)} ms against {_ms(t_ref)} ms{rule}). ")


def speed_reading(flags: set[str], step_s: Mapping[str, float], onednn: bool | None = None,
                  within: float = 1.1) -> list[str]:
    """Explain each mixed policy's measured step time on a CPU from the CPU's instruction-set flags.

    Args:
        flags: the CPU's flags (:func:`helpers.cpu.flags`).
        step_s: policy -> median step time in seconds; needs ``"float32"`` and at least one mixed policy.
        onednn: whether TensorFlow's oneDNN kernels are on (:func:`onednn_state`); None: not said.
        within: medians whose ratio is below this read "about as fast" (the rule the notebook prints).

    Returns:
        One sentence per mixed policy, worded from the measured ratio, the flags and oneDNN's state.

    Example:
        >>> speed_reading({"avx512f"}, {"float32": 0.02, "mixed_float16": 0.1})[0][:60]
        'mixed_float16 ran 5.0x slower than float32 on this CPU (meas'
    """
    _check_times(step_s, within)
    lines = []
    for policy, fmt, names in (("mixed_bfloat16", "bfloat16", BF16_FLAGS), ("mixed_float16", "float16", FP16_FLAGS)):
        if step_s.get(policy) is None:
            continue
        faster, head = _head(policy, step_s["float32"], step_s[policy], within, "CPU")
        has = _have(flags, names)
        if has and onednn is False:
            why = (f"The CPU has {' and '.join(has)} ({fmt} arithmetic in hardware), but oneDNN is off, and "
                   f"TensorFlow's other kernels (Eigen) compute {fmt} by converting to float32 and back"
                   + (f"; what {fmt} saves here is memory traffic: it moves half the bytes." if faster else
                      ", which costs more than it saves."))
        elif has and faster:
            why = (f"The CPU has {' and '.join(has)}: {fmt} arithmetic in hardware, which TensorFlow's oneDNN "
                   f"kernels use for convolutions and matmuls, and {fmt} moves half the bytes.")
        elif has:
            why = (f"The CPU has {' and '.join(has)} ({fmt} arithmetic in hardware), yet this model is small: "
                   "the casts between float32 and the compute type around every layer, and the ops without a "
                   f"fast {fmt} kernel, cost at least what the faster arithmetic saves.")
        elif faster:
            why = (f"The CPU lacks {' and '.join(names)}, so it has no {fmt} arithmetic; the gain comes from "
                   "moving half the bytes through memory, not from faster arithmetic.")
        else:
            why = (f"The CPU lacks {' and '.join(names)}: it has no {fmt} arithmetic, so every {fmt} operation "
                   "is carried out by converting to float32 and back, which costs at least what it saves.")
        lines.append(head + why)
    if not lines:
        raise ValueError("step_s needs at least one of 'mixed_float16' and 'mixed_bfloat16' besides 'float32'.")
    return lines


# Float16 arithmetic on the ordinary cores of compute capability 6.x, against float32: results per clock per
# multiprocessor in the CUDA C++ Programming Guide's arithmetic-instruction throughput table (16-bit add,
# multiply, multiply-add: 128 on 6.0, 2 on 6.1, 256 on 6.2; 32-bit: 64, 128, 128).
HALF_RATE = {
    (6, 0): ("Its ordinary cores compute float16 at twice the float32 rate (a P100: 18.7 against 9.3 TFLOP/s, "
             "datasheet), so float16 can gain where the arithmetic, not the memory, sets the pace."),
    (6, 1): "Its ordinary cores compute float16 at 1/64 of the float32 rate: keep float32 on this GPU.",
    (6, 2): "Its ordinary cores compute float16 at twice the float32 rate.",
}


def gpu_speed_reading(compute_capability: tuple[int, int] | None, step_s: Mapping[str, float],
                      within: float = 1.1) -> list[str]:
    """Explain each mixed policy's measured step time on a GPU from its compute capability.

    Float16 Tensor Cores arrived with compute capability 7.0, bfloat16 (and TF32) ones with 8.0
    (NVIDIA CUDA C++ Programming Guide; TensorFlow's mixed precision guide). From 8.0 a last sentence
    says that the float32 baseline already uses TF32 Tensor Cores. Below 7.0 (a P100, 6.0, an older card
    that Kaggle has retired) there are no Tensor Cores at all; the float16 sentence then says how fast the
    ordinary cores compute float16 (:data:`HALF_RATE`). Medians whose ratio is below `within` read "about as
    fast".

    Example:
        >>> gpu_speed_reading((7, 5), {"float32": 0.02, "mixed_float16": 0.01})[0][:48]
        'mixed_float16 ran 2.0x faster than float32 on th'
    """
    _check_times(step_s, within)
    cc = tuple(compute_capability) if compute_capability else None
    lines = []
    for policy, fmt, needs in (("mixed_float16", "float16", (7, 0)), ("mixed_bfloat16", "bfloat16", (8, 0))):
        if step_s.get(policy) is None:
            continue
        faster, head = _head(policy, step_s["float32"], step_s[policy], within, "GPU")
        if cc is None:
            why = "Its compute capability is unknown, so whether it has Tensor Cores for this format is too."
        elif cc >= needs and faster:
            why = (f"Compute capability {cc[0]}.{cc[1]} has {fmt} Tensor Cores (from {needs[0]}.{needs[1]}), and "
                   f"{fmt} halves the bytes each layer reads and writes.")
        elif cc >= needs:
            why = (f"Compute capability {cc[0]}.{cc[1]} has {fmt} Tensor Cores, but this model is small: kernel "
                   "launches and casts, not arithmetic, set its step time. Large models gain more (NVIDIA's "
                   "ResNet-50 v1.5 training tables, DeepLearningExamples: 3.08x on a V100, 2.60x on an A100, as "
                   "published).")
        else:
            why = (f"Compute capability {cc[0]}.{cc[1]} is below {needs[0]}.{needs[1]}: no {fmt} Tensor Cores, so "
                   f"{fmt} runs on the ordinary cores" + (", where it saves memory traffic." if faster
                                                           else " and gains nothing in speed."))
            if fmt == "float16" and cc in HALF_RATE:
                why += f" {HALF_RATE[cc]}"
        lines.append(head + why)
    if not lines:
        raise ValueError("step_s needs at least one of 'mixed_float16' and 'mixed_bfloat16' besides 'float32'.")
    if cc is not None and cc >= (8, 0):
        lines.append(f"On compute capability {cc[0]}.{cc[1]} the float32 run is not plain float32: TensorFlow runs its "
                     "matmuls and convolutions in TF32 on Tensor Cores by default, so the mixed policies gain less "
                     "over it than over true float32 (TensorFlow's mixed precision guide).")
    return lines
