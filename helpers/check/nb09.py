"""Checks for notebook 09 · Choosing a GPU (section "Exercises").

Each exercise asks for a function, and the check calls it on made-up inputs, so a number that is
right for one job on this machine does not pass:

* ``adam_training_bytes(params, dtype_bytes)``: weights, gradients and Adam's two moments, for
  models of several sizes and value sizes; a missing part or bits for bytes is named.
* ``fits(job_bytes, gpu_memory_gb)``: jobs chosen near the edge, so that gigabytes read as 10**9
  bytes instead of 2**30, or no margin kept, give a wrong answer on at least one of them.
* ``energy_kwh(images, images_per_s, watts)``: runs of several sizes; seconds for hours and watts
  for kilowatts are told apart.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from helpers.check._feedback import Feedback, call, not_filled, returned_none, wrong

__all__ = ["adam_training_bytes", "fits", "energy_kwh", "ADAM_CASES", "FIT_CASES", "ENERGY_CASES"]

GIB = 2**30
USABLE = 0.9

# Made-up models: (weights, bytes per stored value).
ADAM_CASES = [(1_000, 4), (25_557_032, 4), (7_000_000_000, 2), (3, 8)]
# Made-up jobs: (bytes the job needs, the GPU's memory in GB as its datasheet prints it).
FIT_CASES = [(15.0e9, 16), (16.0e9, 16), (17e9, 16), (37e9, 40), (45e9, 48), (70e9, 80), (90e9, 80), (1e9, 141),
             (23.5e9, 24), (20e9, 16), (15.3e9, 16), (15.6e9, 16)]  # the last two: either side of 0.9 x 16 x 2**30
# Made-up runs: (images, images per second, watts).
ENERGY_CASES = [(2375 * 3600, 2375.0, 400.0), (1_000_000, 500.0, 70.0), (115_305_030, 1270.0, 300.0),
                (10, 1.0, 1000.0)]




def _not_a_function(answer: Any, signature: str) -> Feedback | None:
    if (fb := not_filled(answer)) is not None:
        return fb
    if not callable(answer):
        return wrong(f"Define a function, `def {signature}: ...`, not a {type(answer).__name__}: the check calls it on "
                     "made-up inputs, where a fixed number is wrong.")
    return None


def _number(got: Any, name: str) -> float | Feedback:
    if got is None:
        return returned_none(name)
    if hasattr(got, "numpy") and not isinstance(got, numbers.Number):
        got = got.numpy()
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        return wrong(f"`{name}` returns {type(got).__name__}; return a number.")
    return float(got)


# --------------------------------------------------------------------------- exercise 1
_ADAM_HINTS = {
    0.25: "that is the weights alone. Training also keeps a gradient per weight and Adam's two moments (m and v).",
    0.5: "that is weights and gradients. Adam also keeps two moments per weight (m and v): four values in all.",
    0.75: "one part of the four is missing: a weight, its gradient, and Adam's two moments (m and v).",
    1.25: "one value too many: a weight, its gradient and Adam's two moments make four values per weight.",
    8.0: "that is in bits: dtype_bytes is already in bytes, so do not multiply by 8.",
    2.0: "twice the answer: each of the four values takes dtype_bytes bytes, not 2 x dtype_bytes.",
}


def adam_training_bytes(answer: Any) -> Feedback:
    """Exercise 09.1: ``adam_training_bytes(params, dtype_bytes)`` = weights + gradients + Adam's m and v.

    Example:
        >>> adam_training_bytes(lambda params, dtype_bytes: 4 * params * dtype_bytes).ok
        True
        >>> adam_training_bytes(lambda params, dtype_bytes: 3 * params * dtype_bytes).ok
        False
    """
    if (fb := _not_a_function(answer, "adam_training_bytes(params, dtype_bytes)")) is not None:
        return fb
    for params, dtype_bytes in ADAM_CASES:
        got, failed = call(answer, params, dtype_bytes)
        if failed is not None:
            return failed
        got = _number(got, "adam_training_bytes")
        if isinstance(got, Feedback):
            return got
        expected = 4 * params * dtype_bytes
        if not math.isclose(got, expected, rel_tol=1e-9):
            ratio = got / expected
            hint = next((h for r, h in _ADAM_HINTS.items() if math.isclose(ratio, r, rel_tol=1e-6)),
                        "count four values per weight (the weight, its gradient, Adam's m and v), each dtype_bytes "
                        "bytes.")
            return wrong(f"For {params:,} weights of {dtype_bytes} bytes the answer is {expected:,} bytes; your "
                         f"function gives {got:,.0f}: {hint}")
    return Feedback(True, f"Right on all {len(ADAM_CASES)} models: 4 values per weight (weight, gradient, Adam's m and "
                          "v). With float32 that is 16 bytes per weight before any activation.")


# --------------------------------------------------------------------------- exercise 2
_FIT_VARIANTS = {
    "GB read as 10**9 bytes": lambda job, gb: job <= USABLE * gb * 1e9,
    "no margin kept": lambda job, gb: job <= gb * GIB,
    "GB read as 10**9 bytes and no margin kept": lambda job, gb: job <= gb * 1e9,
    "margin on the job": lambda job, gb: USABLE * job <= gb * GIB,
    "always True": lambda job, gb: True,
    "always False": lambda job, gb: False,
}
_FIT_HINTS = {
    "GB read as 10**9 bytes": "GPU memory comes in binary gigabytes: 1 GB on a datasheet is 2**30 bytes, not 10**9.",
    "no margin kept": "keep the 10 % margin: the job must fit in 0.9 x the memory.",
    "margin on the job": "the 0.9 belongs to the memory: job_bytes <= 0.9 x memory. Shrinking the job by 10 % instead "
                         "lets jobs up to 1.11 x the memory through.",
    "GB read as 10**9 bytes and no margin kept": "use 2**30 bytes per GB, and keep the 10 % margin (0.9 x memory).",
    "always True": "your function says yes to every job: compare job_bytes with 0.9 x gpu_memory_gb x 2**30.",
    "always False": "your function says no to every job: compare job_bytes with 0.9 x gpu_memory_gb x 2**30.",
}


def fits(answer: Any) -> Feedback:
    """Exercise 09.2: ``fits(job_bytes, gpu_memory_gb)`` is True when the job needs at most 90 % of the
    memory, counted in binary gigabytes (2**30 bytes).

    Example:
        >>> fits(lambda job_bytes, gpu_memory_gb: job_bytes <= 0.9 * gpu_memory_gb * 2**30).ok
        True
        >>> fits(lambda job_bytes, gpu_memory_gb: job_bytes <= 0.9 * gpu_memory_gb * 1e9).ok
        False
    """
    if (fb := _not_a_function(answer, "fits(job_bytes, gpu_memory_gb)")) is not None:
        return fb
    answers = []
    for job, gb in FIT_CASES:
        got, failed = call(answer, job, gb)
        if failed is not None:
            return failed
        if got is None:
            return returned_none("fits")
        dtype = getattr(got, "dtype", None)
        if not isinstance(got, bool) and getattr(dtype, "name", str(dtype)) != "bool":
            return wrong(f"`fits` returns {got!r}; return True or False (a comparison gives one).")
        answers.append(bool(got))
    expected = [job <= USABLE * gb * GIB for job, gb in FIT_CASES]
    if answers == expected:
        return Feedback(True, f"Right on all {len(FIT_CASES)} jobs: 0.9 x memory, with 1 GB = 2**30 bytes (a 16 GB "
                              "card holds 17.2e9 bytes, and you plan with 15.5e9).")
    for name, variant in _FIT_VARIANTS.items():
        if answers == [variant(job, gb) for job, gb in FIT_CASES]:
            return wrong(_FIT_HINTS[name])
    i = next(i for i, (a, e) in enumerate(zip(answers, expected, strict=True)) if a != e)
    job, gb = FIT_CASES[i]
    return wrong(f"A job of {job / 1e9:g}e9 bytes on a {gb} GB GPU: the answer is {expected[i]} "
                 f"(0.9 x {gb} x 2**30 = {USABLE * gb * GIB / 1e9:.2f}e9 bytes), your function says {answers[i]}.")


# --------------------------------------------------------------------------- exercise 3
_ENERGY_HINTS = {
    3600.0: "that is watt-seconds over 1000: turn seconds into hours (divide by 3600) before multiplying by kW.",
    1000.0: "that is in watt-hours: divide by 1000 for kilowatt-hours.",
    3_600_000.0: "that is in joules (watt-seconds): divide by 3600 for hours and by 1000 for kilowatts.",
    1 / 3600: "you divided by 3600 twice: images / images_per_s is in seconds; divide by 3600 once.",
}


def energy_kwh(answer: Any) -> Feedback:
    """Exercise 09.3: ``energy_kwh(images, images_per_s, watts)``: hours of the run times kilowatts.

    Example:
        >>> energy_kwh(lambda images, images_per_s, watts: images / images_per_s / 3600 * watts / 1000).ok
        True
        >>> energy_kwh(lambda images, images_per_s, watts: images / images_per_s * watts / 1000).ok
        False
    """
    if (fb := _not_a_function(answer, "energy_kwh(images, images_per_s, watts)")) is not None:
        return fb
    for images, rate, watts in ENERGY_CASES:
        got, failed = call(answer, images, rate, watts)
        if failed is not None:
            return failed
        got = _number(got, "energy_kwh")
        if isinstance(got, Feedback):
            return got
        expected = images / rate / 3600 * watts / 1000
        if not math.isclose(got, expected, rel_tol=1e-6):
            ratio = got / expected if expected else float("inf")
            hint = next((h for r, h in _ENERGY_HINTS.items() if math.isclose(ratio, r, rel_tol=1e-6)),
                        "seconds = images / images_per_s; hours = seconds / 3600; kWh = hours x watts / 1000.")
            return wrong(f"{images:,} images at {rate:g} images/s on a {watts:g} W GPU use {expected:.4g} kWh; your "
                         f"function gives {got:.4g}: {hint}")
    return Feedback(True, f"Right on all {len(ENERGY_CASES)} runs: seconds = images / rate, hours = seconds / 3600, "
                          "kWh = hours x W / 1000. At the board's TDP this is an upper-bound estimate.")
