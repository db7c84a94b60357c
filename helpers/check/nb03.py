"""Checks for notebook 03 · CPU vs GPU timing.

Each check calls the learner's function on inputs it makes up (sizes and times, or a fake
asynchronous operation), so a number that happens to be right on this machine cannot pass.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from helpers.check._feedback import Feedback, call, not_filled, number, returned_none, wrong

__all__ = ["gflops", "time_it", "crossover", "payoff", "traces"]






# --------------------------------------------------------------------------- exercise 1
ROUNDING = "0-3 decimals or 2-6 significant digits"  # what both checks call a rounded answer


def _roundings(value: float) -> list[float]:
    """`value` rounded to 0-3 decimals and to 2-6 significant digits (the ``ROUNDING`` rule)."""
    return [round(value, k) for k in range(4)] + [float(f"{value:.{k}g}") for k in range(2, 7)]


def _rounded(got: float, exact: float) -> bool:
    """Whether `got` is `exact` rounded to 0-3 decimals or to 2-6 significant digits."""
    return any(math.isclose(got, c, rel_tol=1e-9, abs_tol=1e-12) for c in _roundings(exact))


def _looks_rounded(value: float) -> bool:
    """Whether a measured time is itself a rounded number (a clock difference almost never is one exactly)."""
    return any(value == c for c in _roundings(value))


GFLOPS_CASES = [(1024, 0.01), (2048, 0.125), (100, 0.001), (3000, 2.5), (64, 2e-5)]


def gflops(answer: Any) -> Feedback:
    """Exercise 03.1: ``gflops(n, seconds)``, the GFLOP/s of one n x n by n x n matmul that took `seconds`.

    Example:
        >>> gflops(lambda n, seconds: 2 * n**3 / seconds / 1e9).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Write a function `gflops(n, seconds)` that computes the rate from its two arguments; "
                     "the check calls it on several sizes and times, so a number alone cannot pass.")
    outputs = []
    for n, seconds in GFLOPS_CASES:
        got, fb = call(answer, n, seconds, show_args=True)
        if fb is not None:
            if "for ^" in fb.message:  # 2 * n ^ 3: Python's ^ is bitwise XOR
                return wrong(f"{fb.message[len('Not yet. '):]}. In Python `^` is bitwise XOR, not a power: write "
                             "n**3.")
            return fb
        if got is None:
            return returned_none("gflops")
        value = number(got)
        if value is None:
            return wrong(f"gflops({n}, {seconds}) returned {type(got).__name__}: return a number (a float).")
        outputs.append(value)
    expected = [2 * n**3 / s / 1e9 for n, s in GFLOPS_CASES]
    if all(math.isclose(g, e, rel_tol=1e-6) for g, e in zip(outputs, expected, strict=True)):
        return Feedback(True, "Right: an n x n matmul does n³ multiply-adds, 2 FLOPs each, so 2·n³ / seconds / 1e9; "
                              "a 1024 matmul in 10 ms runs at 214.7 GFLOP/s.")
    if len(set(outputs)) == 1:
        return wrong("Your function returns the same number for every size and time: compute it from `n` and "
                     "`seconds`.")
    ratios = [g / e if e else float("inf") for g, e in zip(outputs, expected, strict=True)]
    first = ratios[0]
    same_ratio = all(math.isclose(r, first, rel_tol=1e-6) for r in ratios)
    n, s = GFLOPS_CASES[0]
    hints = [(0.5, "You counted n³ FLOPs: each of the n³ multiply-adds is 2 FLOPs (a multiply and an add), "
                   "so a matmul does 2·n³."),
             (1e9, "That is FLOP/s: divide by 1e9 for GFLOP/s."),
             (0.5e9, "That is n³ per second: count 2 FLOPs per multiply-add and divide by 1e9 for GFLOP/s."),
             (1e9 / 2**30, "Giga here is 1e9 (decimal, as datasheets use), not 2**30."),
             (1e-3, "You divided by 1e12: that gives TFLOP/s; GFLOP/s divides by 1e9."),
             (1e3, "That is 1000x too large: divide by 1e9 (giga), not 1e6 (mega), and keep the time in seconds."),
             (1e-3 * 2, "That is 2000x too small: giga is 1e9, and a multiply-add counts 2 FLOPs.")]
    if same_ratio:
        for ratio, hint in hints:
            if math.isclose(first, ratio, rel_tol=1e-6):
                return wrong(hint)
    if all(math.isclose(g * e, (2 * m**3 / 1e9) ** 2, rel_tol=1e-6) for g, e, (m, _) in
           zip(outputs, expected, GFLOPS_CASES, strict=True)):
        return wrong("You multiplied by the seconds: a rate is FLOPs divided by the time.")
    if all(math.isclose(g, m**2 * (2 * m - 1) / t / 1e9, rel_tol=1e-6) for g, (m, t) in
           zip(outputs, GFLOPS_CASES, strict=True)):
        return wrong("You counted n²·(2n - 1) FLOPs (n multiplies and n - 1 adds per entry). Count 2·n³: a multiply "
                     "and an add per term, the convention GFLOP/s figures and peaks use.")
    if all(math.isclose(g, 2 * m**2 / t / 1e9, rel_tol=1e-6) for g, (m, t) in zip(outputs, GFLOPS_CASES, strict=True)):
        return wrong("You counted 2·n² FLOPs: an n x n matmul has n² outputs, each a sum of n products, so n³ "
                     "multiply-adds, 2·n³ FLOPs.")
    if all(math.isclose(g, ((2 * m) ^ 3) / t / 1e9, rel_tol=1e-6) or math.isclose(g, 2 * (m ^ 3) / t / 1e9,
                                                                                   rel_tol=1e-6)
           for g, (m, t) in zip(outputs, GFLOPS_CASES, strict=True)):
        return wrong("In Python `^` is bitwise XOR, not a power: write n**3.")
    if all(g == math.floor(e * (1 + 1e-12)) or g == math.floor(e * (1 - 1e-12))
           for g, e in zip(outputs, expected, strict=True)) and not all(g == round(e) for g, e in
                                                                      zip(outputs, expected, strict=True)):
        return wrong("Your numbers are the right ones cut to whole numbers: `//` (floor division) or int() drops "
                     "the fraction. Use `/`, which keeps it.")
    if all(_rounded(g, e) for g, e in zip(outputs, expected, strict=True)):
        return wrong("Your numbers are the right ones rounded: don't round inside the function; return the full "
                     "value and round only when you print it.")
    return wrong(f"gflops({n}, {s}) returned {outputs[0]:.6g}, expected {expected[0]:.6g}. FLOPs of the matmul: "
                 "2·n³; divide by the seconds, then by 1e9.")


