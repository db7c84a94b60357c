"""Checks for notebook 09 · Choosing a GPU (section "Exercises").

Each exercise asks for a function, and the check calls it on made-up inputs, so a number that is
right for one job on this machine does not pass. When an answer is wrong, the check works out which
mistake gives exactly those answers and names it:

* ``adam_training_bytes(params, dtype_bytes)``: weights, gradients and Adam's two moments, for
  models of several sizes and value sizes; a missing part, bits for bytes, a result in GB, or
  values fixed at 4 bytes whatever ``dtype_bytes`` says are named.
* ``fits(job_bytes, gpu_memory_gb)``: jobs chosen on both sides of the edge (and on it), then, for
  cards of several sizes, the job size where the function's answer flips: that edge, divided by the
  card's GB, tells the bytes per GB and the share of the memory the function really uses, so a
  decimal GB, another fraction (0.85), a margin put on the job, or rounding to whole GB or whole MiB are named.
* ``energy_kwh(images, images_per_s, watts)``: runs of several sizes; seconds for hours, watts for
  kilowatts, 1024 for 1000, floor division (``//``) or ceil of the seconds, the hours or the kWh, a hard-coded
  value, and rounding are told apart.
"""

from __future__ import annotations

import contextlib
import io
import math
import numbers
from collections.abc import Callable
from typing import Any

from helpers.check._feedback import Feedback, call, not_filled, returned_none, wrong

__all__ = ["adam_training_bytes", "fits", "energy_kwh", "ADAM_CASES", "FIT_CASES", "FIT_PROBE_GB", "ENERGY_CASES"]

GIB = 2**30
USABLE = 0.9

# Made-up models: (weights, bytes per stored value).
ADAM_CASES = [(1_000, 4), (25_557_032, 4), (7_000_000_000, 2), (3, 8)]
# Made-up jobs: (bytes the job needs, the GPU's memory in GB as its datasheet prints it). Several sit within
# 0.2 % of the edge, 0.9 x GB x 2**30, on either side; two sit exactly on it (a job of exactly 90 % fits).
FIT_CASES = [(15.0e9, 16), (16.0e9, 16), (17e9, 16), (37e9, 40), (45e9, 48), (70e9, 80), (90e9, 80), (1e9, 141),
             (23.5e9, 24), (20e9, 16), (15.3e9, 16), (15.6e9, 16),
             (15.45e9, 16), (15.47e9, 16), (23.1e9, 24), (23.3e9, 24),  # 15.46e9 and 23.19e9 are the edges
             (9 * GIB, 10), (72 * GIB, 80), (77.31e9, 80),  # exactly 90 % of 10 and 80 GB, then just above
             # The 16 GB edge is 14,745.6 MiB: an edge rounded or truncated to whole MiB gets one of these wrong.
             (14745.3 * 2**20, 16), (14745.55 * 2**20, 16), (14745.8 * 2**20, 16)]

# Cards on which the check looks for the job size where the answer flips (the function's edge).
FIT_PROBE_GB = (10, 16, 24, 40, 80, 141)
# Made-up runs: (images, images per second, watts). The fifth: a run whose seconds are not whole; the sixth:
# 1.5 h at 700 W, where flooring the hours (0.7 kWh), the kWh (1) and both (0) give three different answers.
ENERGY_CASES = [(2375 * 3600, 2375.0, 400.0), (1_000_000, 500.0, 70.0), (115_305_030, 1270.0, 300.0),
                (10, 1.0, 1000.0), (1_000, 3.0, 250.0), (5_400_000, 1000.0, 700.0)]


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
    if hasattr(got, "item") and getattr(got, "size", 1) == 1 and not isinstance(got, numbers.Number):
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        return wrong(f"`{name}` returns {type(got).__name__}; return a number.")
    if not math.isfinite(float(got)):
        return wrong(f"`{name}` returns {got!r}; return a finite number.")
    return float(got)


def _results(answer: Callable[..., Any], cases: list[tuple[Any, ...]], name: str) -> list[float] | Feedback:
    """The answer's value on every case, or the Feedback of the first call that failed or returned no number."""
    out = []
    for case in cases:
        got, failed = call(answer, *case)
        if failed is not None:
            return failed
        value = _number(got, name)
        if isinstance(value, Feedback):
            return value
        out.append(value)
    return out


