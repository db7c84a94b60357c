"""Where TensorFlow runs each operation, and what a fresh Python process sees (notebook 02).

Two things are awkward to show inside a running notebook, and this module handles both:

* ``tf.debugging.set_log_device_placement(True)`` writes its lines through TensorFlow's C++ logger
  to the process's stderr, mixed with other C++ noise (and hidden at the course's log level).
  :func:`where_ops_run` records placement from the result tensors' ``.device`` instead.
* Device settings (``CUDA_VISIBLE_DEVICES``, logical devices, the C++ log level) only take effect
  before TensorFlow starts. :func:`run_children` starts fresh Python processes that import
  TensorFlow with the settings you give them and answer in JSON; their stderr is captured, never
  shown on the learner's page.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.tables import text_table

ROOT = Path(__file__).resolve().parent.parent

_DEVICE_RE = re.compile(r"(?:device:|^/?)([A-Za-z_]+):(\d+)$")  # long form, or short "/CPU:0", "CPU:0"


def short_device(device: str) -> str:
    """The short form ``'CPU:0'`` of a TensorFlow device string; '' when it names no device.

    Example:
        >>> short_device("/job:localhost/replica:0/task:0/device:CPU:0")
        'CPU:0'
        >>> short_device("/device:GPU:1")
        'GPU:1'
    """
    if not isinstance(device, str):
        raise ValueError(f"device={device!r}: pass a device string such as '/device:CPU:0'.")
    match = _DEVICE_RE.search(device.strip())
    return f"{match.group(1).upper()}:{match.group(2)}" if match else ""


def where_ops_run(ops: Mapping[str, Callable[[], Any]]) -> dict[str, str]:
    """Run each operation once and return ``{name: device string of its result}``.

    Each value of `ops` is a function without arguments that returns a tensor (or a list/tuple
    whose first element is one). The device is the tensor's ``.device``: where TensorFlow really
    ran the operation, after soft placement, in the long form
    ``/job:localhost/replica:0/task:0/device:CPU:0``.

    Example:
        >>> import tensorflow as tf
        >>> where = where_ops_run({"add": lambda: tf.constant(1.0) + 1.0})
        >>> short_device(where["add"]) in ("CPU:0", "GPU:0")
        True
    """
    if not isinstance(ops, Mapping) or not ops:
        raise ValueError("ops must be a non-empty dict {name: function returning a tensor}.")
    placements: dict[str, str] = {}
    for name, fn in ops.items():
        if not callable(fn):
            raise ValueError(f"ops[{name!r}] is {type(fn).__name__}: pass a function, e.g. lambda: tf.matmul(a, b).")
        result = fn()
        if isinstance(result, (list, tuple)) and result:
            result = result[0]
        device = getattr(result, "device", None)
        if not isinstance(device, str):
            raise ValueError(f"ops[{name!r}] returned {type(result).__name__}, which has no .device: return a tensor.")
        placements[name] = device
    return placements


def placement_table(placements: Mapping[str, str]) -> str:
    """Format ``{op name: device}`` as a two-column text table with the short device names.

    Example:
        >>> print(placement_table({"matmul": "/job:localhost/replica:0/task:0/device:CPU:0"}))
        operation  ran on
        matmul     CPU:0
    """
    rows = [("operation", "ran on")] + [(name, short_device(dev) or dev or "(unknown)")
                                        for name, dev in placements.items()]
    return text_table(rows)


# --------------------------------------------------------------------------- child processes
CHILD_CODE = r'''
import json, os, sys
options = json.loads(sys.argv[1])
import tensorflow as tf
notes = []
if options.get("logical_devices"):
    from helpers.session import configure_devices
    notes = configure_devices(tf, memory_growth=True, logical_devices=options["logical_devices"])
if options.get("log_placement"):
    tf.debugging.set_log_device_placement(True)
a = tf.ones((64, 64))
product = tf.matmul(a, a)
print(json.dumps({
    "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    "physical_gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
    "logical_devices": [d.name for d in tf.config.list_logical_devices()],
    "matmul_device": product.device,
    "notes": notes,
}))
'''


@dataclass
class ChildResult:
    """What one fresh Python process reported (``answer``), or why it failed (``error``)."""

    label: str
    env: dict[str, str | None]
    answer: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""
    seconds: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def gpu_count(self) -> int | None:
        return len(self.answer["physical_gpus"]) if self.ok else None

    def stderr_lines(self, contains: str) -> list[str]:
        """The child's stderr lines that contain `contains` (e.g. ``'Executing op MatMul'``)."""
        return [line for line in self.stderr.splitlines() if contains in line]


def _child_environ(overrides: Mapping[str, str | None], base: Mapping[str, str] | None = None) -> dict[str, str]:
    environ = dict(os.environ if base is None else base)
    environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for key, value in overrides.items():
        if value is None:
            environ.pop(key, None)
        else:
            environ[key] = value
    # The child must import the same helpers (on Colab they are on sys.path, not installed).
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), environ.get("PYTHONPATH", "")) if p)
    return environ


def run_children(children: Mapping[str, Mapping[str, Any]], timeout: float = 120.0,
                 python: str | None = None) -> dict[str, ChildResult]:
    """Start one fresh Python per entry (all at once), each importing TensorFlow; collect JSON answers.

    Each value is a dict with optional keys ``env`` (``{name: value or None}``: None removes the
    variable), ``logical_devices`` (an int: split devices with
    :func:`helpers.session.configure_devices` before TensorFlow initialises) and
    ``log_placement`` (bool). Every child reports its visible GPUs, its logical devices and where
    a small matmul ran. stdout carries the JSON answer; stderr (TensorFlow's C++ log) is captured
    into :attr:`ChildResult.stderr` and never reaches the notebook.

    Example:
        >>> out = run_children({"hidden": {"env": {"CUDA_VISIBLE_DEVICES": "-1"}}})
        >>> out["hidden"].gpu_count
        0
    """
    if not isinstance(children, Mapping) or not children:
        raise ValueError("children must be a non-empty dict {label: {'env': {...}, ...}}.")
    allowed = {"env", "logical_devices", "log_placement"}
    started = {}
    for label, spec in children.items():
        unknown = set(spec) - allowed
        if unknown:
            raise ValueError(f"children[{label!r}] has unknown key(s) {sorted(unknown)}: use {sorted(allowed)}.")
        overrides = dict(spec.get("env", {}))
        options = {"logical_devices": spec.get("logical_devices"), "log_placement": bool(spec.get("log_placement"))}
        proc = subprocess.Popen([python or sys.executable, "-c", CHILD_CODE, json.dumps(options)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=_child_environ(overrides), cwd=str(ROOT))
        started[label] = (proc, overrides, time.perf_counter())
    results = {}
    for label, (proc, overrides, start) in started.items():
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
        results[label] = result
    return results