# --------------------------------------------------------------------------- exercise 2
class _FakeResult:
    """What the fake operation returns at once; ``.numpy()`` waits until its work is done."""

    def __init__(self, op: FakeAsyncOp, done: threading.Event) -> None:
        self._op = op
        self._done = done

    def numpy(self) -> float:
        self._done.wait()
        self._op.waited = True
        return 1.0

    def __float__(self) -> float:
        return self.numpy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        return np.asarray(self.numpy(), dtype=dtype)


QUEUE_SHARE = 0.3  # the share of a fake op's time spent queuing the work, before the call returns


class FakeAsyncOp:
    """A callable that queues its work (``QUEUE_SHARE`` of `seconds`), returns, and finishes the rest in the background.

    Like a GPU op: the call itself takes a little time (queuing), then the work goes on after it
    returns. The result's ``.numpy()`` waits for the work; so do ``helpers.bench.synchronize()``,
    ``helpers.bench.device_sync()``'s function, TensorFlow's ``context.async_wait()`` and
    ``tf.test.experimental.sync_devices()`` while :meth:`tensorflow_waits` is active. ``waited``
    records whether any of them was called: a timer that sleeps instead of waiting leaves it False.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0
        self.waited = False
        self._pending: list[threading.Event] = []

    def __call__(self) -> _FakeResult:
        self.calls += 1
        time.sleep(QUEUE_SHARE * self.seconds)  # queuing the work: inside the call
        done = threading.Event()
        threading.Timer((1 - QUEUE_SHARE) * self.seconds, done.set).start()
        self._pending.append(done)
        return _FakeResult(self, done)

    def wait_all(self) -> None:
        """Wait for every call's work (the check's clean-up: does not count as the answer waiting)."""
        for done in self._pending:
            done.wait()

    def _wait_for_the_work(self) -> None:
        self.wait_all()
        self.waited = True

    @contextlib.contextmanager
    def tensorflow_waits(self) -> Iterator[None]:
        """Make the waits a learner may call (helpers.bench's, TensorFlow's) wait for this op's work."""
        from helpers import bench

        with contextlib.ExitStack() as stack:
            stack.enter_context(mock.patch.object(bench, "synchronize", self._wait_for_the_work))
            stack.enter_context(mock.patch.object(bench, "device_sync", lambda tf=None: self._wait_for_the_work))
            tf = sys.modules.get("tensorflow")
            if tf is not None:
                from tensorflow.python.eager import context

                stack.enter_context(mock.patch.object(context, "async_wait", self._wait_for_the_work))
                stack.enter_context(mock.patch.object(tf.test.experimental, "sync_devices", self._wait_for_the_work))
            yield


