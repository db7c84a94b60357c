"""Where TensorFlow runs each operation (notebook 02, "Where each operation runs").

``tf.debugging.set_log_device_placement(True)`` writes its lines through TensorFlow's C++ logger to
the process's stderr, mixed with other C++ noise (and hidden at the course's log level), so notebook
02 shows that log from a child process (:mod:`helpers.children`) and records placement here from the
result tensors' ``.device`` instead: :func:`where_ops_run`, :func:`placement_table`, and
:func:`short_device` for the short names (``CPU:0``) that notebooks 02, 07 and 08 print. For 02's
``CUDA_VISIBLE_DEVICES`` section, :func:`visibility_runs` gives the children's settings, all within
the GPUs this kernel was given, and :func:`first_gpu_only` the logical-device child's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from helpers.children import gpu_env
from helpers.tables import text_table

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


HIDE_ALL = "every GPU hidden"
FIRST_ONLY = "first GPU only"
AS_THIS_KERNEL = "as in this kernel"


def visibility_runs(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, dict[str, str]]]:
    """Children for notebook 02's ``CUDA_VISIBLE_DEVICES`` demo, each within this kernel's own GPU list.

    A scheduler hands a job its GPUs through ``CUDA_VISIBLE_DEVICES`` (SLURM sets ``2,3``); a child
    started without the variable would see every GPU of the machine, outside the allocation. So
    every child starts from this kernel's value (``environ``, default ``os.environ``):

    * :data:`HIDE_ALL`: ``-1`` hides every GPU;
    * :data:`FIRST_ONLY`: only the first entry of this kernel's list (``2`` under ``2,3``, ``0``
      when the variable is not set, this kernel's value when it already hides every GPU);
    * :data:`AS_THIS_KERNEL`: no change, the kernel's value (or its absence) is inherited.

    Returns ``{label: {"env": {...}}}`` for :func:`helpers.children.run_script`.

    Example:
        >>> visibility_runs({"CUDA_VISIBLE_DEVICES": "2,3"})[FIRST_ONLY]
        {'env': {'CUDA_VISIBLE_DEVICES': '2'}}
    """
    environ = os.environ if environ is None else environ
    try:  # the same rule as the children that measure one GPU: entry 0 of this kernel's list, or "0"
        first = gpu_env(0, environ)["CUDA_VISIBLE_DEVICES"]
    except ValueError:  # this kernel sees no GPU ("-1", ""): the child stays as hidden as it is
        first = environ["CUDA_VISIBLE_DEVICES"]
    return {HIDE_ALL: {"env": {"CUDA_VISIBLE_DEVICES": "-1"}},
            FIRST_ONLY: {"env": {"CUDA_VISIBLE_DEVICES": first}},
            AS_THIS_KERNEL: {}}


def first_gpu_only(args: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A :func:`helpers.children.run_script` run that sees only this kernel's first GPU, with `args`.

    Notebook 02's logical-device child splits its first GPU into logical devices. TensorFlow still
    initialises every other GPU the child sees, and without memory growth reserves nearly all of
    each; so the child sees only the first entry of this kernel's ``CUDA_VISIBLE_DEVICES`` (as
    :data:`FIRST_ONLY`: ``2`` under ``2,3``, ``0`` when unset; never a bare index under a list).

    Example:
        >>> first_gpu_only(["2"], {"CUDA_VISIBLE_DEVICES": "GPU-aaa,GPU-bbb"})
        {'args': ['2'], 'env': {'CUDA_VISIBLE_DEVICES': 'GPU-aaa'}}
    """
    if isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"args={args!r}: pass a list of strings, such as ['2'].")
    return {"args": list(args), **visibility_runs(environ)[FIRST_ONLY]}


def visibility_value(label: str, runs: Mapping[str, Mapping[str, Mapping[str, str]]],
                     environ: Mapping[str, str] | None = None) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` a child of :func:`visibility_runs` starts with, as text (``'2,3'``).

    Example:
        >>> visibility_value(AS_THIS_KERNEL, visibility_runs({}), {})
        '(not set)'
    """
    environ = os.environ if environ is None else environ
    env = runs[label].get("env", {})
    value = env["CUDA_VISIBLE_DEVICES"] if "CUDA_VISIBLE_DEVICES" in env else environ.get("CUDA_VISIBLE_DEVICES")
    return "(not set)" if value is None else value or "'' (empty)"
