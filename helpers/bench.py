"""Timing that tells the truth about asynchronous devices (notebooks 01, 03, 04, 05, 06, 07).

A GPU runs kernels in the background: ``tf.matmul`` returns as soon as the work is *queued*.
TensorFlow's asynchronous eager mode (``tf.config.experimental.set_synchronous_execution(False)``)
does the same even on a CPU. A timer that stops when the Python call returns measures dispatch,
not work. :func:`benchmark` warms up, waits for every device to finish before it stops the
clock, repeats, and reports the median and the spread. Waiting costs time too (tens of
microseconds on a GPU), so for small ops it times several back-to-back calls per wait and reports
the time per call.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _eager_context() -> Any:
    """TensorFlow's eager context module (``async_wait``, ``executing_eagerly``); a seam for the tests."""
    from tensorflow.python.eager import context  # the only public-enough handle on the async executor

    return context


def device_sync(tf: Any | None = None) -> Callable[[], None]:
    """A function that blocks until every device has finished its work, with the device list looked up now, once.

    It does what ``tf.test.experimental.sync_devices`` does (tensorflow/python/framework/test_util.py):
    one ``SyncDevice`` op on each logical device (on a GPU it waits for the device's stream of kernels),
    then ``context.async_wait()``, which only empties TensorFlow's host-side queue of pending eager ops
    (the queue of asynchronous mode). ``sync_devices`` lists the devices on every call; this function
    lists them once, so a loop of timed calls pays only for the waits. Returns a function that does
    nothing when TensorFlow has not been imported (plain NumPy code is synchronous).

    Example:
        >>> sync = device_sync()
        >>> sync()  # safe to call at any time, outside a tf.function
    """
    tf = tf if tf is not None else sys.modules.get("tensorflow")
    if tf is None:
        return _nothing
    names = [d.name for d in tf.config.list_logical_devices()]
    sync_device = tf.raw_ops.SyncDevice

    def sync() -> None:
        context = _eager_context()
        if not context.executing_eagerly():
            raise RuntimeError("helpers.bench: synchronise in eager mode, outside any tf.function.")
        for name in names:  # SyncDevice before async_wait, as sync_devices does: else the op itself may still be queued
            with tf.device(name):
                sync_device()
        context.async_wait()  # TensorFlow's host-side queue (asynchronous mode), including those SyncDevice ops

    return sync


def _nothing() -> None:
    return None


def synchronize() -> None:
    """Block until every op TensorFlow has dispatched has finished, on every device.

    Looks the devices up on each call (:func:`device_sync` does it once, for loops). Does nothing
    when TensorFlow has not been imported (plain NumPy code is synchronous).

    Example:
        >>> synchronize()  # safe to call at any time
    """
    device_sync()()


@dataclass
class BenchResult:
    """Seconds per call of each timed repeat; a repeat is `calls_per_sync` back-to-back calls and one wait."""

    times: list[float]
    warmup: int
    calls_per_sync: int = 1
    window: tuple[float, float] | None = None  # the clock at the first timed batch's start and the last one's end

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
        if self.calls_per_sync == 1:
            return (f"median {_fmt(self.median)} (IQR {_fmt(self.iqr)}, min {_fmt(self.min)}, "
                    f"{len(self.times)} repeats after {self.warmup} warm-up)")
        return (f"median {_fmt(self.median)} per call (IQR {_fmt(self.iqr)}, min {_fmt(self.min)}, "
                f"{len(self.times)} repeats of {self.calls_per_sync} back-to-back calls after {self.warmup} warm-up)")


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


SYNC_SHARE = 0.05  # auto calls_per_sync: the wait may take at most this share of a timed batch
MAX_CALLS_PER_SYNC = 10_000
MAX_BATCH_S = 0.5  # ... and a batch of back-to-back calls need not last longer than this


def _check_calls(calls_per_sync: Any) -> None:
    if calls_per_sync is None:
        return
    if not isinstance(calls_per_sync, int) or isinstance(calls_per_sync, bool) or calls_per_sync < 1:
        raise ValueError(f"calls_per_sync={calls_per_sync!r}: use an integer >= 1, or None to choose it from the "
                         "time of a warm call and of a wait.")