_CPU_CLOCKS = ("process_time", "process_time_ns", "thread_time", "thread_time_ns")


@contextlib.contextmanager
def _cpu_clocks_watched() -> Iterator[list[str]]:
    """Note which CPU-time clocks (time.process_time, ...) the answer reads; they skip time spent waiting."""
    used: list[str] = []

    def spy(name: str) -> Callable[[], Any]:
        real = getattr(time, name)

        def read() -> Any:
            used.append(name)
            return real()

        return read

    with contextlib.ExitStack() as stack:
        for name in _CPU_CLOCKS:
            stack.enter_context(mock.patch.object(time, name, spy(name)))
        yield used


TIME_IT_WORK_S = (0.1, 0.25, 0.4)  # different lengths of work, so no constant passes


def _in_range(value: float, seconds: float) -> bool:
    """A right reading: the work's length, give or take the time to start and wake a thread."""
    return 0.9 * seconds <= value <= 1.3 * seconds + 0.05


def time_it(answer: Any) -> Feedback:
    """Exercise 03.2: ``time_it(fn)``, the seconds one call of `fn` takes, with its asynchronous work finished.

    The check passes fake operations whose work takes 0.1 s, 0.25 s and 0.4 s, like a GPU kernel:
    the call spends ``QUEUE_SHARE`` of it queuing the work, returns, and the rest runs in the
    background. A timer that stops when the call returns, one that starts the clock only after it
    returns, one that sleeps instead of waiting, and one that rounds the time are refused.

    Example:
        >>> import time
        >>> def timer(fn):
        ...     start = time.perf_counter()
        ...     fn().numpy()
        ...     return time.perf_counter() - start
        >>> time_it(timer).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Write a function `time_it(fn)` that calls `fn()` and returns the seconds it took; the check "
                     "calls it with fake operations, so a number alone cannot pass.")
    trials = []  # (seconds of work, value returned, the fake op, CPU clocks read, the wall clocks around the call)
    for seconds in TIME_IT_WORK_S:
        op = FakeAsyncOp(seconds)
        clocks_before = (time.perf_counter(), time.time(), time.monotonic())
        with op.tensorflow_waits(), _cpu_clocks_watched() as cpu_clocks:
            got, fb = call(answer, op, show_args=True)
        clocks_after = (time.perf_counter(), time.time(), time.monotonic())
        op.wait_all()
        if fb is not None:
            return fb
        if got is None:
            return returned_none("time_it")
        if isinstance(got, _FakeResult):
            return wrong("You returned what `fn()` returned (the result of the work): return the seconds it took.")
        if hasattr(got, "median") and hasattr(got, "times"):
            return wrong("You returned the whole benchmark result: return its `.median` (seconds).")
        value = number(got)
        if value is None:
            return wrong(f"time_it returned {type(got).__name__}: return the elapsed seconds (a float), for example "
                         "the difference of two time.perf_counter() readings.")
        trials.append((seconds, value, op, cpu_clocks, clocks_before, clocks_after))
    return _time_it_verdict(trials)


def _time_it_verdict(trials: list[tuple[Any, ...]]) -> Feedback:
    """Explain the first mistake the trials show, or accept them."""
    if any(op.calls == 0 for _, _, op, *_ in trials):
        return wrong("Your function never called `fn()`: call it between the two clock readings.")
    if any(value < 0 for _, value, *_ in trials):
        return wrong("Your time is negative: you subtracted the later reading from the earlier one. Subtract start "
                     "from end: `time.perf_counter() - start`.")
    if any(any(b <= value <= a for b, a in zip(before, after, strict=True))
           for _, value, _, _, before, after in trials):
        return wrong("You returned a clock reading itself: time.perf_counter() counts from an arbitrary moment, so "
                     "one reading means nothing. Read it before and after, and return the difference.")
    if all(_in_range(value / 1000, seconds) for seconds, value, *_ in trials):
        return wrong("That looks like milliseconds: return seconds, as time.perf_counter() gives them.")
    if all(_in_range(value / 1e9, seconds) for seconds, value, *_ in trials):
        return wrong("That looks like nanoseconds (time.perf_counter_ns()): return seconds, as time.perf_counter() "
                     "gives them.")
    if all(op.waited for _, _, op, *_ in trials) and all(value == round(value) for _, value, *_ in trials) and \
            not all(_in_range(value, seconds) for seconds, value, *_ in trials):
        return wrong("Your function waited for the work, but returns whole seconds: round() or int() cuts a 0.25 s "
                     "reading to 0. Return the difference as it is, and round only when you print it.")
    if all(op.waited for _, _, op, *_ in trials) and all(_looks_rounded(value) for _, value, *_ in trials):
        return wrong("Your numbers are the measured times rounded: don't round inside the function; return the "
                     "full difference and round only when you print it.")
    if any(cpu_clocks and value < 0.9 * seconds for seconds, value, _, cpu_clocks, *_ in trials):
        return wrong("time.process_time() counts the CPU time of this Python process, and waiting for a device "
                     "uses none: the work is missing. Use wall time, time.perf_counter().")
    if len({value for _, value, *_ in trials}) == 1:
        return wrong("Your function returns the same number whatever the work takes: measure it, with "
                     "time.perf_counter() before `fn()` and after its result is ready.")
    for seconds, value, op, *_ in trials:
        if not op.waited and value < 0.9 * seconds:
            return wrong("The clock stopped before the work finished: `fn()` returns as soon as the work is queued. "
                         "Wait for the result before you read the clock again: call `.numpy()` on it (or "
                         "helpers.bench.synchronize()).")
        if not op.waited:
            return wrong("Your timer never waited for the result: a time.sleep() (or any fixed pause) guesses how "
                         "long the work takes, and the check's operations take different times. Call `.numpy()` on "
                         "what `fn()` returns (or helpers.bench.synchronize()), then read the clock.")
        if value < 0.9 * seconds and _in_range(value, (1 - QUEUE_SHARE) * seconds):
            return wrong("You started the clock after `fn()` returned: queuing the work takes time too, and it is "
                         "part of what the call costs. Read time.perf_counter() before calling `fn()`, and again "
                         "after its result is ready.")
        if value < 0.9 * seconds:
            return wrong("The clock stopped before the work finished: you waited for the result after the second "
                         "clock reading. Call `.numpy()` first, then read time.perf_counter().")
        if value > 1.3 * seconds + 0.05 and op.calls > 1:
            return wrong(f"That is the time of several calls together (you called `fn()` {op.calls} times): return "
                         "the time of one call (for example the median of several).")
        if value > 1.3 * seconds + 0.05:
            return wrong("Your reading is longer than the work: time only the call and the wait for its result "
                         "(no sleep, no printing between the two clock readings).")
    return Feedback(True, "Right: your timer waited for the work to finish, so it measured the work (0.1 s, 0.25 s "
                          "and 0.4 s of fake GPU work), not only the time to queue it.")


# --------------------------------------------------------------------------- exercise 3
CROSSOVER_CASES = [  # (sizes, CPU seconds, GPU seconds); the comment gives the answer
    ([64, 256, 1024, 4096], [1e-5, 2e-4, 9e-3, 0.6], [3e-5, 1e-4, 6e-4, 2e-2]),  # 256, the notebook's example
    ([64, 256, 1024, 4096], [1e-5, 2e-4, 9e-3, 0.6], [2e-5, 4e-4, 2e-2, 0.9]),  # None: the GPU never wins
    ([64, 256, 1024, 4096], [4e-5, 2e-4, 9e-3, 0.6], [3e-5, 3e-4, 6e-4, 2e-2]),  # 1024: wins at 64, loses at 256
    ([100, 200, 400], [0.02, 0.1, 0.8], [0.001, 0.002, 0.01]),  # 100: wins everywhere
    ([128, 512, 2048], [1e-4, 3e-3, 0.2], [1e-3, 1e-3, 0.01]),  # 512
    ([128, 256, 512, 1024], [2e-4, 1e-3, 4e-3, 3e-2], [1e-4, 5e-4, 5e-3, 1e-2]),  # 1024: wins, wins, loses, wins
    ([256, 512, 1024, 2048], [1e-3, 4e-3, 2e-2, 0.15], [2e-3, 4e-3, 8e-3, 0.03]),  # 1024: a tie at 512
    ([64, 256, 1024, 4096], [1e-5, 3e-4, 1e-2, 0.5], [2e-5, 1e-4, 4e-3, 0.7]),  # None: wins mid-way, loses at 4096
    ([128, 512, 2048], [1e-3, 2e-2, 0.5], [5e-4, 1e-2, 0.5]),  # None: a tie at the largest size
]


def _ties_count_as_wins(sizes: list[int], cpu_s: list[float], gpu_s: list[float]) -> int | None:
    """The crossover if a tie (gpu_s == cpu_s) counted as a GPU win: a mistake the check names."""
    found = None
    for n, c, g in zip(reversed(sizes), reversed(cpu_s), reversed(gpu_s), strict=True):
        if g > c:
            break
        found = n
    return found


def crossover(answer: Any) -> Feedback:
    """Exercise 03.3: ``crossover(sizes, cpu_s, gpu_s)``, the smallest size from which the GPU stays faster, or None.

    The GPU must be strictly faster (``gpu_s < cpu_s``; a tie is not a win) at that size and at
    every larger one; None when it is not strictly faster at the largest size.

    Example:
        >>> from helpers.timing import crossover as model_answer
        >>> crossover(model_answer).ok
        True
    """
    from helpers.timing import crossover as expected_for

    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Write a function `crossover(sizes, cpu_s, gpu_s)`; the check calls it on several made-up "
                     "sweeps, so a number alone cannot pass.")
    answers = []
    for sizes, cpu_s, gpu_s in CROSSOVER_CASES:
        got, fb = call(answer, list(sizes), list(cpu_s), list(gpu_s), show_args=True)
        if fb is not None:
            return fb
        answers.append(got)
    if all(got is None for got in answers):
        return returned_none("crossover")
    for (sizes, cpu_s, gpu_s), got in zip(CROSSOVER_CASES, answers, strict=True):
        expected = expected_for(sizes, cpu_s, gpu_s)
        if got == expected and type(got) is type(expected) or (expected is not None and number(got) == expected):
            continue
        return _crossover_hint(sizes, cpu_s, gpu_s, got, expected)
    return Feedback(True, f"Right: your function finds the size from which the GPU stays strictly faster, and None "
                          f"when it does not ({len(CROSSOVER_CASES)} made-up sweeps, with a tie and a GPU that wins "
                          "mid-way, then loses).")


def _crossover_hint(sizes: list[int], cpu_s: list[float], gpu_s: list[float], got: Any, expected: Any) -> Feedback:
    from helpers.timing import crossover as expected_for

    shown = f"sizes {sizes}, CPU {cpu_s} s, GPU {gpu_s} s"
    if isinstance(got, str):
        return wrong(f"For {shown} you returned the text {got!r}: return the size itself, a number from `sizes` "
                     "(or None), not a string.")
    first_win = next((n for n, c, g in zip(sizes, cpu_s, gpu_s, strict=True) if g < c), None)
    if expected is None and got in (0, -1, False, "", []):
        return wrong(f"For {shown} the GPU is not faster at the largest size: return None, not {got!r}.")
    if isinstance(got, int) and not isinstance(got, bool) and 0 <= got < len(sizes) and got not in sizes:
        return wrong(f"You returned a position ({got}); return the size itself, sizes[i].")
    if got == _ties_count_as_wins(sizes, cpu_s, gpu_s) and any(c == g for c, g in zip(cpu_s, gpu_s, strict=True)):
        return wrong(f"For {shown} you counted a tie as a GPU win: the GPU wins only where it is strictly faster, "
                     "gpu_s < cpu_s.")
    if got == first_win and expected != first_win:
        return wrong(f"For {shown} the GPU wins at {first_win} but loses again at a larger size: the crossover "
                     "is the size from which it wins at every larger size too.")
    if expected is not None and got in sizes and not isinstance(got, bool):
        step = sizes.index(got) - sizes.index(expected)
        if step == -1:
            return wrong(f"For {shown} you returned {got}, one size too small: at {got} the GPU is not faster. The "
                         "crossover is the first size of the winning run, not the last size before it.")
        if step == 1:
            return wrong(f"For {shown} you returned {got}, one size too far: at {expected} the GPU is already faster, "
                         "and at every larger size too.")
        if got == sizes[-1]:
            return wrong(f"For {shown} you returned the largest size, {got}: look at the smaller sizes too, from the "
                         "largest down while the GPU stays faster.")
    if expected is None:
        return wrong(f"For {shown} you returned {got!r}; the GPU is not faster at the largest size, so the answer is "
                     "None: from no size on does it win at every larger size.")
    if got is not None and got == expected_for(sizes, gpu_s, cpu_s):
        return wrong(f"For {shown} you returned where the CPU is faster: the GPU wins where its time is smaller "
                     "(gpu_s < cpu_s).")
    return wrong(f"For {shown} you returned {got!r}; the GPU is faster from {expected} on. Walk from the largest "
                 "size down while gpu_s < cpu_s.")


# --------------------------------------------------------------------------- exercise 4
PAYOFF_CASES = [  # (first_graph, steady_graph, first_xla, steady_xla) in seconds; the comment gives the answer
    (0.056, 0.00054, 0.218, 0.000455),  # 1,907: a small model's step on a 2-core CPU (made up, close to one)
    (0.25, 0.125, 1.0, 0.0625),  # 13: (1.0 - 0.25) / (0.125 - 0.0625) = 12 exactly, plus the first call
    (0.12, 0.0043, 1.47, 0.0026),  # 796: a GPU-like case
    (0.05, 0.001, 0.3, 0.0012),  # None: XLA's warm step is slower
    (0.05, 0.001, 0.3, 0.001),  # None: the same warm step, so XLA never catches up
    (0.3, 0.002, 0.2, 0.001),  # 1: XLA's first call is already faster
    (0.3, 0.001, 0.2, 0.002),  # 1: XLA's first call is faster, its warm step slower: ahead at n = 1 all the same
    (0.1, 0.002, 0.1, 0.001),  # 1: a tie on the first call; "at most" counts a tie
    (0.1, 0.002, 0.1, 0.002),  # 1: a tie on both; XLA never falls behind
]


def _strictly_ahead(fg: float, sg: float, fx: float, sx: float) -> int | None:
    """The answer if XLA had to be strictly ahead (< instead of <=): a mistake the check names."""
    if fx < fg:
        return 1
    if sx >= sg:
        return None
    return 2 + math.floor((fx - fg) / (sg - sx))


def _payoff_variants(fg: float, sg: float, fx: float, sx: float) -> dict[str, float]:
    """What plausible mistakes return for one case where XLA catches up after its first call, by mistake."""
    if sx >= sg or fx <= fg:
        return {}
    ratio = (fx - fg) / (sg - sx)
    return {"after": math.ceil(ratio), "floor": 1 + math.floor(ratio), "int plus two": 2 + int(ratio),
            "round": 1 + round(ratio), "unrounded": 1 + ratio, "own steps": fx / sx,
            "own steps up": math.ceil(fx / sx), "graph's first": 1 + math.ceil(fx / (sg - sx)),
            "no first": math.ceil(fx / (sg - sx))}


PAYOFF_HINTS = {
    "strict": "You waited until XLA is strictly ahead (<): the rule is 'at most' (<=), so a tie counts. With equal "
              "first calls XLA is not behind at n = 1, and on a whole quotient the tie comes a step earlier.",
    "after": "You counted the steps after the first call: count the first call too, so n = 1 + ceil(extra / saving).",
    "floor": "You rounded down: after that many steps XLA is still behind. Round up (math.ceil), since n must make "
             "XLA's total at most the graph's.",
    "int plus two": "On a quotient that is already whole (the case with exactly 12) you returned one step too many: "
                    "there XLA's total equals the graph's at n = 13, and 'at most' counts that tie. int(x) + 1 rounds "
                    "up only when x has a fraction (use math.ceil(x)), and a loop that waits until XLA is strictly "
                    "ahead (<) stops a step late (use <=).",
    "round": "You rounded to the nearest step: rounding down can leave XLA still behind. Round up (math.ceil).",
    "unrounded": "A number of steps is whole: round the quotient up (math.ceil) and return an int.",
    "own steps": "That is XLA's first call counted in its own warm steps. The payoff compares XLA with the plain "
                 "graph: the extra first-call cost (first_xla - first_graph) over the saving per step (steady_graph - "
                 "steady_xla).",
    "own steps up": "That is XLA's first call counted in its own warm steps. The payoff compares XLA with the plain "
                    "graph: the extra first-call cost (first_xla - first_graph) over the saving per step.",
    "graph's first": "Subtract the graph's first call too: only XLA's extra first-call cost, first_xla - first_graph, "
                     "has to be earned back.",
    "no first": "Subtract the graph's first call too: only XLA's extra first-call cost, first_xla - first_graph, has "
                "to be earned back; and count the first call in n.",
}


def _same(a: float | None, b: float) -> bool:
    return a is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _payoff_mistake(answers: list[Any]) -> str | None:
    """The mistake whose values match the learner's on every case where XLA catches up after its first call."""
    values = [number(a) if not isinstance(a, (str, bool)) else None for a in answers]
    if all(v == _strictly_ahead(*case) for v, case in zip(values, PAYOFF_CASES, strict=True)):
        return "strict"
    table = [_payoff_variants(*case) for case in PAYOFF_CASES]
    for mistake in PAYOFF_HINTS:
        if mistake != "strict" and all(_same(v, t[mistake]) for v, t in zip(values, table, strict=True) if t):
            return mistake
    return None