def _same_ratio(got: list[float], expected: list[float]) -> float | None:
    """got / expected when it is one number on every case (rel. 1e-6), else None."""
    if any(e == 0 for e in expected):
        return None
    ratios = [g / e for g, e in zip(got, expected, strict=True)]
    return ratios[0] if all(math.isclose(r, ratios[0], rel_tol=1e-6) for r in ratios) else None


# Units a result may come back in by mistake: (bytes in one unit, how the hint names it).
_BYTE_UNITS = [(1e9, "GB (you divide by 10**9)"), (GIB, "GiB (you divide by 2**30)"),
               (1e6, "MB (you divide by 10**6)"), (2**20, "MiB (you divide by 2**20)"),
               (1e3, "kB (you divide by 1000)"), (2**10, "KiB (you divide by 1024)")]


# --------------------------------------------------------------------------- exercise 1
_ADAM_RATIO_HINTS = {
    0.25: "that is the weights alone. Training also keeps a gradient per weight and Adam's two moments (m and v).",
    0.5: "that is weights and gradients. Adam also keeps two moments per weight (m and v): four values in all.",
    0.75: "one part of the four is missing: a weight, its gradient, and Adam's two moments (m and v).",
    1.25: "one value too many: a weight, its gradient and Adam's two moments make four values per weight.",
    1.5: "two values too many: a weight, its gradient and Adam's two moments make four values per weight.",
    8.0: "that is in bits: dtype_bytes is already in bytes, so do not multiply by 8.",
    0.125: "you divide by 8: dtype_bytes is already in bytes, not bits.",
    2.0: "twice the answer: each of the four values takes dtype_bytes bytes, not 2 x dtype_bytes.",
}
# Answers that ignore dtype_bytes somewhere: (what they compute, the hint).
_ADAM_VARIANTS: list[tuple[Callable[[int, int], float], str]] = [
    (lambda p, b: 16 * p, "you count 16 bytes per weight, float32's figure, whatever dtype_bytes says: multiply the "
                          "four values by dtype_bytes (the check passes 2, 4 and 8)."),
    (lambda p, b: 18 * p, "you count 18 bytes per weight, mixed precision's figure (4 + 2 + 4 + 8): in this exercise "
                          "every value takes dtype_bytes bytes."),
    (lambda p, b: 2 * p * b + 8 * p, "you keep Adam's two moments at 4 bytes each whatever dtype_bytes says: here all "
                                     "four values (weight, gradient, m and v) take dtype_bytes bytes."),
    (lambda p, b: p * b + 12 * p, "only your weights take dtype_bytes; the gradient and Adam's m and v stay at 4 "
                                  "bytes. Here all four values take dtype_bytes bytes."),
    (lambda p, b: 4 * p + 3 * p * b, "your weights stay at 4 bytes: here all four values (weight, gradient, m and v) "
                                     "take dtype_bytes bytes."),
]


def _known_mistake(got: list[float], expected: list[float], cases: list[tuple], ratio_hints: dict[float, str],
                   variants: list[tuple[Any, str]], rel_tol: float) -> str | None:
    """The hint of a known mistake that explains every answer: one ratio to the right answers (a unit), or a
    wrong formula (`variants`: ``(compute(*case), hint)`` pairs); None when neither does."""
    ratio = _same_ratio(got, expected)
    if ratio is not None:
        hint = next((h for r, h in ratio_hints.items() if math.isclose(ratio, r, rel_tol=1e-6)), None)
        if hint:
            return hint
    for compute, hint in variants:
        if all(math.isclose(g, compute(*case), rel_tol=rel_tol, abs_tol=1e-12)
               for g, case in zip(got, cases, strict=True)):
            return hint
    return None


def _rounded_to(got: list[float], expected: list[float]) -> int | None:
    """k when every answer is the right one rounded to the nearest 10**k (k from 1 to 9), else None."""
    for k in range(1, 10):
        if all(math.isclose(g, round(e, -k), rel_tol=1e-9, abs_tol=1e-9) for g, e in zip(got, expected, strict=True)):
            return k
    return None