def calls_for(call_s: float, sync_s: float, share: float = SYNC_SHARE) -> int:
    """How many back-to-back calls to time per wait, so the wait is at most `share` of the batch.

    Args:
        call_s: seconds one warm call takes (its wait excluded).
        sync_s: seconds one wait on an idle device takes.

    Example:
        >>> calls_for(call_s=10e-6, sync_s=1e-3)  # a 10 µs op, a 1 ms wait: 2,000 calls per wait
        2000
        >>> calls_for(call_s=0.05, sync_s=1e-3)  # a 50 ms step: one call per wait is plenty
        1
    """
    if not 0 < share < 1:
        raise ValueError(f"share={share!r}: use a fraction between 0 and 1, such as 0.05.")
    if sync_s <= 0:
        return 1
    if call_s <= 0:
        return MAX_CALLS_PER_SYNC
    limit = max(1, min(MAX_CALLS_PER_SYNC, int(MAX_BATCH_S / call_s)))
    return max(1, min(limit, math.ceil(sync_s / (share * call_s) - 1e-9)))


def benchmark(fn: Callable[..., Any], *args: Any, warmup: int = 2, repeats: int = 5,
              sync: Callable[[], None] | None = synchronize, calls_per_sync: int | None = None,
              clock: Callable[[], float] | None = None, **kwargs: Any) -> BenchResult:
    """Time ``fn(*args, **kwargs)``: warm up, then repeat batches of back-to-back calls, waiting once per batch.

    Waiting for the device costs time of its own (tens of microseconds on a GPU: one ``SyncDevice``
    per device, then TensorFlow's queue), more than a small op takes. So each timed repeat runs
    `calls_per_sync` calls back to back, waits once, and reports the batch's time divided by the
    calls: the wait's cost is spread over them, and every call's work is still inside the clock.

    Args:
        fn: the work to time.
        warmup: untimed calls first (tracing, autotuning, caches, lazy allocation).
        repeats: timed batches; ``times`` holds one time per call for each.
        sync: called after each batch, before the clock stops; waits for asynchronous work. The default
            waits for every device, with the device list looked up once per benchmark
            (:func:`device_sync`). Pass ``None`` only for synchronous code (NumPy) or to show what goes
            wrong without it.
        calls_per_sync: calls per timed batch. None (the default): 1 when there is no warm-up or no
            `sync`, else chosen from the last warm-up call and a wait on the idle device so that the
            wait is at most 5 % of a batch (:func:`calls_for`).
        clock: the clock read before and after each batch (and around the warm-up and the idle waits, to
            choose `calls_per_sync`); None: ``time.perf_counter``. The result's ``window`` holds its readings
            at the first timed batch's start and the last one's end: the timed repeats only.

    Example:
        >>> r = benchmark(sum, range(1000), warmup=1, repeats=3)
        >>> len(r.times), r.median > 0
        (3, True)
    """
    _check_counts(warmup, repeats)
    _check_calls(calls_per_sync)
    if not callable(fn):
        raise ValueError(f"fn={fn!r}: pass a callable (a function or a lambda).")
    if sync is synchronize:
        sync = device_sync()  # the device list, once
    clock = clock or time.perf_counter
    dispatch = call = 0.0  # the last warm-up call: until it returned, and until its wait ended
    for _ in range(warmup):
        start = clock()
        fn(*args, **kwargs)
        dispatch = clock() - start
        if sync:
            sync()
        call = clock() - start
    k = calls_per_sync
    if sync:
        idle = []
        for _ in range(3 if k is None and warmup else 1):  # the last one also starts the clock on an idle device
            start = clock()
            sync()
            idle.append(clock() - start)
        if k is None and warmup:
            # A call takes at least its dispatch; the wait on an idle device is its fixed cost.
            k = calls_for(max(call - min(idle), dispatch), min(idle))
    k = k or 1
    times, first = [], None
    for _ in range(repeats):
        start = clock()
        first = start if first is None else first
        for _ in range(k):
            fn(*args, **kwargs)
        if sync:
            sync()
        end = clock()
        times.append((end - start) / k)
    return BenchResult(times=times, warmup=warmup, calls_per_sync=k, window=(first, end))


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