def payoff(answer: Any) -> Feedback:
    """Exercise 03.4: ``payoff(first_graph, steady_graph, first_xla, steady_xla)``, steps until XLA is ahead, or None.

    The answer is :func:`helpers.timing.payoff_steps`: the smallest n (the first call included) with
    ``first_xla + (n - 1) * steady_xla <= first_graph + (n - 1) * steady_graph``; 1 when XLA's first
    call is not slower; None when its warm step is not faster.

    Example:
        >>> from helpers.timing import payoff_steps
        >>> payoff(payoff_steps).ok
        True
    """
    from helpers.timing import payoff_steps

    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Write a function `payoff(first_graph, steady_graph, first_xla, steady_xla)`; the check calls it "
                     "on several made-up timings, so a number alone cannot pass.")
    answers = []
    for case in PAYOFF_CASES:
        got, fb = call(answer, *case, show_args=True)
        if fb is not None:
            if "ZeroDivisionError" in fb.message and case[3] == case[1]:
                return wrong(f"payoff{case} divided by zero: with the same warm step XLA never catches up; check "
                             "steady_xla >= steady_graph first and return None.")
            return fb
        answers.append(got)
    if all(got is None for got in answers):
        return returned_none("payoff")
    mistake = _payoff_mistake(answers)
    for case, got in zip(PAYOFF_CASES, answers, strict=True):
        fg, sg, fx, sx = case
        shown, expected = f"payoff{case}", payoff_steps(*case)
        if expected is None:
            if got is None:
                continue
            return wrong(f"{shown} returned {got!r}: XLA's warm step is not faster than the graph's, so it never "
                         "catches up: return None, not a number (no count of steps is right).")
        if got is None and expected == 1 and fx == fg:
            return wrong(f"{shown} returned None: XLA's first call ties the graph's here, and 'at most' counts a tie: "
                         "compare with <= (first_xla <= first_graph), not <, and return 1.")
        if got is None and expected == 1 and sx >= sg:
            return wrong(f"{shown} returned None: XLA's first call is already no slower here, so it is not behind at "
                         "n = 1, whatever its warm step. Test the first call before the warm step: return 1.")
        if got is None:
            return wrong(f"{shown} returned None: XLA's first call is already no slower here, so it is ahead from "
                         "the first step: return 1." if expected == 1 else f"{shown} returned None: XLA's warm step "
                         "is faster here, so it catches up; return the step count.")
        value = number(got) if not isinstance(got, (str, bool)) else None
        if value is None:
            return wrong(f"{shown} returned {type(got).__name__} {got!r}: return a whole number of steps (an int), "
                         "or None.")
        if value == expected:
            continue
        if expected == 1 and mistake == "strict":
            return wrong(f"{shown} returned {got!r}, expected 1. {PAYOFF_HINTS[mistake]}")
        if expected == 1:
            return wrong(f"{shown} returned {got!r}: XLA's first call ({fx} s) is already no slower than the graph's "
                         f"({fg} s), so XLA is ahead from the first step: return 1.")
        if mistake is not None:
            return wrong(f"{shown} returned {got!r}, expected {expected}. {PAYOFF_HINTS[mistake]}")
        return wrong(f"{shown} returned {got!r}, expected {expected}: XLA's extra first-call cost "
                     f"({fx} - {fg} s) over its saving per step ({sg} - {sx} s), rounded up, plus the first call.")
    return Feedback(True, f"Right: n = 1 + ceil((first_xla - first_graph) / (steady_graph - steady_xla)), 1 when XLA "
                          f"starts ahead and None when it never catches up ({len(PAYOFF_CASES)} made-up timings, one "
                          "exactly on a whole step).")


