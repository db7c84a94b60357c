"""Checks for notebook 02 · GPU detection and device placement (section "Exercises").

Both exercises ask for a function, and the checks call it:

* ``matmul_on(device, a, b)`` runs on every logical device of this kernel, and once more on a
  device that does not exist with soft placement off: a function that ignores ``device`` (and so
  would pass on a CPU-only machine by luck) is caught because it does not fail there.
* ``choose_gpu(readings, need_bytes)`` runs on made-up servers chosen so that a fixed index, the
  least busy GPU without the memory test, and the filter ``memory_used < need`` all go wrong.
"""

from __future__ import annotations

import numbers
from typing import Any

from helpers.check._feedback import Feedback, call, not_filled, returned_none, wrong
from helpers.monitor import EXAMPLE_READINGS
from helpers.nvml import NvmlReading

__all__ = ["matmul_on", "choose_gpu", "SERVERS"]

GIB = 1024**3




def matmul_on(answer: Any, tf: Any | None = None) -> Feedback:
    """Exercise 02.1: ``matmul_on(device, a, b)`` returns ``a @ b`` computed on `device`.

    Example:
        >>> import tensorflow as tf
        >>> def matmul_on_(device, a, b):
        ...     with tf.device(device):
        ...         return tf.matmul(a, b)
        >>> matmul_on(matmul_on_).ok
        True
        >>> matmul_on(lambda device, a, b: tf.matmul(a, b)).ok  # ignores the device
        False
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong(f"Define a function, `def matmul_on(device, a, b): ...`, not a {type(answer).__name__}: the "
                     "check calls it with each device of this machine.")
    from helpers import env
    from helpers.placement import short_device

    tf = tf if tf is not None else env.tensorflow()
    a = tf.reshape(tf.range(6, dtype=tf.float32), (2, 3))
    b = tf.reshape(tf.range(6, dtype=tf.float32), (3, 2))
    expected = (a @ b).numpy()
    devices = [d.name for d in tf.config.list_logical_devices()]
    for device in devices:
        got, failed = call(answer, device, a, b)
        if failed is not None:
            return failed
        if got is None:
            return returned_none("matmul_on")
        if not hasattr(got, "device") or not hasattr(got, "numpy"):
            return wrong(f"Your function returns {type(got).__name__}; return the tensor tf.matmul gives.")
        if got.shape != expected.shape or abs(got.numpy() - expected).max() > 1e-4:
            return wrong("The values are not a @ b: return tf.matmul(a, b) (in that order).")
        if short_device(got.device) != short_device(device):
            return wrong(f"Asked for {short_device(device)}, the result ran on {short_device(got.device)}. "
                         "Run the matmul inside `with tf.device(device):`.")
    missing = f"/GPU:{len(tf.config.list_physical_devices('GPU')) + 7}"
    soft = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(False)
    try:
        _, failed = call(answer, missing, a, b)
    finally:
        tf.config.set_soft_device_placement(soft)
    if failed is None:
        return wrong(f"With soft placement off, asking for {missing} (which does not exist) should fail, but your "
                     "function ran anyway: it ignores `device`. Use `with tf.device(device):` around the matmul.")
    return Feedback(True, "Right: the product ran on every device of this kernel as asked, and asking for a "
                          "missing GPU with soft placement off failed, as it should.")


def _r(index: int, util: float, used_gib: float, total_gib: float, name: str = "Tesla T4") -> NvmlReading:
    return NvmlReading(index, name, utilization_pct=util, memory_used_bytes=int(used_gib * GIB),
                       memory_total_bytes=int(total_gib * GIB), power_w=None, temperature_c=None)


# Made-up servers (not measured anywhere) and the job each must place.
SERVERS: dict[str, tuple[list[NvmlReading], int]] = {
    "the 4-GPU server above": (EXAMPLE_READINGS, 6 * GIB),
    "a server whose least busy GPU is nearly full": (
        [_r(0, 40, 2, 15), _r(1, 5, 14, 15), _r(2, 20, 3, 15)], 6 * GIB),
    "a mixed server with a small card": (
        [_r(0, 1, 3, 8, "RTX A2000"), _r(1, 50, 4, 24, "A10"), _r(2, 70, 2, 24, "A10")], 6 * GIB),
    "a server where only the last GPU fits": (
        [_r(0, 10, 12, 15), _r(1, 15, 11, 15), _r(2, 90, 1, 15)], 8 * GIB),
    "a full server": ([_r(0, 10, 14, 15), _r(1, 5, 15, 15)], 6 * GIB),
    "a server where the least busy GPU has exactly enough free": (
        [_r(0, 30, 2, 15), _r(1, 5, 9, 15), _r(2, 60, 1, 15)], 6 * GIB),
    "a server whose emptiest GPU is not the least busy": (
        [_r(0, 50, 1, 15), _r(1, 90, 5, 15), _r(2, 10, 8, 15)], 6 * GIB),
    "a mixed server where the least used card is the smallest": (
        [_r(0, 20, 2, 8, "RTX A2000"), _r(1, 70, 4, 24, "A10"), _r(2, 5, 10, 24, "A10")], 6 * GIB),
    "a job given GPUs 2 and 3 of a server (CUDA_VISIBLE_DEVICES=2,3)": (
        [_r(2, 80, 1, 15), _r(3, 10, 2, 15)], 6 * GIB),
}


def _expected(readings: list[NvmlReading], need: int) -> int | None:
    fits = [r for r in readings if r.memory_total_bytes - r.memory_used_bytes >= need]
    return min(fits, key=lambda r: r.utilization_pct).index if fits else None


def _diagnose(readings: list[NvmlReading], need: int, got: int) -> str:
    by_index = {r.index: r for r in readings}
    if got not in by_index:
        return f"there is no GPU {got}: the indices are {sorted(by_index)} (return r.index)."
    r = by_index[got]
    free = r.memory_total_bytes - r.memory_used_bytes
    if free < need and r.memory_used_bytes < need:
        return (f"GPU {got} uses only {r.memory_used_bytes / GIB:.0f} GiB, but it has {r.memory_total_bytes / GIB:.0f} "
                f"GiB in all, so only {free / GIB:.0f} GiB is free. Test free memory: total - used >= need.")
    if free < need:
        return (f"GPU {got} has only {free / GIB:.0f} GiB free; the job needs {need / GIB:.0f} GiB. Keep the GPUs "
                "with total - used >= need first, then pick the least busy of those.")
    fits = [x for x in readings if x.memory_total_bytes - x.memory_used_bytes >= need]
    if r.utilization_pct == max(x.utilization_pct for x in fits):
        return (f"GPU {got} is the busiest of the GPUs that fit ({r.utilization_pct:.0f} %): take the minimum "
                "utilisation, not the maximum.")
    return (f"GPU {got} fits, but another GPU that fits is less busy. Among the GPUs with enough free memory, "
            "take the lowest utilization_pct.")


def _rule(readings: list[NvmlReading], need: int, fits: Any, key: Any, position: bool = False) -> int | None:
    """What a variant of the rule returns: `fits` filters, `key` picks the minimum; a position instead of the index."""
    kept = [(i, r) for i, r in enumerate(readings) if fits(r, need)]
    if not kept:
        return None
    i, r = min(kept, key=lambda pair: key(pair[1]))
    return i if position else r.index


def _free(r: NvmlReading) -> int:
    return r.memory_total_bytes - r.memory_used_bytes


# Wrong variants of the rule, each with the hint that names its mistake; an answer that agrees with one of them
# on every server (and so differs from the rule somewhere) gets its hint.
_VARIANTS = [
    (lambda r, need: _free(r) > need, lambda r: r.utilization_pct, False,
     "a GPU with exactly need_bytes free has enough: keep the GPUs with total - used >= need (>=, not >)."),
    (lambda r, need: _free(r) >= need, lambda r: -_free(r), False,
     "you picked the GPU with the most free memory. Memory only decides which GPUs fit; among those, take the "
     "lowest utilization_pct."),
    (lambda r, need: _free(r) >= need, lambda r: r.memory_used_bytes, False,
     "you picked the GPU that uses the least memory. Memory only decides which GPUs fit; among those, take the "
     "lowest utilization_pct."),
    (lambda r, need: _free(r) >= need, lambda r: -r.utilization_pct, False,
     "you picked the busiest GPU that fits: take the minimum utilisation, not the maximum."),
    (lambda r, need: _free(r) >= need, lambda r: r.utilization_pct, True,
     "you return the GPU's position in the list; return its `.index`: the GPUs a job sees need not start at 0 "
     "(a job given GPUs 2 and 3 sees indices 2 and 3)."),
]


def choose_gpu(answer: Any, servers: dict[str, tuple[list[NvmlReading], int]] | None = None) -> Feedback:
    """Exercise 02.2: ``choose_gpu(readings, need_bytes)`` returns the index of the least busy GPU
    with at least `need_bytes` free, or None when no GPU has room.

    Example:
        >>> def choose(readings, need):
        ...     fits = [r for r in readings if r.memory_total_bytes - r.memory_used_bytes >= need]
        ...     return min(fits, key=lambda r: r.utilization_pct).index if fits else None
        >>> choose_gpu(choose).ok
        True
        >>> choose_gpu(lambda readings, need: 2).ok  # right for one server only
        False
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong(f"Define a function, `def choose_gpu(readings, need_bytes): ...`, not a {type(answer).__name__}: "
                     "the check calls it on other servers, where a fixed index is wrong.")
    cases = servers if servers is not None else SERVERS
    answers = {}
    for label, (readings, need) in cases.items():
        got, failed = call(answer, list(readings), need)
        if failed is not None:
            return failed
        answers[label] = got
    if all(got is None for got in answers.values()):
        return Feedback(False, "Not answered yet: `choose_gpu` returns None on every server, also where GPUs have "
                               "room. Replace the `...` in it with your code and end it with `return`; if you did, "
                               "compare free memory and need_bytes in the same unit (both in bytes).")
    for fits, key, position, hint in _VARIANTS:
        predicted = {label: _rule(readings, need, fits, key, position) for label, (readings, need) in cases.items()}
        right = {label: _expected(readings, need) for label, (readings, need) in cases.items()}
        if predicted != right and all(answers[label] == predicted[label] and type(answers[label]) is not bool
                                      for label in cases):
            label = next(label for label in cases if predicted[label] != right[label])
            return wrong(f"On {label} your function returns {answers[label]}, the rule gives {right[label]}: {hint}")
    for label, (readings, need) in cases.items():
        got = answers[label]
        if hasattr(got, "index") and hasattr(got, "utilization_pct"):
            return wrong("Your function returns the whole reading; return its `.index` (an int).")
        expected = _expected(readings, need)
        if got is None and expected is not None:
            return wrong(f"On {label} your function returns None, but GPU {expected} has room: return None only when "
                         "no GPU has enough free memory (compare bytes with bytes).")
        if expected is None:
            if got is not None:
                return wrong(f"On {label} no GPU has {need / GIB:.0f} GiB free, yet your function returns {got!r}. "
                             "Return None when nothing fits.")
            continue
        if isinstance(got, bool) or not isinstance(got, numbers.Integral):
            return wrong(f"On {label} your function returns {got!r}; return a GPU index (an int).")
        if got != expected:
            return wrong(f"On {label} (job needs {need / GIB:.0f} GiB): {_diagnose(readings, need, int(got))}")
    return Feedback(True, f"Right on all {len(cases)} servers: the least busy GPU among those with enough free "
                          "memory, and None when nothing fits.")
