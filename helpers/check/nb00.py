"""Checks for notebook 00 · environment check (section "Exercises").

Both exercises ask for a function, and the checks call it on inputs they make up: device lists of
machines with 0, 1 and 4 GPUs, and GPU table rows of every compute capability. An answer that is
right only on this machine (the constant 0 on a laptop without a GPU) does not pass.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from helpers.check._feedback import Feedback, call, not_filled, returned_none, whole_number, wrong

__all__ = ["count_gpus", "has_bf16_tensor_cores"]


def _device(kind: str, index: int) -> SimpleNamespace:
    return SimpleNamespace(name=f"/physical_device:{kind}:{index}", device_type=kind)


# Made-up machines: what tf.config.list_physical_devices() returns on each.
MACHINES: dict[str, list[Any]] = {
    "a laptop without a GPU": [_device("CPU", 0)],
    "a Colab T4 runtime": [_device("CPU", 0), _device("GPU", 0)],
    "a 4-GPU server": [_device("CPU", 0)] + [_device("GPU", i) for i in range(4)],
    "a server with 2 CPUs and 2 GPUs": [_device("CPU", 0), _device("CPU", 1), _device("GPU", 0), _device("GPU", 1)],
}




def count_gpus(answer: Any) -> Feedback:
    """Exercise 00.1: a function ``count_gpus(devices)`` that counts the GPUs in a device list.

    `devices` is what ``tf.config.list_physical_devices()`` returns: objects with ``.name`` and
    ``.device_type``. The check calls the function on four made-up machines.

    Example:
        >>> count_gpus(lambda devices: sum(d.device_type == "GPU" for d in devices)).ok
        True
        >>> count_gpus(lambda devices: 0).ok  # right on a laptop, wrong on a GPU machine
        False
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong(f"Define a function, `def count_gpus(devices): ...`, not a {type(answer).__name__}: the "
                     "check calls it on device lists of other machines (a constant is right on one machine only).")
    counts = {}  # machine -> the count the function gave
    for machine, devices in MACHINES.items():
        got, failed = call(answer, list(devices))
        if failed is not None:
            return failed
        if got is None:
            return returned_none("count_gpus")
        if isinstance(got, list):
            return wrong("Your function returns a list of devices; count them with len(...) or sum(...).")
        got = whole_number(got)
        if isinstance(got, Feedback):
            return got
        counts[machine] = got
    for machine, devices in MACHINES.items():
        expected, got = sum(d.device_type == "GPU" for d in devices), counts[machine]
        if got == expected:
            continue
        if len(set(counts.values())) == 1:
            return wrong(f"Your function gives {got} on every machine, from 0 to 4 GPUs: either it ignores the list it "
                         "is given (for example it asks TensorFlow about this machine), or its test never matches "
                         "(device_type is 'GPU', in capitals). Count the GPUs in `devices`.")
        if got == len(devices) - 1:
            return wrong(f"On {machine} your function gives {got}: that counts every device but one, as if a "
                         "machine had exactly one CPU. Count only the devices whose device_type is 'GPU'.")
        if got == len(devices):
            return wrong(f"On {machine} your function gives {got}: that counts every device, CPUs included. "
                         "Count only those whose device_type is 'GPU'.")
        return wrong(f"On {machine} your function gives {got}, but it has {expected} GPU(s). Count the devices "
                     "whose device_type is 'GPU'.")
    return Feedback(True, "Right on all four machines (0, 1, 4 and 2 GPUs): your function counts the entries with "
                          "device_type 'GPU'.")


# Made-up GPU table rows: one per compute capability the rule must handle.
_ROWS = [
    {"name": "Pascal card", "compute_capability": 6.1},
    {"name": "Volta card", "compute_capability": 7.0},
    {"name": "Turing card", "compute_capability": 7.5},
    {"name": "Ampere card (8.0)", "compute_capability": 8.0},
    {"name": "Ampere card (8.6)", "compute_capability": 8.6},
    {"name": "Ada card", "compute_capability": 8.9},
    {"name": "Hopper card", "compute_capability": 9.0},
    {"name": "Blackwell card", "compute_capability": 12.0},
]


def has_bf16_tensor_cores(answer: Any, rows: list[dict[str, Any]] | None = None) -> Feedback:
    """Exercise 00.2: a function ``has_bf16_tensor_cores(gpu)`` that says whether a GPU table row has
    bfloat16 Tensor Cores: compute capability 8.0 or higher.

    The check calls it on every row of the course's GPU table and on made-up rows from 6.1 to 12.0.

    Example:
        >>> has_bf16_tensor_cores(lambda gpu: gpu["compute_capability"] >= 8.0).ok
        True
        >>> has_bf16_tensor_cores(lambda gpu: gpu["compute_capability"] > 8.0).ok  # misses the A100
        False
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong(f"Define a function, `def has_bf16_tensor_cores(gpu): ...`, that takes one table row (a dict) "
                     f"and returns True or False, not a {type(answer).__name__}.")
    if rows is None:
        from helpers import data

        rows = data.load_gpu_specs()
    for row in [*rows, *_ROWS]:
        got, failed = call(answer, dict(row))
        if failed is not None:
            return failed
        if got is None:
            return returned_none("has_bf16_tensor_cores")
        if not isinstance(got, bool) and type(got).__name__ != "bool_":
            return wrong(f"For {row['name']} your function returns {got!r}; return True or False.")
        expected = row["compute_capability"] >= 8.0
        if bool(got) != expected:
            cc = row["compute_capability"]
            just_above = call(answer, {"name": "probe", "compute_capability": 8.01})[0]
            if cc == 8.0 and bool(just_above) is True:  # true just above 8.0, false at 8.0: a strict comparison
                return wrong(f"{row['name']} has compute capability exactly 8.0 and has bfloat16 Tensor Cores: "
                             "use >= 8.0, not > 8.0.")
            if expected:
                return wrong(f"{row['name']} (compute capability {cc}) has bfloat16 Tensor Cores, but your function "
                             "says no. Compare the number: compute_capability >= 8.0 (newer GPUs count too).")
            return wrong(f"{row['name']} (compute capability {cc}) has no bfloat16 Tensor Cores (float16 at most, "
                         "from 7.0), but your function says yes. bfloat16 starts at 8.0.")
    return Feedback(True, "Right on every row of the GPU table and on made-up GPUs from compute capability 6.1 to "
                          "12.0: bfloat16 Tensor Cores from 8.0 (Ampere) on.")