# --------------------------------------------------------------------------- exercise 5
T = "tensor"  # a float32 scalar tensor passed as the factor: any value, one signature
TRACE_CASES = [  # calls of one plain tf.function f(x, factor), each (shape of x, factor); the comment gives the answer
    [((64, 784), 0.5), ((64, 784), 0.5), ((64, 784), 0.5)],  # 1: the same signature three times
    [((64, 784), 0.5), ((64, 784), 1.5), ((64, 784), 0.5)],  # 2: 0.5 comes back and reuses its graph
    [((64, 784), T), ((64, 784), T), ((32, 784), T)],  # 2: a tensor's value is not in the signature, its shape is
    [((64, 784), 0.5), ((32, 784), 0.5), ((64, 784), 1.5), ((32, 784), 0.5)],  # 3
    [((8,), 1.0), ((8,), T), ((8,), 2.0), ((8,), T), ((8,), 1.0)],  # 3: two floats and the tensor
    [((4,), 0.5)],  # 1: one call, one trace
    [((2,), 0.5), ((3,), 1.5)],  # 2: two shapes, each with its own float: two signatures, not three or four
    [((8,), T), ((8, 1), T), ((4,), T)],  # 3: (8,) and (8, 1) have as many numbers but different shapes
]


def expected_traces(calls: list[tuple[tuple[int, ...], Any]]) -> int:
    """Traces of a plain ``tf.function`` called with `calls`: one per distinct (shape, Python value or "tensor").

    Example:
        >>> expected_traces([((2,), 0.5), ((2,), 1.5), ((2,), 0.5)])
        2
    """
    return len({(tuple(shape), factor) for shape, factor in calls})


