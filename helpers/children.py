"""Run a Python script in fresh processes and collect the JSON each one prints.

Some lessons need a Python where TensorFlow has not started yet: device settings
(``CUDA_VISIBLE_DEVICES``, logical devices, memory growth) and allocator settings
(``TF_CPU_ALLOCATOR_USE_BFC``) apply only before TensorFlow initialises, and TensorFlow's C++
log goes to the process's stderr. A notebook writes its child script visibly (``%%writefile`` into
its scratch folder), then :func:`run_script` starts one process per label, all at once, each with
its own environment and arguments. The script prints its answer as one JSON line on stdout; stderr
is captured into :attr:`ChildResult.stderr` and never reaches the learner's page.

A child that measures a GPU gets it alone: a run's ``"gpu"`` key (see :func:`gpu_env`) sets the
child's ``CUDA_VISIBLE_DEVICES`` to this process's entry for that GPU (an index, or the UUID a
scheduler such as SLURM put in the list) and turns memory growth on, both before the child's
TensorFlow starts. Without it, a fresh TensorFlow takes nearly all the memory of every GPU it sees.

A GPU in the ``exclusive_process`` compute mode (common on clusters; ``nvmlDeviceGetComputeMode``) admits one
process at a time: while the kernel holds its CUDA context there, a child cannot create one. :func:`gpu_refusal`
says so before a child starts (notebooks 05 and 06 then measure on the CPU, and record why), and a child that
fails that way anyway comes back with :attr:`ChildResult.skipped` set instead of an unexplained error.

Used by notebooks 02 (placement log, logical devices, ``CUDA_VISIBLE_DEVICES``), 03 (asynchronous
execution), 05, 06 and 09 (peak memory under the BFC allocator).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import nvml

ROOT = Path(__file__).resolve().parent.parent

# Compute modes (helpers.nvml.compute_modes) in which a second process cannot create a CUDA context on a GPU the
# kernel already holds: exclusive_process admits one process, exclusive_thread (deprecated) one thread, prohibited none.
REFUSING_MODES = ("exclusive_process", "exclusive_thread", "prohibited")
# Why a child measurement may be missing: one of those modes, or "device_busy" when the child's CUDA refused a
# context and NVML could not tell the mode.
SKIP_REASONS = (*REFUSING_MODES, "device_busy")
# What a child's stderr holds when CUDA refuses it a context on such a GPU. TensorFlow's StreamExecutor reports
# "failed call to cuDevicePrimaryCtxRetain: " + the CUresult's name and text (GpuDriver::CreateContext in
# xla/stream_executor/cuda/cuda_driver.cc): CUresult 46, CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s)
# is/are busy or unavailable" (the CUDA driver API's text for the exclusive-process and prohibited modes); older
# TensorFlow called cudaFree(nullptr) first and wrote "CUDA runtime implicit initialization on GPU:0 failed. Status:
# all CUDA-capable devices are busy or unavailable" (BaseGPUDeviceFactory::CreateDevices, gpu_device.cc). Drivers
# before CUDA 12 answered CUDA_ERROR_INVALID_DEVICE ("invalid device ordinal") there: that one counts only on a GPU
# NVML reports in a refusing mode (busy_reason), since it also means a wrong CUDA_VISIBLE_DEVICES.
BUSY_TEXTS = ("CUDA_ERROR_DEVICE_UNAVAILABLE", "busy or unavailable")
OLD_DRIVER_BUSY_TEXTS = ("CUDA_ERROR_INVALID_DEVICE",)


@dataclass
class ChildResult:
    """What one fresh Python process reported (``answer``), or why it failed (``error``)."""

    label: str
    env: dict[str, str | None]
    answer: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""
    seconds: float = 0.0
    error: str = ""
    skipped: str = ""  # why the child could not measure on its GPU (one of SKIP_REASONS), else ""

    @property
    def ok(self) -> bool:
        return not self.error

    def stderr_lines(self, contains: str) -> list[str]:
        """The child's stderr lines that contain `contains` (e.g. ``'Executing op MatMul'``)."""
        return [line for line in self.stderr.splitlines() if contains in line]


def busy_reason(stderr: str, mode: str | None = None) -> str:
    """Why a child failed, when CUDA refused it a context on its GPU (:data:`BUSY_TEXTS` in `stderr`), else ``""``.

    The reason is the GPU's compute mode when it is one of :data:`REFUSING_MODES`, ``"device_busy"`` when NVML
    could not tell the mode, and ``""`` on a GPU NVML reports in the ``default`` mode: any number of processes may
    use that one, so its failure is an error to show, not a reason to skip.

    Example:
        >>> busy_reason("InternalError: failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_DEVICE_UNAVAILABLE")
        'device_busy'
        >>> busy_reason("OOM when allocating tensor", "exclusive_process")
        ''
    """
    if mode == "default":
        return ""
    if any(text in stderr for text in BUSY_TEXTS):
        return mode if mode in REFUSING_MODES else "device_busy"
    if mode in REFUSING_MODES and any(text in stderr for text in OLD_DRIVER_BUSY_TEXTS):
        return mode
    return ""