def _same_everywhere(got: list[float], expected: list[float]) -> bool:
    """True when the answer gives one number whatever the inputs, where the right answers differ."""
    return len(set(got)) == 1 and len(set(expected)) > 1


def adam_training_bytes(answer: Any) -> Feedback:
    """Exercise 09.1: ``adam_training_bytes(params, dtype_bytes)`` = weights + gradients + Adam's m and v.

    Example:
        >>> adam_training_bytes(lambda params, dtype_bytes: 4 * params * dtype_bytes).ok
        True
        >>> adam_training_bytes(lambda params, dtype_bytes: 4 * params * dtype_bytes / 1e9).message.split(": ")[-1]
        'that is in GB (you divide by 10**9). Return bytes, the unit of the task.'
    """
    if (fb := _not_a_function(answer, "adam_training_bytes(params, dtype_bytes)")) is not None:
        return fb
    got = _results(answer, ADAM_CASES, "adam_training_bytes")
    if isinstance(got, Feedback):
        return got
    expected = [4 * p * b for p, b in ADAM_CASES]
    wrong_at = [i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if not math.isclose(g, e, rel_tol=1e-9)]
    if not wrong_at:
        return Feedback(True, f"Right on all {len(ADAM_CASES)} models: 4 values per weight (weight, gradient, Adam's m "
                              "and v). With float32 that is 16 bytes per weight before any activation.")
    i = wrong_at[0]
    params, dtype_bytes = ADAM_CASES[i]
    head = (f"For {params:,} weights of {dtype_bytes} bytes the answer is {expected[i]:,} bytes; your function gives "
            f"{got[i]:,.6g}: ")
    hint = _known_mistake(got, expected, ADAM_CASES, _ADAM_RATIO_HINTS, _ADAM_VARIANTS, rel_tol=1e-9)
    if hint:
        return wrong(head + hint)
    if (k := _rounded_to(got, expected)) is not None:
        unit = {3: "thousand", 6: "million", 9: "billion"}.get(k, f"10**{k}")
        return wrong(head + f"you round to the nearest {unit} bytes (round(..., -{k})), which turns the small models "
                            "into 0: return the exact bytes.")
    big = max(range(len(expected)), key=expected.__getitem__)  # the largest model: a rounded unit still shows
    for size, unit in _BYTE_UNITS:
        if math.isclose(got[big] * size, expected[big], rel_tol=0.02):
            return wrong(head + f"that is in {unit}. Return bytes, the unit of the task.")
    return wrong(head + "count four values per weight (the weight, its gradient, Adam's m and v), each dtype_bytes "
                        "bytes, and return the bytes.")


# --------------------------------------------------------------------------- exercise 2
# Bytes per GB an answer may use, and how a hint names them; 2**30 is the right one.
_GB_UNITS = [(GIB, "2**30"), (1e9, "10**9"), (1.024e9, "1024 x 10**6"), (1000 * 2**20, "1000 x 2**20")]


def _answers(answer: Callable[..., Any], jobs: list[tuple[float, float]]) -> list[bool] | Feedback:
    out = []
    for job, gb in jobs:
        got, failed = call(answer, job, gb)
        if failed is not None:
            return failed
        if got is None:
            return returned_none("fits")
        dtype = getattr(got, "dtype", None)
        if not isinstance(got, bool) and getattr(dtype, "name", str(dtype)) != "bool":
            return wrong(f"`fits` returns {got!r}, a {type(got).__name__}; return True or False (a comparison "
                         "gives one).")
        out.append(bool(got))
    return out


def _edge(answer: Callable[..., Any], gb: float) -> float | str:
    """The job size (bytes) where the answer flips from True to False on a `gb` card, or what else it does."""
    lo, hi = 1.0, 4.0 * gb * GIB
    ends = _answers(answer, [(lo, gb), (hi, gb)])
    if isinstance(ends, Feedback):
        return "fails"
    if ends == [True, True]:
        return "always True"
    if ends == [False, False]:
        return "always False"
    if ends == [False, True]:
        return "reversed"
    for _ in range(200):
        if hi - lo <= 1.0:
            break
        mid = (lo + hi) / 2
        at = _answers(answer, [(mid, gb)])
        if isinstance(at, Feedback):
            return "fails"
        lo, hi = (mid, hi) if at[0] else (lo, mid)
    return hi