def _trace_mistakes(calls: list[tuple[tuple[int, ...], Any]]) -> dict[str, int]:
    changes = sum(1 for i, c in enumerate(calls) if i == 0 or c != calls[i - 1])
    tensors_each = len({c for c in calls if c[1] != T}) + sum(1 for c in calls if c[1] == T)
    shapes, factors = len({tuple(s) for s, _ in calls}), len({f for _, f in calls})
    return {"every call": len(calls), "consecutive": changes, "factors only": factors, "shapes only": shapes,
            "tensor values": tensors_each, "minus one": expected_traces(calls) - 1,
            "shapes plus factors": shapes + factors - 1, "shapes and factors added": shapes + factors,
            "shapes times factors": shapes * factors, "larger count": max(shapes, factors),
            "rank": len({(len(s), f) for s, f in calls})}


TRACE_HINTS = {
    "every call": "You counted a trace per call: a call whose signature was seen before reuses its graph.",
    "consecutive": "You counted a trace whenever the signature changed from the call before: tf.function keeps every "
                   "graph it traced, so a signature that comes back later reuses its graph.",
    "factors only": "You looked at the factor only: the shape of the tensor x is part of the signature too, so a new "
                    "shape traces again.",
    "shapes only": "You looked at the shapes only: a Python float is part of the signature by its value, so each new "
                   "float traces again.",
    "tensor values": "You counted each tensor factor as new: a tensor enters the signature by its shape and dtype, "
                     "not its value, so every scalar tensor shares one graph.",
    "minus one": "You counted one trace too few: the first call traces too (count traces, not retraces).",
    "shapes plus factors": "You added the distinct shapes and the distinct factors, counted apart: a trace belongs to "
                           "a (shape, factor) pair that was called, so count the distinct pairs.",
    "shapes and factors added": "You added the distinct shapes and the distinct factors, counted apart: a trace "
                                "belongs to a (shape, factor) pair that was called, so count the distinct pairs.",
    "shapes times factors": "You multiplied the distinct shapes by the distinct factors: that counts every pair that "
                            "could be called; only the (shape, factor) pairs actually called trace.",
    "larger count": "You took the larger of the distinct shapes and the distinct factors: a shape seen before with a "
                    "factor seen before can still be a new pair, so count the distinct (shape, factor) pairs.",
    "rank": "You compared the number of dimensions of x: the whole shape is in the signature, so (8,) and (8, 1), or "
            "(64, 784) and (32, 784), trace separately.",
}