def context_held() -> bool:
    """Whether this process's TensorFlow has started its runtime, and so holds a CUDA context on every GPU it sees.

    TensorFlow creates its devices, and a context on each visible GPU, when its eager context initialises
    (``Context.ensure_initialized`` in tensorflow/python/eager/context.py, which sets ``_initialized``): at the first
    op or ``list_logical_devices``. False when TensorFlow is not imported.

    Example:
        >>> isinstance(context_held(), bool)
        True
    """
    eager = sys.modules.get("tensorflow.python.eager.context")
    if eager is None:
        return False
    return bool(getattr(eager.context(), "_initialized", True))


def gpu_refusal(gpu: int | None, modes: Sequence[str] | None = None, held: bool | None = None,
                environ: Mapping[str, str] | None = None) -> str:
    """Why a child process cannot use this process's ``GPU:<gpu>`` now: its compute mode, or ``""`` when it can.

    A GPU in one of :data:`REFUSING_MODES` gives a child no context while this process holds one there.

    Args:
        gpu: the index of the GPU the child would use, or None (a child on the CPU: ``""``).
        modes: the compute mode of each of this process's GPUs (default: ``helpers.nvml.compute_modes()``).
        held: whether this process holds a context there (default: :func:`context_held`).
        environ: the environment, to tell an MPS client (:func:`mps_client`; default: ``os.environ``).

    Example:
        >>> gpu_refusal(0, ["exclusive_process"], held=True)
        'exclusive_process'
        >>> gpu_refusal(0, ["default"], held=True), gpu_refusal(None)
        ('', '')
    """
    if gpu is None:
        return ""
    if not isinstance(gpu, int) or isinstance(gpu, bool) or gpu < 0:
        raise ValueError(f"gpu={gpu!r}: use the index of one of this process's GPUs (0 for GPU:0), or None.")
    modes = nvml.compute_modes() if modes is None else modes
    mode = modes[gpu] if gpu < len(modes) else "unknown"
    if mode not in REFUSING_MODES:
        return ""
    if mode == "prohibited":  # no process gets a context, held or not
        return mode
    if mps_client(environ):  # under MPS, clients share an exclusive-process GPU through its server
        return ""
    return mode if (context_held() if held is None else held) else ""


def mps_client(environ: Mapping[str, str] | None = None) -> bool:
    """Whether CUDA's processes here are MPS clients (NVIDIA's Multi-Process Service, often run on clusters).

    NVIDIA's MPS documentation recommends the EXCLUSIVE_PROCESS compute mode with MPS: the MPS server holds the
    one context and every client process shares the GPU through it, so an exclusive GPU refuses no child then.
    A client finds its server through ``CUDA_MPS_PIPE_DIRECTORY`` (default ``/tmp/nvidia-mps``, where the
    server's ``control`` pipe lives).

    Example:
        >>> mps_client({"CUDA_MPS_PIPE_DIRECTORY": "/nonexistent-mps-dir"}), mps_client({})
        (True, False)
    """
    environ = os.environ if environ is None else environ
    if environ.get("CUDA_MPS_PIPE_DIRECTORY"):
        return True
    return os.path.exists("/tmp/nvidia-mps/control")


