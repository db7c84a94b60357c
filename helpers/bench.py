"""Timing that tells the truth about asynchronous devices (notebooks 01, 03, 04, 05, 06, 07).

A GPU runs kernels in the background: ``tf.matmul`` returns as soon as the work is *queued*.
TensorFlow's asynchronous eager mode (``tf.config.experimental.set_synchronous_execution(False)``)
does the same even on a CPU. A timer that stops when the Python call returns measures dispatch,
not work. :func:`benchmark` warms up, waits for every device to finish before it stops the
clock, repeats, and reports the median and the spread.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def synchronize() -> None:
    """Block until every op TensorFlow has dispatched has finished, on every device.

    Does nothing when TensorFlow has not been imported (plain NumPy code is synchronous).

    Example:
        >>> synchronize()  # safe to call at any time
    """
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return
    from tensorflow.python.eager import context  # the only public-enough handle on the async executor

    if context.executing_eagerly():
        context.async_wait()  # drains the eager executor (async mode queues ops here)
    tf.test.experimental.sync_devices()  # waits for device streams (GPU kernels)


@dataclass
class BenchResult:
    """Times of the timed repeats, in seconds."""

    times: list[float]
    warmup: int

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def stdev(self) -> float:
        return statistics.stdev(self.times) if len(self.times) > 1 else 0.0

    @property
    def iqr(self) -> float:
        """Inter-quartile range: the spread of the middle half of the repeats."""
        if len(self.times) < 4:
            return max(self.times) - min(self.times)
        q = statistics.quantiles(self.times, n=4)
        return q[2] - q[0]

    @property
    def spread(self) -> float:
        """Relative spread: IQR / median (0.05 means the middle half is within 5 % of the median)."""
        return self.iqr / self.median if self.median > 0 else 0.0

    def __str__(self) -> str:
        return (f"median {_fmt(self.median)} (IQR {_fmt(self.iqr)}, min {_fmt(self.min)}, "
                f"{len(self.times)} repeats after {self.warmup} warm-up)")


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _check_counts(warmup: Any, repeats: Any) -> None:
    if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0:
        raise ValueError(f"warmup={warmup!r}: use an integer >= 0.")
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats={repeats!r}: use an integer >= 1.")


def benchmark(fn: Callable[..., Any], *args: Any, warmup: int = 2, repeats: int = 5,
              sync: Callable[[], None] | None = synchronize, **kwargs: Any) -> BenchResult:
    """Time ``fn(*args, **kwargs)``: warm up, then repeat, synchronising before each clock stop.

    Args:
        fn: the work to time.
        warmup: untimed calls first (tracing, autotuning, caches, lazy allocation).
        repeats: timed calls.
        sync: called after each call, before the clock stops; waits for asynchronous work.
            Pass ``None`` only to show what goes wrong without it.

    Example:
        >>> r = benchmark(sum, range(1000), warmup=1, repeats=3)
        >>> len(r.times), r.median > 0
        (3, True)
    """
    _check_counts(warmup, repeats)
    if not callable(fn):
        raise ValueError(f"fn={fn!r}: pass a callable (a function or a lambda).")
    for _ in range(warmup):
        fn(*args, **kwargs)
        if sync:
            sync()
    if sync:
        sync()  # start the clock on an idle device
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args, **kwargs)
        if sync:
            sync()
        times.append(time.perf_counter() - start)
    return BenchResult(times=times, warmup=warmup)


def time_dispatch(fn: Callable[..., Any], *args: Any, warmup: int = 1, repeats: int = 5,
                  **kwargs: Any) -> BenchResult:
    """The *wrong* way, kept for teaching: stop the clock when the call returns, without waiting.

    The device is drained before each call so every repeat starts from the same state;
    the clock still stops before the work is done.

    Example:
        >>> time_dispatch(sum, range(10), repeats=2).median >= 0
        True
    """
    _check_counts(warmup, repeats)
    for _ in range(warmup):
        fn(*args, **kwargs)
    times = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - start)
    synchronize()
    return BenchResult(times=times, warmup=warmup)


def gflops(flops: float, seconds: float) -> float:
    """Throughput in GFLOP/s.

    Example:
        >>> gflops(2 * 1024**3, 1.0)  # a 1024x1024 matmul takes 2*N^3 FLOPs
        2.147483648
    """
    if seconds <= 0:
        raise ValueError(f"seconds={seconds!r}: use a positive duration.")
    return flops / seconds / 1e9
