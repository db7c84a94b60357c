"""Tests for the exercise checks of notebook 03: model answers pass, constants and plausible mistakes get hints."""

from __future__ import annotations

import math
import sys
import time
from unittest import mock

import pytest

from helpers import bench
from helpers.check import nb03 as check
from helpers.timing import crossover as model_crossover
from helpers.timing import payoff_steps as model_payoff


def test_checks_are_exported():
    assert set(check.__all__) == {"gflops", "time_it", "crossover", "payoff", "traces"}


@pytest.mark.parametrize("fn", [check.gflops, check.time_it, check.crossover, check.payoff, check.traces])
def test_placeholder_is_not_filled(fn):
    assert "Not answered" in fn(...).message
    assert not fn(None).ok


@pytest.mark.parametrize("fn, name", [(check.gflops, "gflops"), (check.time_it, "time_it"),
                                      (check.crossover, "crossover"), (check.payoff, "payoff"),
                                      (check.traces, "count_traces")])
def test_a_function_still_returning_none_is_not_answered_yet(fn, name):
    def placeholder(*args):
        ...  # the notebook's cell before the learner writes anything

    fb = fn(placeholder)
    assert not fb.ok and fb.message.startswith(f"Not answered yet: `{name}` returns None"), fb.message


# ---------------------------------------------------------------- exercise 1: gflops(n, seconds)
def test_gflops_accepts_the_model_answer():
    fb = check.gflops(lambda n, seconds: 2 * n**3 / seconds / 1e9)
    assert fb.ok and "2·n³" in fb.message


def test_gflops_accepts_helpers_bench_gflops():
    assert check.gflops(lambda n, seconds: bench.gflops(2 * n**3, seconds)).ok


@pytest.mark.parametrize("answer, hint", [
    (214.748, "a number alone cannot pass"),  # the right value for n=1024, 10 ms, as a constant
    (lambda n, s: 214.748, "same number for every size"),
    (lambda n, s: n**3 / s / 1e9, "2 FLOPs"),
    (lambda n, s: 2 * n**3 / s, "divide by 1e9"),
    (lambda n, s: n**3 / s, "count 2 FLOPs per multiply-add"),
    (lambda n, s: 2 * n**3 / s / 2**30, "not 2**30"),
    (lambda n, s: 2 * n**3 / s / 1e12, "TFLOP/s"),
    (lambda n, s: 2 * n**3 * s / 1e9, "multiplied by the seconds"),
    (lambda n, s: 2 * n**2 / s / 1e9, "2·n³"),
    (lambda n, s: round(2 * n**3 / s / 1e9, 1), "don't round"),
    (lambda n, s: round(2 * n**3 / s / 1e9), "don't round"),
    (lambda n, s: n**2 * (2 * n - 1) / s / 1e9, "a multiply and an add per term"),
    (lambda n, s: str(2 * n**3 / s / 1e9), "return a number"),
    (lambda n: 1.0, "raised TypeError"),
])
def test_gflops_explains_mistakes(answer, hint):
    fb = check.gflops(answer)
    assert not fb.ok and hint in fb.message, fb.message


# ---------------------------------------------------------------- exercise 2: time_it(fn)
def _waits_with_numpy(fn):
    start = time.perf_counter()
    fn().numpy()
    return time.perf_counter() - start


def _waits_with_synchronize(fn):
    start = time.perf_counter()
    fn()
    bench.synchronize()
    return time.perf_counter() - start