def _trace_mistake(values: list[Any], tables: list[dict[str, int]], expected: list[int]) -> str | None:
    """The mistake that gives the learner's count on every list; else the only one that explains every wrong count."""
    full = [m for m in TRACE_HINTS if all(v == t[m] for v, t in zip(values, tables, strict=True))]
    if full:
        return full[0]
    wrong_at = [i for i, (v, e) in enumerate(zip(values, expected, strict=True)) if v != e]
    explain = [m for m in TRACE_HINTS if all(values[i] == tables[i][m] for i in wrong_at)]
    return explain[0] if len(explain) == 1 else None  # two or more fit: say nothing rather than blame the wrong one


def traces(answer: Any) -> Feedback:
    """Exercise 03.5: ``count_traces(calls)``, how many times a plain tf.function traces for a list of calls.

    Example:
        >>> traces(expected_traces).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong("Write a function `count_traces(calls)`; the check calls it on several call lists, so a number "
                     "alone cannot pass.")
    answers = []
    for calls in TRACE_CASES:
        got, fb = call(answer, [tuple(c) for c in calls], show_args=False)
        if fb is not None:
            return fb
        answers.append(got)
    if all(got is None for got in answers):
        return returned_none("count_traces")
    values = [number(a) if not isinstance(a, (bool, str)) else None for a in answers]
    tables = [_trace_mistakes(calls) for calls in TRACE_CASES]
    expected_all = [expected_traces(calls) for calls in TRACE_CASES]
    mistake = _trace_mistake(values, tables, expected_all)
    for calls, got, value, expected in zip(TRACE_CASES, answers, values, expected_all, strict=True):
        if value is None or not float(value).is_integer():
            return wrong(f"For {calls} you returned {got!r}: return the number of traces, a whole number (an int).")
        if value == expected:
            continue
        if mistake is not None:
            return wrong(f"For {calls} you returned {got!r}, expected {expected}. {TRACE_HINTS[mistake]}")
        return wrong(f"For {calls} you returned {got!r}, expected {expected}: one trace per distinct signature, the "
                     "shape of x with the factor's value if it is a Python float, or 'tensor' if it is one.")
    return Feedback(True, f"Right: a plain tf.function traces once per distinct signature (the shape of each tensor, "
                          f"the value of each Python number) and keeps every graph ({len(TRACE_CASES)} call lists).")

