"""Notebook 03's asynchronous demo, run against a fake GPU whose kernels outlive TensorFlow's host queue.

On a GPU, ``context.async_wait()`` returns once TensorFlow's host-side queue is empty, that is once
the kernels are queued on the GPU's stream; only ``SyncDevice`` (``tf.test.experimental.sync_devices``)
or reading a result waits for the stream (tensorflow/python/framework/test_util.py, ``sync_devices``;
tensorflow/python/eager/context.py, ``async_wait``). The fake below behaves that way, so the demo's
script and the cell that reads it can be checked for what a GPU run would print.
"""

from __future__ import annotations

import json
import runpy
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import helpers
from helpers import timing

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "03_cpu_vs_gpu_timing.ipynb"
KERNEL_S = 0.02  # each fake matmul keeps the fake GPU busy this long
HOST = "context.async_wait() (host queue only)"


class FakeGpuTF:
    """One GPU stream: kernels run one after another; the host only queues them."""

    def __init__(self):
        self.free_at = 0.0  # when the stream finishes what is queued
        gpu = self
        self.config = SimpleNamespace(experimental=SimpleNamespace(
            set_synchronous_execution=lambda on: None, enable_tensor_float_32_execution=lambda on: None))
        self.test = SimpleNamespace(experimental=SimpleNamespace(sync_devices=self.sync_devices))
        self.random = SimpleNamespace(normal=lambda shape: [object()] * shape[0])

        class Result:
            def __init__(self, done_at):
                self.done_at = done_at

            def numpy(self):  # a copy to the host waits for this kernel
                gpu._sleep_until(self.done_at)
                return 0.0

        self.Result = Result

    @staticmethod
    def _sleep_until(t):
        while time.perf_counter() < t:
            time.sleep(max(0.0, min(0.005, t - time.perf_counter())))

    def matmul(self, a, b):
        start = max(time.perf_counter(), self.free_at)
        self.free_at = start + KERNEL_S
        return self.Result(self.free_at)

    def sync_devices(self):  # SyncDevice: waits for the stream
        self._sleep_until(self.free_at)


def _script(tmp_path):
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    parts = ["".join(c["source"]) for c in cells if "".join(c["source"]).startswith("%%writefile")
             and "async_matmuls.py" in c["source"][0]]  # written, then appended to (%%writefile -a)
    assert parts and parts[0].startswith("%%writefile \"") and all(p.startswith("%%writefile -a") for p in parts[1:])
    path = tmp_path / "async_matmuls.py"
    path.write_text("\n".join(part.split("\n", 1)[1] for part in parts))
    return path


@pytest.fixture
def gpu_run(tmp_path, monkeypatch, capsys):
    gpu = FakeGpuTF()
    context = SimpleNamespace(async_wait=lambda: None)  # the host queue is empty once the kernels are queued
    monkeypatch.setattr(helpers.env, "tensorflow", lambda: gpu)
    monkeypatch.setitem(sys.modules, "tensorflow.python.eager", SimpleNamespace(context=context))
    monkeypatch.setattr(sys, "argv", ["async_matmuls.py", "64"])
    runpy.run_path(str(_script(tmp_path)), run_name="__main__")
    gpu.sync_devices()  # let the fake GPU finish before the next test
    return {wait: tuple(t) for wait, t in json.loads(capsys.readouterr().out.strip().splitlines()[-1]).items()}


def test_each_row_starts_from_an_idle_device_and_the_host_queue_row_is_labelled(gpu_run):
    work = 10 * KERNEL_S
    synced, numpy_row, host = gpu_run["sync_devices()"], gpu_run[".numpy() on each result"], gpu_run[HOST]
    assert 0.9 * work <= synced[1] <= 1.4 * work, f"sync_devices() row: {synced}"
    # No leftover from the row before: .numpy() pays for its own ten kernels only, not twenty.
    assert 0.9 * work <= numpy_row[1] <= 1.4 * work, f".numpy() row paid for earlier work: {numpy_row}"
    assert host[1] < 0.5 * work, f"a host-queue wait on a GPU returns before the kernels finish: {host}"


def test_the_reading_takes_synced_s_from_the_device_wait_and_says_async_wait_did_not_wait(gpu_run, capsys):
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    cell = next("".join(c["source"]) for c in cells if "dispatch_only_s, synced_s" in "".join(c["source"]))
    results = {}
    # Spreads set to 0: the host-queue row times microseconds of dispatch, whose spread is noise by nature and
    # would make the reading (rightly) refuse to compare; the noise branches have their own tests.
    steady = {wait: (returned, waited, 0.0) for wait, (returned, waited, _) in gpu_run.items()}
    exec(cell, {"helpers": helpers, "times": steady, "where": "GPU", "results": results})
    printed = capsys.readouterr().out
    assert results["synced_s"] == gpu_run["sync_devices()"][1] and results["dispatch_only_s"] == gpu_run[
        "sync_devices()"][0]
    assert results["synced_s"] >= 0.9 * 10 * KERNEL_S
    assert "each waited for the work" in printed and "while the GPU was still running them" in printed
    waited = printed.split("each waited for the work")[0]
    assert HOST not in waited.splitlines()[-1], "the host-queue wait is counted among those that waited"
    assert timing.closing_note(results)[0].startswith("Asynchronous execution: the naive timer read")