def child_environ(overrides: Mapping[str, str | None], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a child: this one, with `overrides` applied (None removes a variable).

    The child imports the same ``helpers`` (on Colab they are on ``sys.path``, not installed), and
    TensorFlow's C++ log stays at the course's level unless an override changes it.

    Example:
        >>> child_environ({"CUDA_VISIBLE_DEVICES": "-1"}, base={})["CUDA_VISIBLE_DEVICES"]
        '-1'
    """
    environ = dict(os.environ if base is None else base)
    environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for key, value in overrides.items():
        if value is None:
            environ.pop(key, None)
        else:
            environ[key] = str(value)
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), environ.get("PYTHONPATH", "")) if p)
    return environ


def gpu_env(gpu: int | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a child needs to see only this process's TensorFlow ``GPU:<gpu>``, memory growth on.

    ``CUDA_VISIBLE_DEVICES`` becomes this process's entry for that GPU: its own list's entry when it
    has one (``2,3`` on a SLURM node gives ``GPU:0`` -> ``2``; UUIDs and MIG names are passed as they
    are), else the index. CUDA reads the list up to its first invalid entry, as TensorFlow numbers
    the GPUs it sees. ``TF_FORCE_GPU_ALLOW_GROWTH=true`` makes the child's allocator take memory as it
    needs it (TensorFlow's ``GetAllowGrowthValue`` reads it when the GPU allocator is made) instead of
    nearly all of it at start. The child inherits ``CUDA_DEVICE_ORDER`` from this process, so an index
    means the same GPU.
    ``gpu=None`` (a child that runs on the CPU, or a machine without a GPU) changes nothing: ``{}``.

    Example:
        >>> gpu_env(None)
        {}
        >>> gpu_env(0, environ={})
        {'CUDA_VISIBLE_DEVICES': '0', 'TF_FORCE_GPU_ALLOW_GROWTH': 'true'}
        >>> gpu_env(1, environ={"CUDA_VISIBLE_DEVICES": "2,3"})["CUDA_VISIBLE_DEVICES"]
        '3'
    """
    if gpu is None:
        return {}
    if not isinstance(gpu, int) or isinstance(gpu, bool) or gpu < 0:
        raise ValueError(f"gpu={gpu!r}: use the index of one of this process's GPUs (0 for GPU:0), or None.")
    environ = os.environ if environ is None else environ
    entries = nvml.visible_entries(environ.get("CUDA_VISIBLE_DEVICES"))
    if entries is not None:
        if gpu >= len(entries):
            raise ValueError(f"gpu={gpu}: this process sees {len(entries)} GPU(s) through CUDA_VISIBLE_DEVICES="
                             f"{environ['CUDA_VISIBLE_DEVICES']!r}; use an index below {len(entries)}.")
        visible = entries[gpu]
    else:
        visible = str(gpu)
    return {"CUDA_VISIBLE_DEVICES": visible, "TF_FORCE_GPU_ALLOW_GROWTH": "true"}


def run_script(script: str | os.PathLike[str], runs: Mapping[str, Mapping[str, Any]], timeout: float = 120.0,
               python: str | None = None) -> dict[str, ChildResult]:
    """Start `script` once per entry of `runs` (all at once) and collect each one's JSON answer.

    Args:
        script: a Python file that prints its answer as a JSON object on the last line of stdout.
        runs: ``{label: {"env": {NAME: value or None}, "args": [str, ...], "gpu": index or None}}``; every
            key optional. ``"gpu"``: the child sees only this process's ``GPU:<index>``, with memory
            growth on (:func:`gpu_env`); None or absent: the child sees what this process sees.
        timeout: seconds each child may take; a child still running then is killed.
        python: the interpreter (default: this one).

    Returns:
        ``{label: ChildResult}`` in the order of `runs`. A child that fails or prints no JSON gets
        an ``error`` (the last line of its stderr); nothing raises, so a notebook can show it. A child on a
        GPU that CUDA refused a context (:func:`busy_reason`) also gets ``skipped``: the GPU's compute mode.

    Example:
        >>> import pathlib, tempfile
        >>> script = pathlib.Path(tempfile.mkdtemp()) / "echo.py"
        >>> _ = script.write_text("import json, sys; print(json.dumps({'args': sys.argv[1:]}))")
        >>> run_script(script, {"a": {"args": ["1"]}})["a"].answer
        {'args': ['1']}
    """
    script = Path(script)
    if not script.is_file():
        raise ValueError(f"script={str(script)!r}: no such file. Write it first (for example with %%writefile).")
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError("runs must be a non-empty dict {label: {'env': {...}, 'args': [...]}}.")
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"timeout={timeout!r}: use a positive number of seconds.")
    allowed = {"env", "args", "gpu"}
    devices = {}
    for label, spec in runs.items():
        unknown = set(spec) - allowed
        if unknown:
            raise ValueError(f"runs[{label!r}] has unknown key(s) {sorted(unknown)}: use {sorted(allowed)}.")
        if not isinstance(spec.get("args", []), Sequence) or isinstance(spec.get("args"), str):
            raise ValueError(f"runs[{label!r}]['args'] must be a list of strings.")
        devices[label] = gpu_env(spec.get("gpu"))
        both = set(devices[label]) & set(spec.get("env", {}))
        if both:
            raise ValueError(f"runs[{label!r}] sets {sorted(both)} in 'env' and through 'gpu': keep one of them.")
    started = {}
    for label, spec in runs.items():
        overrides = {**devices[label], **spec.get("env", {})}
        args = [str(a) for a in spec.get("args", [])]
        proc = subprocess.Popen([python or sys.executable, str(script), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=child_environ(overrides), cwd=str(ROOT))
        started[label] = (proc, overrides, time.perf_counter())
    collected = {label: _collect(label, proc, overrides, start, timeout) for label, (proc, overrides, start)
                 in started.items()}
    if any(c.error and c.stderr and runs[label].get("gpu") is not None for label, c in collected.items()):
        modes = nvml.compute_modes()
        for label, child in collected.items():
            gpu = runs[label].get("gpu")
            if child.error and gpu is not None:
                child.skipped = busy_reason(child.stderr, modes[gpu] if gpu < len(modes) else None)
    return collected


def _collect(label: str, proc: subprocess.Popen, overrides: dict[str, Any], start: float,
             timeout: float) -> ChildResult:
    result = ChildResult(label=label, env=overrides)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        result.error = f"no answer within {timeout:.0f} s"
    result.seconds = time.perf_counter() - start
    result.stderr = err
    if not result.error:
        lines = [line for line in out.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            tail = (err.strip().splitlines() or ["(no stderr)"])[-1]
            result.error = f"exit code {proc.returncode}: {tail}"
        else:
            result.answer = json.loads(lines[-1])
    return result
