"""Topic module of notebook 06 · Mixed precision: the plumbing around the lesson.

The lesson itself (``set_global_policy``, ``LossScaleOptimizer``, ``scale_loss``, the casts to float16)
stays on the notebook's page. This module holds what is too long for a cell:

* :data:`TF32`, the one format NumPy has no ``finfo`` for (Tensor Cores' float32 mode, compute
  capability 8.0 and later), and :func:`plot_spacing`, the gap between neighbouring numbers of each
  format (section "Three number formats");
* :func:`plot_gradient_magnitudes`, where real gradients fall against float16's limits ("Underflow");
* :func:`step_timer`, a Keras callback that times training steps and keeps the median ("Speed");
* :func:`native_stderr`, which catches what TensorFlow's C++ code says the first time it meets float16
  (on a CPU without float16 instructions: that oneDNN falls back to other kernels), so the notebook can
  show it as a reading instead of red text;
* :func:`speed_reading` and :func:`gpu_speed_reading`, the sentences that explain the measured speed of
  each policy from the CPU's instruction-set flags (read by :func:`helpers.cpu.flags`) or from the GPU's
  compute capability.
"""

from __future__ import annotations

import contextlib
import os
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
# and convolutions with float32's 8-bit exponent but only 10 mantissa bits (NVIDIA A100 architecture
# whitepaper), and accumulate in float32. Its range is float32's; its precision float16's.
TF32 = {"bits": 19, "nexp": 8, "nmant": 10, "max": float(np.finfo(np.float32).max),
        "smallest_normal": 2.0**-126, "eps": 2.0**-10}

# Instruction-set flags (as /proc/cpuinfo spells them) that give a CPU arithmetic in each format.
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
FP16_FLAGS = ("avx512_fp16", "amx_fp16")


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


def step_timer() -> Any:
    """A Keras callback that times each training step; ``.median`` is the median step in seconds.

    The clock reads at the end of each batch after waiting for the device (so asynchronous GPU work
    is inside the step it belongs to). The first step holds tracing and compilation: it is dropped.

    Example:
        >>> timer = step_timer()
        >>> timer.times, timer.median
        ([], None)
    """
    import keras

    from helpers import bench

    class StepTimer(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []
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

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            self._last = None  # the gap between epochs is not a step

        @property
        def median(self) -> float | None:
            timed = self.times[1:] or self.times
            return statistics.median(timed) if timed else None

    return StepTimer()


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


def _speed(ratio: float) -> str:
    """'2.1x faster than' / '3.4x slower than' / 'as fast as' for ratio = t_float32 / t_policy."""
    if ratio >= 1.1:
        return f"{ratio:.1f}x faster than"
    if ratio <= 1 / 1.1:
        return f"{1 / ratio:.1f}x slower than"
    return "about as fast as"


def speed_reading(flags: set[str], step_s: Mapping[str, float]) -> list[str]:
    """Explain each mixed policy's measured step time on a CPU from the CPU's instruction-set flags.

    Args:
        flags: the CPU's flags (:func:`helpers.cpu.flags`).
        step_s: policy -> median step time in seconds; needs ``"float32"`` and at least one mixed policy.

    Returns:
        One sentence per mixed policy, worded from the measured ratio and the flags.

    Example:
        >>> speed_reading({"avx512f"}, {"float32": 0.02, "mixed_float16": 0.1})[0][:60]
        'mixed_float16 ran 5.0x slower than float32 on this CPU (meas'
    """
    if "float32" not in step_s or not step_s["float32"]:
        raise ValueError("step_s must hold a positive 'float32' step time to compare with.")
    unknown = set(step_s) - set(POLICIES)
    if unknown:
        raise ValueError(f"step_s has unknown policies {sorted(unknown)}: use {', '.join(POLICIES)}.")
    lines = []
    for policy, fmt, names in (("mixed_bfloat16", "bfloat16", BF16_FLAGS), ("mixed_float16", "float16", FP16_FLAGS)):
        if policy not in step_s or not step_s[policy]:
            continue
        ratio = step_s["float32"] / step_s[policy]
        has = _have(flags, names)
        head = f"{policy} ran {_speed(ratio)} float32 on this CPU (measured). "
        if has and ratio >= 1.1:
            why = (f"The CPU has {' and '.join(has)}: {fmt} arithmetic in hardware, which TensorFlow's oneDNN "
                   f"kernels use for convolutions and matmuls, and {fmt} moves half the bytes.")
        elif has:
            why = (f"The CPU has {' and '.join(has)} ({fmt} arithmetic in hardware), yet this model is small: "
                   "the casts between float32 and the compute type around every layer, and the ops without a "
                   f"fast {fmt} kernel, cost about what the faster arithmetic saves.")
        elif ratio >= 1.1:
            why = (f"The CPU lacks {' and '.join(names)}, so it has no {fmt} arithmetic; the gain comes from "
                   "moving half the bytes through memory, not from faster arithmetic.")
        else:
            why = (f"The CPU lacks {' and '.join(names)}: it has no {fmt} arithmetic, so every {fmt} operation "
                   "is carried out by converting to float32 and back, which costs more than it saves.")
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


def gpu_speed_reading(compute_capability: tuple[int, int] | None, step_s: Mapping[str, float]) -> list[str]:
    """Explain each mixed policy's measured step time on a GPU from its compute capability.

    Float16 Tensor Cores arrived with compute capability 7.0, bfloat16 (and TF32) ones with 8.0
    (NVIDIA CUDA C++ Programming Guide; TensorFlow's mixed precision guide). From 8.0 a last sentence
    says that the float32 baseline already uses TF32 Tensor Cores. Below 7.0 (a P100, 6.0: Kaggle's
    single-GPU runtime) there are no Tensor Cores at all; the float16 sentence then says how fast the
    ordinary cores compute float16 (:data:`HALF_RATE`).

    Example:
        >>> gpu_speed_reading((7, 5), {"float32": 0.02, "mixed_float16": 0.01})[0][:48]
        'mixed_float16 ran 2.0x faster than float32 on th'
    """
    if "float32" not in step_s or not step_s["float32"]:
        raise ValueError("step_s must hold a positive 'float32' step time to compare with.")
    cc = tuple(compute_capability) if compute_capability else None
    lines = []
    for policy, fmt, needs in (("mixed_float16", "float16", (7, 0)), ("mixed_bfloat16", "bfloat16", (8, 0))):
        if policy not in step_s or not step_s[policy]:
            continue
        ratio = step_s["float32"] / step_s[policy]
        head = f"{policy} ran {_speed(ratio)} float32 on this GPU (measured). "
        if cc is None:
            why = "Its compute capability is unknown, so whether it has Tensor Cores for this format is too."
        elif cc >= needs and ratio >= 1.1:
            why = (f"Compute capability {cc[0]}.{cc[1]} has {fmt} Tensor Cores (from {needs[0]}.{needs[1]}), and "
                   f"{fmt} halves the bytes each layer reads and writes.")
        elif cc >= needs:
            why = (f"Compute capability {cc[0]}.{cc[1]} has {fmt} Tensor Cores, but this model is small: kernel "
                   "launches and casts, not arithmetic, set its step time. Large models gain more (NVIDIA measured "
                   "2.6-3.1x on ResNet-50).")
        else:
            why = (f"Compute capability {cc[0]}.{cc[1]} is below {needs[0]}.{needs[1]}: no {fmt} Tensor Cores, so "
                   f"{fmt} runs on the ordinary cores" + (", where it saves memory traffic." if ratio >= 1.1
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