def _round_share(share: float) -> float | None:
    """`share` when it is a round figure (at most 3 decimals, 1 / 0.9 or 1 / 1.1), else None."""
    for candidate in (round(share, 3), 1 / USABLE, 1 / 1.1):
        if math.isclose(share, candidate, rel_tol=1e-7):
            return candidate
    return None


def _share_hint(share: float) -> str:
    if math.isclose(share, 1.0, rel_tol=1e-9):
        return "Keep the 10 % margin: the job must fit in 0.9 x the memory, not all of it."
    if math.isclose(share, 1 / USABLE, rel_tol=1e-7):
        return ("The 0.9 belongs to the memory: job_bytes <= 0.9 x memory. Shrinking the job by 10 % instead lets "
                "jobs up to 1.11 x the memory through.")
    if math.isclose(share, 1 / 1.1, rel_tol=1e-7):
        return ("Adding 10 % to the job (job x 1.1 <= memory) lets it use 1 / 1.1 = 90.9 % of the memory, not 90 %: "
                "put the 0.9 on the memory.")
    return (f"You plan with {share:g} of the memory ({share * 100:g} %); the rule of this notebook is 90 % "
            f"(0.9 x gpu_memory_gb x 2**30).")


def _diagnose_fits(answer: Callable[..., Any]) -> str | None:
    """Name the mistake from the function's edge on cards of several sizes; None when no rule explains it."""
    edges = {gb: _edge(answer, gb) for gb in FIT_PROBE_GB}
    kinds = {e for e in edges.values() if isinstance(e, str)}
    if kinds:
        if kinds == {"always True"}:
            return "Your function says yes to every job: compare job_bytes with 0.9 x gpu_memory_gb x 2**30."
        if kinds == {"always False"}:
            return "Your function says no to every job: compare job_bytes with 0.9 x gpu_memory_gb x 2**30."
        if kinds == {"reversed"}:
            return ("Your function says no to small jobs and yes to large ones: the comparison is the wrong way "
                    "round. A job fits when job_bytes <= 0.9 x gpu_memory_gb x 2**30.")
        return None
    shares = {size: [edges[gb] / (gb * size) for gb in FIT_PROBE_GB] for size, _ in _GB_UNITS}
    constant = {size: v[0] for size, v in shares.items() if all(math.isclose(s, v[0], rel_tol=1e-7) for s in v)}
    binary = constant.get(GIB)
    if binary is not None and _round_share(binary) is None and abs(binary / USABLE - 1) < 0.02:
        return (f"Your edge is {binary:.5f} x gpu_memory_gb x 2**30 bytes on every card: close to 0.9 but not it. A "
                "decimal approximation (of 2**30 or of 0.9) moves the edge; write 0.9 * gpu_memory_gb * 2**30 exactly.")
    for size, name in _GB_UNITS:
        share = _round_share(constant[size]) if size in constant else None
        if share is None:
            continue
        unit = "" if size == GIB else (f"You count 1 GB as {name} bytes, but GPU memory comes in binary gigabytes: "
                                       "1 GB on a datasheet is 2**30 = 1,073,741,824 bytes.")
        if math.isclose(share, USABLE, rel_tol=1e-9):
            return unit or None  # the right edge: the fault is elsewhere (a strict <, see fits)
        return (unit + " " + _share_hint(share)).strip()
    if binary is not None:
        return (f"Your edge is {binary:.5f} x gpu_memory_gb x 2**30 bytes on every card, not 0.9 x: compare job_bytes "
                "with 0.9 * gpu_memory_gb * 2**30.")
    in_gib = {gb: edges[gb] / GIB for gb in FIT_PROBE_GB}
    for digits in range(4):
        step = 0.5 * 10**-digits  # rounding to `digits` decimals of a GB flips at multiples of half a step
        if all(math.isclose(g / step, round(g / step), abs_tol=1e-6) for g in in_gib.values()):
            gb = next(gb for gb in FIT_PROBE_GB if not math.isclose(in_gib[gb], USABLE * gb, rel_tol=1e-9))
            places = "whole GB" if digits == 0 else f"{digits} decimal{'s' if digits > 1 else ''} of a GB"
            return (f"You round (or truncate) to {places} "
                    f"before comparing: on a {gb} GB card your answer flips at {in_gib[gb]:g} x 2**30 bytes instead "
                    f"of {USABLE * gb:g} x 2**30. Compare the bytes themselves, unrounded: a job 0.1 % over the edge "
                    "must not fit.")
    in_mib = {gb: edges[gb] / 2**20 for gb in FIT_PROBE_GB}
    if all(math.isclose(m * 2, round(m * 2), abs_tol=4e-6) for m in in_mib.values()):  # whole or half MiB, to a byte
        return (f"You round (or truncate) to whole MiB before comparing: on a 16 GB card your answer flips at "
                f"{in_mib[16]:,.1f} MiB instead of {USABLE * 16 * 1024:,.1f} MiB (0.9 x 16 x 1024). Compare the bytes "
                "themselves, unrounded: int() or round() of the MiB moves the edge by up to a MiB.")
    share = edges[16] / (16 * GIB)
    return (f"On a 16 GB card your answer flips at {edges[16] / 1e9:.4g}e9 bytes, {share:.4f} x 16 x 2**30, and the "
            f"share changes with the card's size: compare job_bytes with 0.9 x gpu_memory_gb x 2**30 exactly.")