def _does_not_wait(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@pytest.mark.parametrize("answer", [_waits_with_numpy, _waits_with_synchronize,
                                    lambda fn: bench.benchmark(fn, warmup=1, repeats=3).median])
def test_time_it_accepts_timers_that_wait(answer):
    from helpers import env

    env.tensorflow()  # synchronize() waits only when TensorFlow is imported, as in the notebook
    fb = check.time_it(answer)
    assert fb.ok, fb.message


def _constant_after_calling(fn):
    fn()
    return 0.2  # a plausible time, whatever the work


def _sleeps_instead_of_waiting(pause):
    def timer(fn):
        start = time.perf_counter()
        fn()
        time.sleep(pause)  # a guess at the work's length, not a wait for it
        return time.perf_counter() - start

    return timer


def _two_calls_in_a_row(fn):
    start = time.perf_counter()
    fn().numpy()
    fn().numpy()
    return time.perf_counter() - start


def _end_and_start_swapped(fn):
    start = time.perf_counter()
    fn().numpy()
    return start - time.perf_counter()


def _cpu_time(fn):
    start = time.process_time()
    fn().numpy()
    return time.process_time() - start


def _absolute_reading(fn):
    fn().numpy()
    return time.perf_counter()


def _absolute_wall_clock(fn):
    fn().numpy()
    return time.time()


def _waits_after_the_clock(fn):
    start = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - start
    result.numpy()
    return elapsed


def _returns_the_result(fn):
    return fn()


@pytest.mark.parametrize("answer, hint", [
    (_constant_after_calling, "same number whatever the work takes"),
    (_sleeps_instead_of_waiting(0.3), "never waited for the result"),
    (_sleeps_instead_of_waiting(1.0), "never waited for the result"),
    (_two_calls_in_a_row, "several calls together (you called `fn()` 2 times)"),
    (_end_and_start_swapped, "negative"),
    (_end_and_start_swapped, "Subtract start from end"),
    (_cpu_time, "Use wall time, time.perf_counter()"),
    (_absolute_reading, "a clock reading itself"),
    (_absolute_wall_clock, "a clock reading itself"),
    (_waits_after_the_clock, "after the second clock reading"),
    (_returns_the_result, "return the seconds it took"),
])
def test_time_it_refuses_what_the_review_found(answer, hint):
    from helpers import env

    env.tensorflow()
    fb = check.time_it(answer)
    assert not fb.ok and hint in fb.message, fb.message
    assert "milliseconds" not in fb.message


def test_time_it_refuses_every_constant_because_the_work_varies():
    lows = [0.9 * s for s in check.TIME_IT_WORK_S]
    highs = [1.3 * s + 0.05 for s in check.TIME_IT_WORK_S]
    assert max(lows) > min(highs), "some constant would fall inside every accepted range"


def test_time_it_ranges_are_tight_whatever_the_call_count():
    for seconds in check.TIME_IT_WORK_S:
        assert check._in_range(seconds * 1.05, seconds)
        assert not check._in_range(seconds * 2, seconds)  # two calls' worth, even from one call
        assert not check._in_range(seconds * 0.8, seconds)


def test_fake_result_records_a_wait_only_when_the_answer_waits():
    op = check.FakeAsyncOp(0.01)
    op()
    op.wait_all()  # the check's clean-up
    assert not op.waited
    op().numpy()
    assert op.waited
    float_op = check.FakeAsyncOp(0.01)
    assert float(float_op()) == 1.0 and float_op.waited


@pytest.mark.parametrize("answer, hint", [
    (_does_not_wait, "stopped before the work finished"),
    (lambda fn: _waits_with_numpy(fn) * 1000, "milliseconds"),
    (lambda fn: bench.benchmark(fn, warmup=0, repeats=2), "whole benchmark result"),
    (lambda fn: sum(bench.benchmark(fn, warmup=0, repeats=3).times), "several calls"),
    (lambda fn: 0.15, "never called"),
    (0.3, "a number alone cannot pass"),
    (lambda fn: None, "`time_it` returns None"),
    (lambda fn: "0.2", "return the elapsed seconds"),
    (lambda: 1.0, "raised TypeError"),
])
def test_time_it_explains_mistakes(answer, hint):
    from helpers import env

    env.tensorflow()
    fb = check.time_it(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_fake_async_op_returns_once_queued_and_its_result_waits():
    op = check.FakeAsyncOp(0.1)
    start = time.perf_counter()
    result = op()
    returned = time.perf_counter() - start
    assert check.QUEUE_SHARE * 0.1 <= returned < 0.09  # queuing takes time, the work goes on after the call
    result.numpy()
    assert time.perf_counter() - start >= 0.1 and op.calls == 1


def test_time_it_accepts_helpers_bench_synchronize_without_tensorflow():
    # The exercise text offers helpers.bench.synchronize(); the fake op honours it even where TensorFlow is
    # not imported (there the real one does nothing).
    with mock.patch.dict(sys.modules, {"tensorflow": None}):
        fb = check.time_it(_waits_with_synchronize)
        fb_loop = check.time_it(_waits_with_device_sync)
    assert fb.ok, fb.message
    assert fb_loop.ok, fb_loop.message


def _waits_with_device_sync(fn):
    sync = bench.device_sync()
    begin = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - begin


def _starts_after_the_call_returns(fn):
    result = fn()
    start = time.perf_counter()
    result.numpy()
    return time.perf_counter() - start


def _rounded_to(decimals):
    def timer(fn):
        start = time.perf_counter()
        fn().numpy()
        return round(time.perf_counter() - start, decimals)

    return timer


def _three_significant_digits(fn):
    start = time.perf_counter()
    fn().numpy()
    return float(f"{time.perf_counter() - start:.3g}")


@pytest.mark.parametrize("answer, hint", [
    (_starts_after_the_call_returns, "started the clock after `fn()` returned"),
    (_rounded_to(1), "measured times rounded"),
    (_rounded_to(2), "measured times rounded"),
    (_rounded_to(3), "measured times rounded"),
    (_three_significant_digits, "measured times rounded"),
])
def test_time_it_refuses_a_late_start_and_rounding(answer, hint):
    fb = check.time_it(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_both_checks_use_one_rounding_rule():
    assert check._rounded(0.3, 0.25123) and check._looks_rounded(0.3)  # 1 decimal, as exercise 1 refuses
    assert check._rounded(0.251, 0.25123) and check._looks_rounded(0.251)
    assert not check._looks_rounded(0.2512345678912345)


def test_time_it_restores_tensorflow_after_the_check():
    from helpers import env

    tf = env.tensorflow()
    from tensorflow.python.eager import context

    before = (context.async_wait, tf.test.experimental.sync_devices)
    check.time_it(_waits_with_synchronize)
    assert (context.async_wait, tf.test.experimental.sync_devices) == before


# ---------------------------------------------------------------- exercise 3: crossover(sizes, cpu_s, gpu_s)
def test_crossover_accepts_the_model_answer():
    fb = check.crossover(model_crossover)
    assert fb.ok and "None" in fb.message


def _walk_down_from_the_largest(sizes, cpu_s, gpu_s):  # the notebook's solution_3
    found = None
    for n, cpu, gpu in reversed(list(zip(sizes, cpu_s, gpu_s, strict=True))):
        if gpu >= cpu:
            break
        found = n
    return found


def _first_size_winning_everywhere_after(sizes, cpu_s, gpu_s):
    wins = [g < c for c, g in zip(cpu_s, gpu_s, strict=True)]
    return next((n for i, n in enumerate(sizes) if all(wins[i:])), None)


@pytest.mark.parametrize("answer", [_walk_down_from_the_largest, _first_size_winning_everywhere_after])
def test_crossover_accepts_other_right_answers(answer):
    assert check.crossover(answer).ok


def _first_win(sizes, cpu_s, gpu_s):
    return next((n for n, c, g in zip(sizes, cpu_s, gpu_s, strict=True) if g < c), None)


def _index(sizes, cpu_s, gpu_s):
    n = model_crossover(sizes, cpu_s, gpu_s)
    return None if n is None else sizes.index(n)


def _zero_for_never(sizes, cpu_s, gpu_s):
    n = model_crossover(sizes, cpu_s, gpu_s)
    return 0 if n is None else n


def _reversed(sizes, cpu_s, gpu_s):
    return model_crossover(sizes, gpu_s, cpu_s)


def _wins_here_and_at_the_next_size(sizes, cpu_s, gpu_s):
    wins = [g < c for c, g in zip(cpu_s, gpu_s, strict=True)]
    return next((n for i, n in enumerate(sizes) if wins[i] and (i + 1 == len(sizes) or wins[i + 1])), None)


def _tie_counts_as_a_win(sizes, cpu_s, gpu_s):
    found = None
    for n, cpu, gpu in reversed(list(zip(sizes, cpu_s, gpu_s, strict=True))):
        if gpu > cpu:  # `gpu <= cpu` counted as a GPU win
            break
        found = n
    return found


def _forward_tie_counts_as_a_win(sizes, cpu_s, gpu_s):
    wins = [g <= c for c, g in zip(cpu_s, gpu_s, strict=True)]
    return next((n for i, n in enumerate(sizes) if all(wins[i:])), None)


def _as_text(sizes, cpu_s, gpu_s):
    n = model_crossover(sizes, cpu_s, gpu_s)
    return None if n is None else str(n)


def _largest_if_the_gpu_wins_there(sizes, cpu_s, gpu_s):
    return sizes[-1] if gpu_s[-1] < cpu_s[-1] else None


def _never_none(sizes, cpu_s, gpu_s):
    n = model_crossover(sizes, cpu_s, gpu_s)
    return sizes[-1] if n is None else n


def _none_only_when_the_gpu_never_wins(sizes, cpu_s, gpu_s):
    if not any(g < c for c, g in zip(cpu_s, gpu_s, strict=True)):
        return None
    return model_crossover(sizes, cpu_s, gpu_s) or sizes[-1]


def test_crossover_cases_cover_the_mistakes_the_review_found():
    answers = [model_crossover(*case) for case in check.CROSSOVER_CASES]
    assert answers.count(None) >= 3, "the None branch is tested more than once"
    assert any(any(c == g for c, g in zip(cpu, gpu, strict=True)) for _, cpu, gpu in check.CROSSOVER_CASES)
    wins_mid_loses_last = [(cpu, gpu) for _, cpu, gpu in check.CROSSOVER_CASES
                           if gpu[-1] >= cpu[-1] and any(g < c for c, g in zip(cpu, gpu, strict=True))]
    assert wins_mid_loses_last, "a case where the GPU wins mid-way but loses at the largest size"


@pytest.mark.parametrize("answer, hint", [
    (256, "a number alone cannot pass"),  # right for the notebook's example, as a constant
    (lambda sizes, cpu_s, gpu_s: 256, "you returned 256"),
    (_first_win, "loses again at a larger size"),
    (_index, "a position"),
    (_zero_for_never, "return None, not 0"),
    (_reversed, "the GPU is faster from 256 on"),
    (_wins_here_and_at_the_next_size, "loses again at a larger size"),
    (_tie_counts_as_a_win, "counted a tie as a GPU win"),
    (_forward_tie_counts_as_a_win, "counted a tie as a GPU win"),
    (_as_text, "not a string"),
    (_largest_if_the_gpu_wins_there, "you returned the largest size, 4096"),
    (_never_none, "the answer is None"),
    (_none_only_when_the_gpu_never_wins, "the answer is None"),
    (lambda sizes: None, "raised TypeError"),
])
def test_crossover_explains_mistakes(answer, hint):
    fb = check.crossover(answer)
    assert not fb.ok and hint in fb.message, fb.message


# ------------------------------------------------ more plausible wrong answers, each hint naming its mistake
@pytest.mark.parametrize("answer, hint", [
    (lambda n, s: 2 * n**3 // s // 1e9, "`//` (floor division)"),
    (lambda n, s: int(2 * n**3 / s / 1e9), "cut to whole numbers"),
    (lambda n, s: 2 * n ^ 3 / s / 1e9, "bitwise XOR"),  # raises TypeError: int ^ float
    (lambda n, s: (2 * n ^ 3) / s / 1e9, "bitwise XOR"),  # runs, with the wrong value
    (lambda n, s: 2 * n**2 / s / 1e9, "2·n² FLOPs"),
    (lambda n, s: 2 * n**3 / s / 1e6, "not 1e6 (mega)"),
    (lambda n, s: round(2 * n**3 / s / 1e9), "don't round"),
])
def test_gflops_names_the_mistake_actually_made(answer, hint):
    fb = check.gflops(answer)
    assert not fb.ok and hint in fb.message, fb.message


@pytest.mark.parametrize("answer", [lambda n, s: n**3 * 2 / s * 1e-9, lambda n, s: (2 * n * n * n) / (s * 10**9)])
def test_gflops_accepts_right_answers_written_differently(answer):
    assert check.gflops(answer).ok


def _nanoseconds(fn):
    start = time.perf_counter_ns()
    fn().numpy()
    return time.perf_counter_ns() - start


def _whole_seconds(fn):
    start = time.perf_counter()
    fn().numpy()
    return round(time.perf_counter() - start)


def _truncated(fn):
    start = time.perf_counter()
    fn().numpy()
    return int(time.perf_counter() - start)


def _never_calls_numpy(fn):
    start = time.perf_counter()
    fn().numpy  # noqa: B018 - the method is named, never called: no wait
    return time.perf_counter() - start


@pytest.mark.parametrize("answer, hint", [
    (_nanoseconds, "nanoseconds"),
    (_whole_seconds, "returns whole seconds"),
    (_truncated, "returns whole seconds"),
    (_waits_after_the_clock, "after the second clock reading"),
    (_never_calls_numpy, "returns as soon as the work is queued"),
])
def test_time_it_names_the_mistake_actually_made(answer, hint):
    fb = check.time_it(answer)
    assert not fb.ok and hint in fb.message, fb.message


def _with_time_time(fn):
    begin = time.time()
    out = fn()
    float(out)  # converting the result to a Python number waits for it too
    return time.time() - begin


def _with_monotonic(fn):
    t0 = time.monotonic()
    bench.synchronize() if fn().numpy() is None else None
    return time.monotonic() - t0


@pytest.mark.parametrize("answer", [_with_time_time, _with_monotonic])
def test_time_it_accepts_right_answers_written_differently(answer):
    assert check.time_it(answer).ok


def _last_size_where_the_cpu_wins(sizes, cpu_s, gpu_s):
    found = None
    for n, c, g in zip(sizes, cpu_s, gpu_s, strict=True):
        if g >= c:
            found = n
    return found


def _one_size_too_far(sizes, cpu_s, gpu_s):
    right = model_crossover(sizes, cpu_s, gpu_s)
    if right is None:
        return None
    i = sizes.index(right)
    return sizes[min(i + 1, len(sizes) - 1)]


@pytest.mark.parametrize("answer, hint", [
    (_last_size_where_the_cpu_wins, "one size too small"),
    (_one_size_too_far, "one size too far"),
    (lambda sizes, cpu_s, gpu_s: next((n for n, c, g in zip(sizes, cpu_s, gpu_s, strict=True) if g < c), None),
     "loses again"),
    (lambda sizes, cpu_s, gpu_s: sizes[-1] if gpu_s[-1] < cpu_s[-1] else None, "you returned the largest size"),
    (lambda sizes, cpu_s, gpu_s: str(model_crossover(sizes, cpu_s, gpu_s)), "not a string"),
])
def test_crossover_names_the_mistake_actually_made(answer, hint):
    fb = check.crossover(answer)
    assert not fb.ok and hint in fb.message, fb.message


# ---------------------------------------------------------------- the exercise text agrees with the checks
def _exercise_text():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).parents[1] / "notebooks" / "03_cpu_vs_gpu_timing.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_exercise_text_states_the_checks_own_work_times_and_case_counts():
    text = _exercise_text()
    works = ", ".join(f"{s:g} s" for s in check.TIME_IT_WORK_S[:-1]) + f" and {check.TIME_IT_WORK_S[-1]:g} s"
    assert f"whose work takes {works}" in text
    words = {5: "five", 9: "nine"}
    assert f"calls it on {words[len(check.GFLOPS_CASES)]} made-up sizes and times" in text
    assert f"calls it on {words[len(check.CROSSOVER_CASES)]} made-up sweeps" in text
    assert "0.15 s" not in text and "0.3 s" not in text


# ---------------------------------------------------------------- exercise 4: payoff(first_graph, steady_graph, ...)
def _solution_4(first_graph, steady_graph, first_xla, steady_xla):
    if first_xla <= first_graph:
        return 1
    if steady_xla >= steady_graph:
        return None
    return 1 + math.ceil((first_xla - first_graph) / (steady_graph - steady_xla))


def _guarded(body):
    """A learner's formula for the catching-up case, with the two edge cases right."""
    def answer(fg, sg, fx, sx):
        if fx <= fg:
            return 1
        if sx >= sg:
            return None
        return body(fg, sg, fx, sx)
    return answer


def _by_counting(fg, sg, fx, sx):  # walks step by step: no formula at all
    if fx <= fg:
        return 1
    if sx >= sg:
        return None
    n, graph, xla = 1, fg, fx
    while xla > graph:
        n, graph, xla = n + 1, graph + sg, xla + sx
    return n


def _by_floor_division(fg, sg, fx, sx):  # -(-a // b) rounds up; a whole float is accepted
    if fx <= fg or sx >= sg:
        return 1 if fx <= fg else None
    return 1 - (-(fx - fg) // (sg - sx))


def test_payoff_accepts_the_model_answer_and_the_timing_helper():
    assert check.payoff(_solution_4).ok
    fb = check.payoff(model_payoff)
    assert fb.ok and "1 + ceil" in fb.message


@pytest.mark.parametrize("answer", [_by_counting, _by_floor_division])
def test_payoff_accepts_right_answers_written_differently(answer):
    fb = check.payoff(answer)
    assert fb.ok, fb.message


def test_payoff_cases_cover_every_branch_and_one_exact_whole_quotient():
    answers = [model_payoff(*case) for case in check.PAYOFF_CASES]
    assert answers.count(1) == 4 and answers.count(None) == 2
    assert sum(isinstance(a, int) and a > 1 for a in answers) == 3
    assert any(fx < fg and sx >= sg for fg, sg, fx, sx in check.PAYOFF_CASES), "no case where both branches hold"
    assert any(fx == fg and sx < sg for fg, sg, fx, sx in check.PAYOFF_CASES), "no tie on the first call"
    assert any(fx == fg and sx == sg for fg, sg, fx, sx in check.PAYOFF_CASES), "no tie on both"
    assert any((fx - fg) / (sg - sx) == int((fx - fg) / (sg - sx)) for fg, sg, fx, sx in check.PAYOFF_CASES
               if sx < sg and fx > fg), "no case sits exactly on a whole number of steps"


def _steady_first(fg, sg, fx, sx):  # tests the warm step before the first call: None where the reference says 1
    if sx >= sg:
        return None
    if fx <= fg:
        return 1
    return 1 + math.ceil((fx - fg) / (sg - sx))


def _strictly_ahead_loop(fg, sg, fx, sx):  # waits until XLA is strictly ahead: < where the rule is <=
    if sx >= sg and fx >= fg:
        return None
    n = 1
    while fx + (n - 1) * sx >= fg + (n - 1) * sg:
        n += 1
    return n


def _strict_first_branch(fg, sg, fx, sx):  # `first_xla < first_graph`: a tie on both returns None
    if fx < fg:
        return 1
    if sx >= sg:
        return None
    return 1 + math.ceil((fx - fg) / (sg - sx))


@pytest.mark.parametrize("answer, hint", [
    (_steady_first, "Test the first call before the warm step"),
    (_strictly_ahead_loop, "strictly ahead (<)"),
    (_strict_first_branch, "compare with <= (first_xla <= first_graph), not <"),
])
def test_payoff_names_the_order_and_the_tie(answer, hint):
    fb = check.payoff(answer)
    assert not fb.ok and hint in fb.message, fb.message
    assert "int(x) + 1" not in fb.message, fb.message  # not blamed on rounding


def test_payoff_names_both_causes_when_their_answers_are_the_same():
    # A loop waiting for XLA to be strictly ahead, after a right first-call test, gives int(x) + 2's answers on every
    # case: the hint names both, not only the rounding.
    fb = check.payoff(_guarded(_strictly_ahead_loop))
    assert not fb.ok and "strictly ahead (<) stops a step late" in fb.message and "int(x) + 1" in fb.message


def test_payoff_accepts_a_whole_float_as_the_page_says():
    fb = check.payoff(lambda *t: None if model_payoff(*t) is None else float(model_payoff(*t)))
    assert fb.ok, fb.message
    np = pytest.importorskip("numpy")
    fb = check.payoff(lambda *t: None if model_payoff(*t) is None else np.float64(model_payoff(*t)))
    assert fb.ok, fb.message


@pytest.mark.parametrize("answer, hint", [
    (_guarded(lambda fg, sg, fx, sx: math.ceil((fx - fg) / (sg - sx))), "count the first call too"),
    (_guarded(lambda fg, sg, fx, sx: 1 + math.floor((fx - fg) / (sg - sx))), "You rounded down"),
    (_guarded(lambda fg, sg, fx, sx: 1 + (fx - fg) // (sg - sx)), "You rounded down"),
    (_guarded(lambda fg, sg, fx, sx: 2 + int((fx - fg) / (sg - sx))), "already whole"),
    (_guarded(lambda fg, sg, fx, sx: 1 + round((fx - fg) / (sg - sx))), "rounded to the nearest step"),
    (_guarded(lambda fg, sg, fx, sx: 1 + (fx - fg) / (sg - sx)), "A number of steps is whole"),
    (_guarded(lambda fg, sg, fx, sx: fx / sx), "counted in its own warm steps"),
    (_guarded(lambda fg, sg, fx, sx: 1 + math.ceil(fx / (sg - sx))), "Subtract the graph's first call too"),
    (_guarded(lambda fg, sg, fx, sx: str(1 + math.ceil((fx - fg) / (sg - sx)))), "return a whole number of steps"),
    (lambda fg, sg, fx, sx: 1 + math.ceil((fx - fg) / (sg - sx)) if sx < sg else math.inf,
     "never catches up: return None"),
    (lambda fg, sg, fx, sx: None if sx >= sg else 1 + math.ceil((fx - fg) / (sg - sx)), "return 1"),
    (lambda fg, sg, fx, sx: 1 if fx <= fg else 1 + math.ceil((fx - fg) / (sg - sx)), "divided by zero"),
    (lambda fg, sg, fx, sx: 1 if fx <= fg else None if sx > sg else 1 + math.ceil((fx - fg) / (sg - sx)),
     "divided by zero"),
])
def test_payoff_names_the_mistake_actually_made(answer, hint):
    fb = check.payoff(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_payoff_refuses_a_constant_and_a_number():
    assert "a number alone cannot pass" in check.payoff(4).message
    fb = check.payoff(lambda *times: 4)  # a constant: right on none of the cases
    assert not fb.ok and "expected 1,907" not in fb.message and "expected 1907" in fb.message, fb.message


# ---------------------------------------------------------------- exercise 5: count_traces(calls)
def _solution_5(calls):
    return len(set(calls))


def _by_a_cache(calls):  # walks the calls keeping the signatures seen, as tf.function's cache does
    seen, count = [], 0
    for shape, factor in calls:
        key = (shape, "tensor" if factor == "tensor" else float(factor))
        if key not in seen:
            seen.append(key)
            count += 1
    return count


def _by_dict(calls):  # a dict keyed by signature; a float count is accepted when whole
    return float(len(dict.fromkeys((tuple(shape), factor) for shape, factor in calls)))


@pytest.mark.parametrize("answer", [_solution_5, _by_a_cache, _by_dict, check.expected_traces])
def test_traces_accepts_right_answers_written_differently(answer):
    fb = check.traces(answer)
    assert fb.ok, fb.message


def _consecutive(calls):
    return sum(1 for i, c in enumerate(calls) if i == 0 or c != calls[i - 1])


@pytest.mark.parametrize("answer, hint", [
    (len, "a trace per call"),
    (_consecutive, "keeps every graph it traced"),
    (lambda calls: len({factor for _, factor in calls}), "the shape of the tensor x is part of the signature"),
    (lambda calls: len({shape for shape, _ in calls}), "by its value"),
    (lambda calls: len({c for c in calls if c[1] != "tensor"}) + sum(c[1] == "tensor" for c in calls),
     "not its value"),
    (lambda calls: len(set(calls)) - 1, "one trace too few"),  # off by one: counts retraces, not traces
    (lambda calls: len(set(calls)) - 1 or 1, "one trace too few"),  # the same, kept at 1 for a single signature
    (lambda calls: len({s for s, _ in calls}) + len({f for _, f in calls}) - 1, "counted apart"),
    (lambda calls: len({s for s, _ in calls}) + len({f for _, f in calls}), "counted apart"),
    (lambda calls: len({s for s, _ in calls}) * len({f for _, f in calls}), "You multiplied"),
    (lambda calls: max(len({s for s, _ in calls}), len({f for _, f in calls})), "the larger of"),
    (lambda calls: len({(len(s), f) for s, f in calls}), "number of dimensions"),
    (lambda calls: str(len(set(calls))), "a whole number"),
    (lambda calls: len(set(calls)) / 2, "a whole number"),
])
def test_traces_names_the_mistake_actually_made(answer, hint):
    fb = check.traces(answer)
    assert not fb.ok and hint in fb.message, fb.message


@pytest.mark.parametrize("answer, blamed", [
    (lambda calls: len(set(calls)) - 1 or 1, ("shapes only", "a trace per call")),
    (lambda calls: len({s for s, _ in calls}) * len({f for _, f in calls}), ("a trace per call",)),
    (lambda calls: len({(len(s), f) for s, f in calls}), ("factor only",)),
    (lambda calls: max(len({s for s, _ in calls}), len({f for _, f in calls})), ("factor only",)),
])
def test_traces_does_not_blame_a_mistake_not_made(answer, blamed):
    message = check.traces(answer).message
    assert not any(phrase in message for phrase in blamed), message


def test_traces_refuses_a_constant():
    assert "a number alone cannot pass" in check.traces(2).message
    assert not check.traces(lambda calls: 2).ok


def test_trace_cases_match_what_tensorflow_really_traces():
    tf = pytest.importorskip("tensorflow")
    def counted(seen):
        def scale(x, factor):
            seen.append(1)  # runs only while tracing
            return x * factor
        return tf.function(scale)

    for calls in check.TRACE_CASES:
        seen = []
        fn = counted(seen)
        for i, (shape, factor) in enumerate(calls):
            fn(tf.zeros(shape), tf.constant(1.0 + i) if factor == "tensor" else factor)  # a new tensor value each call
        assert len(seen) == check.expected_traces(calls) == fn.experimental_get_tracing_count(), calls

