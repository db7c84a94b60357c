"""Checks for notebook 02 · GPU detection and device placement."""

from __future__ import annotations

from typing import Any

from helpers.check._feedback import Feedback, not_filled, wrong

__all__ = ["cpu_matmul_device", "gpu_for_new_job"]

GIB = 1024**3


def cpu_matmul_device(answer: Any) -> Feedback:
    """Exercise 02.1: the device string of a matmul result placed explicitly on the CPU.

    The right answer is the result tensor's ``.device``, for example
    ``'/job:localhost/replica:0/task:0/device:CPU:0'``: where TensorFlow really ran the op.

    Example:
        >>> cpu_matmul_device("/job:localhost/replica:0/task:0/device:CPU:0").ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    from helpers.placement import short_device

    if type(answer).__module__.startswith("numpy"):  # NumPy 2 arrays have a .device too ("cpu")
        return wrong("You returned the values (an array). Keep the tensor the matmul returns and read its `.device`.")
    if hasattr(answer, "device") and not isinstance(answer, str):
        return wrong("You returned the tensor itself. Return the text of where it ran: its `.device` attribute.")
    if not isinstance(answer, str):
        return wrong(f"Answer with a device string (the result's `.device`), not {type(answer).__name__}.")
    if answer.strip() == "":
        return wrong("The device string is empty. Run the matmul eagerly (not inside @tf.function) and read the "
                     "result's `.device`.")
    device = short_device(answer)
    if not device:
        return wrong(f"{answer!r} does not name a device. Read `.device` of the matmul's result.")
    if "/job:" not in answer:
        return wrong(f"{answer!r} is the name you asked for, not what TensorFlow reports. Return the result's "
                     "`.device`: it names the job, replica and task too, and shows where the op really ran.")
    if not device.startswith("CPU"):
        return wrong(f"Your matmul ran on {device}. Wrap it in `with tf.device('/CPU:0'):` so it runs on the CPU.")
    return Feedback(True, f"Right: the matmul ran on {device}, and `.device` says so in full: {answer}. "
                          "(Without a GPU it lands on the CPU anyway: make sure you used `with tf.device('/CPU:0'):`.)")


def _best(readings: list[Any], need_bytes: float) -> tuple[int | None, int | None]:
    """(least-busy GPU with enough free memory, least-busy GPU ignoring memory)."""
    def free(r: Any) -> float:
        return r.memory_total_bytes - r.memory_used_bytes

    fits = [r for r in readings if free(r) >= need_bytes]
    best = min(fits, key=lambda r: r.utilization_pct).index if fits else None
    busy_blind = min(readings, key=lambda r: r.utilization_pct).index
    return best, busy_blind


def gpu_for_new_job(answer: Any, readings: list[Any] | None = None, need_gib: float = 6.0) -> Feedback:
    """Exercise 02.2: the index of the GPU for a job that needs `need_gib` GiB free: the least busy that fits.

    The readings default to ``helpers.monitor.EXAMPLE_READINGS`` (a made-up 4-GPU server).

    Example:
        >>> gpu_for_new_job(2).ok
        True
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    if readings is None:
        from helpers.monitor import EXAMPLE_READINGS

        readings = EXAMPLE_READINGS
    need = need_gib * GIB
    expected, busy_blind = _best(readings, need)
    by_index = {r.index: r for r in readings}
    names = {r.name for r in readings}
    if hasattr(answer, "index") and hasattr(answer, "utilization_pct"):
        return wrong("You returned the whole reading. Return its `.index` (an int).")
    if isinstance(answer, str):
        hint = " Several GPUs share that name, so the index is what tells them apart." if answer in names else ""
        return wrong(f"Answer with the GPU's index (an int), not a string.{hint}")
    if isinstance(answer, float) and answer.is_integer():
        answer = int(answer)
    if isinstance(answer, bool) or not isinstance(answer, int):
        return wrong(f"Answer with the GPU's index (an int), not {type(answer).__name__}.")
    if answer == expected:
        r = by_index[answer]
        free = (r.memory_total_bytes - r.memory_used_bytes) / GIB
        return Feedback(True, f"Right: GPU {answer} has {free:.0f} GiB free and is the least busy of those that "
                              f"fit ({r.utilization_pct:.0f} %).")
    if answer not in by_index:
        if answer - 1 == expected:
            return wrong(f"There is no GPU {answer}, and GPU {answer - 1} is the one: indices count from 0.")
        return wrong(f"There is no GPU {answer}: the indices are {sorted(by_index)}.")
    r = by_index[answer]
    free = (r.memory_total_bytes - r.memory_used_bytes) / GIB
    if answer == busy_blind and free * GIB < need:
        return wrong(f"GPU {answer} is the least busy, but only {free:.0f} GiB of its memory is free and the job "
                     f"needs {need_gib:g} GiB. Keep only the GPUs with total - used >= {need_gib:g} GiB first.")
    if r.utilization_pct == max(x.utilization_pct for x in readings):
        return wrong(f"GPU {answer} is the busiest ({r.utilization_pct:.0f} %). Take the minimum utilisation, "
                     "not the maximum.")
    if free * GIB < need:
        return wrong(f"GPU {answer} has only {free:.0f} GiB free; the job needs {need_gib:g} GiB.")
    most_free = max(readings, key=lambda x: x.memory_total_bytes - x.memory_used_bytes).index
    if answer == most_free:
        return wrong(f"GPU {answer} has the most free memory, but among the GPUs that fit, another one is less "
                     "busy. Pick by utilisation once memory is enough.")
    return wrong(f"GPU {answer} fits, but another GPU that fits is less busy. Among the GPUs with at least "
                 f"{need_gib:g} GiB free, take the lowest utilization_pct.")