def fits(answer: Any) -> Feedback:
    """Exercise 09.2: ``fits(job_bytes, gpu_memory_gb)`` is True when the job needs at most 90 % of the
    memory, counted in binary gigabytes (2**30 bytes).

    Example:
        >>> fits(lambda job_bytes, gpu_memory_gb: job_bytes <= 0.9 * gpu_memory_gb * 2**30).ok
        True
        >>> print(fits(lambda job_bytes, gpu_memory_gb: job_bytes <= 0.85 * gpu_memory_gb * 2**30).message[-105:])
        You plan with 0.85 of the memory (85 %); the rule of this notebook is 90 % (0.9 x gpu_memory_gb x 2**30).
    """
    if (fb := _not_a_function(answer, "fits(job_bytes, gpu_memory_gb)")) is not None:
        return fb
    answers = _answers(answer, FIT_CASES)
    if isinstance(answers, Feedback):
        return answers
    expected = [job <= USABLE * gb * GIB for job, gb in FIT_CASES]
    if answers == expected:
        return Feedback(True, f"Right on all {len(FIT_CASES)} jobs, the edge cases too: 0.9 x memory, with 1 GB = "
                              "2**30 bytes (a 16 GB card holds 17.2e9 bytes, and you plan with 15.5e9).")
    i = next(i for i, (a, e) in enumerate(zip(answers, expected, strict=True)) if a != e)
    job, gb = FIT_CASES[i]
    head = (f"A job of {job:,.0f} bytes on a GPU of {gb} GB: the answer is {expected[i]} (0.9 x {gb} x 2**30 = "
            f"{USABLE * gb * GIB:,.0f} bytes), your function says {answers[i]}. ")
    with contextlib.redirect_stdout(io.StringIO()):  # a print in the learner's function runs ~300 times here
        hint = _diagnose_fits(answer)
    if hint is None and math.isclose(job, USABLE * gb * GIB, rel_tol=1e-12):
        hint = "A job of exactly 90 % of the memory fits: compare with <=, not <."
    return wrong(head + (hint or "Compare job_bytes with 0.9 x gpu_memory_gb x 2**30 (binary GB), with <=."))


# --------------------------------------------------------------------------- exercise 3
_ENERGY_RATIO_HINTS = {
    3600.0: "that is watt-seconds over 1000: turn seconds into hours (divide by 3600) before multiplying by kW.",
    1000.0: "that is in watt-hours: divide by 1000 for kilowatt-hours.",
    3_600_000.0: "that is in joules (watt-seconds): divide by 3600 for hours and by 1000 for kilowatts.",
    1 / 3600: "you divided by 3600 twice: images / images_per_s is in seconds; divide by 3600 once.",
    60.0: "you divided the seconds by 60, which gives minutes: an hour has 3600 seconds.",
    1 / 60: "you divided by 60 once too often: seconds / 3600 is already hours.",
    1e6: "you multiplied by 1000 where you should divide: kW = watts / 1000.",
    1e-3: "you divided by 1000 twice: kWh = hours x watts / 1000, once.",
    1 / 24: "that is in kilowatt-days: hours = seconds / 3600, without a further / 24.",
    1000 / 1024: "you divide the watts by 1024: a kilowatt is 1000 W (kilo is decimal for power), so divide by 1000.",
    1000 / 1024**2: "you divide by 1024 twice: a kilowatt is 1000 W; divide the watt-hours by 1000 once.",
}


