"""Checks for notebook 00 · environment check."""

from __future__ import annotations

from typing import Any

from helpers.check._feedback import Feedback, not_filled, whole_number, wrong


def gpu_count(answer: Any, tf: Any | None = None) -> Feedback:
    """Exercise 00.1: the number of GPUs TensorFlow can see, computed with ``tf.config``.

    Example:
        >>> gpu_count(0)  # on a machine without a GPU
        ✅ Right: TensorFlow sees 0 GPU(s) here. ...
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    from helpers import env

    tf = tf if tf is not None else env.tensorflow()
    expected = len(tf.config.list_physical_devices("GPU"))
    all_devices = len(tf.config.list_physical_devices())
    if isinstance(answer, list):
        return wrong("You returned the list of devices; wrap it in len(...) to count them.")
    answer = whole_number(answer)
    if isinstance(answer, Feedback):
        return answer
    if answer == expected:
        extra = "" if expected else " On a GPU runtime the same code gives 1 or more."
        return Feedback(True, f"Right: TensorFlow sees {expected} GPU(s) here.{extra}")
    if answer == all_devices and all_devices != expected:
        return wrong(f"{answer} is the count of all physical devices, CPU included. "
                     "Pass the device type: tf.config.list_physical_devices('GPU').")
    return wrong(f"TensorFlow sees a different number of GPUs than {answer}. "
                 "Count the entries of tf.config.list_physical_devices('GPU').")


def bf16_tensor_gpus(answer: Any, specs: list[dict[str, Any]] | None = None) -> Feedback:
    """Exercise 00.2: names of the GPUs in the shipped table whose Tensor Cores do BF16.

    BF16 Tensor Cores arrived with compute capability 8.0 (Ampere).

    Example:
        >>> bf16_tensor_gpus(["Tesla T4"]).ok
        False
    """
    if (fb := not_filled(answer)) is not None:
        return fb
    from helpers import data

    specs = specs if specs is not None else data.load_gpu_specs()
    if isinstance(answer, str) or not hasattr(answer, "__iter__"):
        return wrong("Answer with a list (or set) of GPU names from the table's 'name' column.")
    answer = list(answer)
    if any(isinstance(a, dict) for a in answer):
        return wrong("Your list holds whole table rows (dicts). Take the name of each: g[\"name\"].")
    if not all(isinstance(a, str) for a in answer):
        return wrong("Answer with GPU names (strings) from the table's 'name' column.")
    expected = {g["name"] for g in specs if g["compute_capability"] >= 8.0}
    given = set(answer)
    unknown = given - {g["name"] for g in specs}
    if unknown:
        return wrong(f"Not names from the table: {sorted(unknown)}. Copy them from the 'name' column.")
    missing, extra = expected - given, given - expected
    if not missing and not extra:
        return Feedback(True, f"Right: {len(expected)} GPUs, all with compute capability >= 8.0.")
    hints = []
    if extra:
        ccs = {g["name"]: g["compute_capability"] for g in specs}
        hints.append("these have compute capability below 8.0 (FP16 Tensor Cores at most): "
                     + ", ".join(f"{n} ({ccs[n]})" for n in sorted(extra)))
    if missing:
        hints.append(f"missing, with compute capability >= 8.0: {', '.join(sorted(missing))}")
        ccs = {g["name"]: g["compute_capability"] for g in specs}
        if any(ccs[n] == 8.0 for n in missing):
            hints.append("compute capability exactly 8.0 counts too: use >=, not >")
    text = "; ".join(hints)
    return wrong(text[0].upper() + text[1:] + ". Filter on compute_capability >= 8.0.")
