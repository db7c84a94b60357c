"""The benchmark helper waits for asynchronous work; a naive timer does not."""

import json
import subprocess
import sys
import time

import pytest

from helpers import bench

ASYNC_EXPERIMENT = r"""
import json, statistics, time
import helpers.env
tf = helpers.env.tensorflow()
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.experimental.set_synchronous_execution(False)
from helpers import bench
a = tf.random.normal((1024, 1024))

def work():
    return [tf.matmul(a, a) for _ in range(10)]

def reference():
    # Independent synchronised measurement: copy every result to the host, which needs it finished.
    start = time.perf_counter()
    out = work()
    for x in out:
        x.numpy()
    return time.perf_counter() - start

reference(); bench.synchronize()
helper, naive, ref = [], [], []
for _ in range(5):  # interleaved, so load from other processes hits all three alike
    helper.append(bench.benchmark(work, warmup=0, repeats=1).median)
    naive.append(bench.time_dispatch(work, warmup=0, repeats=1).median)
    ref.append(reference())
print(json.dumps({"helper": statistics.median(helper), "naive": statistics.median(naive),
                  "reference": statistics.median(ref)}))
"""


def test_timer_waits_for_async_work_and_naive_timer_does_not():
    out = subprocess.run([sys.executable, "-c", ASYNC_EXPERIMENT], capture_output=True, text=True, check=True)
    t = json.loads(out.stdout.strip().splitlines()[-1])
    ratio = t["helper"] / t["reference"]
    assert 0.8 <= ratio <= 1.25, f"helper vs synchronised reference: {ratio:.2f}x ({t})"
    assert t["reference"] / t["naive"] >= 10, f"naive timer only {t['reference'] / t['naive']:.1f}x off ({t})"


def test_benchmark_reports_median_spread_and_repeats():
    calls = []
    r = bench.benchmark(lambda: calls.append(time.sleep(0.002)), warmup=2, repeats=4)
    assert len(calls) == 6 and len(r.times) == 4
    assert r.min <= r.median <= max(r.times) and r.median >= 0.002
    assert r.iqr >= 0 and r.spread >= 0 and "median" in str(r)


def test_benchmark_calls_sync_before_each_clock_stop():
    events = []
    bench.benchmark(lambda: events.append("run"), warmup=1, repeats=2, sync=lambda: events.append("sync"))
    assert events == ["run", "sync", "sync", "run", "sync", "run", "sync"]


@pytest.mark.parametrize("kwargs, match", [
    ({"warmup": -1}, "warmup=-1"), ({"repeats": 0}, "repeats=0"), ({"repeats": 2.5}, "repeats=2.5")])
def test_benchmark_rejects_bad_counts(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bench.benchmark(lambda: None, **kwargs)


def test_gflops_of_a_matmul():
    assert bench.gflops(2 * 1000**3, 2.0) == 1.0
    with pytest.raises(ValueError, match="seconds"):
        bench.gflops(1, 0)