# Answers that go wrong otherwise than by a constant factor: (what they compute, the hint).
_ENERGY_VARIANTS: list[tuple[Callable[[float, float, float], float], str]] = [
    (lambda n, r, w: (n // r) / 3600 * w / 1000,
     "images // images_per_s drops the fraction of a second (integer division): use /."),
    (lambda n, r, w: (n / r) // 3600 * w / 1000,
     "you floor-divide the seconds by 3600 (// 3600, or int() of the hours), which keeps whole hours only: a run "
     "of 1 h 59 min counts as 1 h and a run under an hour as 0. Use / for every division."),
    (lambda n, r, w: ((n / r) // 3600 * w) // 1000,
     "you floor-divide twice (// 3600 and // 1000), which keeps whole hours and whole kWh only: use / for every "
     "division."),
    (lambda n, r, w: (n / r / 3600 * w) // 1000,
     "you truncate the result to 0 decimals (// 1000, or int() of the kWh, drops the fraction of a kWh): use / "
     "and return it unrounded."),
    (lambda n, r, w: math.ceil(n / r / 3600) * w / 1000,
     "you round the hours up (math.ceil), as a cloud bill might: the energy is for the time the run takes, "
     "unrounded, so a run of 1 h 01 min counts as 1.02 h, not 2 h."),
    (lambda n, r, w: math.ceil(n / r / 3600 * w / 1000),
     "you round the kWh up (math.ceil): return them unrounded."),
    (lambda n, r, w: n * r / 3600 * w / 1000,
     "you multiply images by images_per_s: the run takes images / images_per_s seconds."),
    (lambda n, r, w: r / n / 3600 * w / 1000,
     "images_per_s / images is the wrong way round: the run takes images / images_per_s seconds."),
]


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
    got = _results(answer, ENERGY_CASES, "energy_kwh")
    if isinstance(got, Feedback):
        return got
    expected = [n / r / 3600 * w / 1000 for n, r, w in ENERGY_CASES]
    wrong_at = [i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if not math.isclose(g, e, rel_tol=1e-6)]
    if not wrong_at:
        return Feedback(True, f"Right on all {len(ENERGY_CASES)} runs: seconds = images / rate, hours = seconds / "
                              "3600, kWh = hours x W / 1000. At the board's TDP this is an upper-bound estimate.")
    i = wrong_at[0]
    images, rate, watts = ENERGY_CASES[i]
    head = (f"{images:,} images at {rate:g} images/s on a {watts:g} W GPU use {expected[i]:.6g} kWh; your function "
            f"gives {got[i]:.6g}: ")
    hint = _known_mistake(got, expected, ENERGY_CASES, _ENERGY_RATIO_HINTS, _ENERGY_VARIANTS, rel_tol=1e-6)
    if hint:
        return wrong(head + hint)
    if _same_everywhere(got, expected):
        return wrong(head + f"your function returns {got[0]:.6g} whatever the run (a hard-coded value): compute it "
                            "from images, images_per_s and watts, which change from run to run.")
    for digits in range(0, 5):
        for how, cut in (("round", round), ("truncate", lambda x, d: math.trunc(x * 10**d) / 10**d)):
            if all(math.isclose(g, cut(e, digits), abs_tol=1e-12) for g, e in zip(got, expected, strict=True)):
                return wrong(head + f"you {how} the result to {digits} decimal{'s' if digits != 1 else ''}: return "
                                    "it unrounded (a short run uses a few thousandths of a kWh), and round only to "
                                    "print.")
    return wrong(head + "seconds = images / images_per_s; hours = seconds / 3600; kWh = hours x watts / 1000.")
