"""Exercise feedback of notebook 09: functions run on made-up models, jobs and runs.

For every exercise: the model answer and right answers written otherwise pass; plausible wrong answers
(units, margins, fractions, rounding, integer division, wrong types, dropped parts) are refused, and the
hint names the mistake actually made.
"""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from helpers.check import nb09 as check

GIB = 2**30
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "09_choosing_a_gpu.ipynb"


# ---------------------------------------------------------------- exercise 1
@pytest.mark.parametrize("answer", [
    lambda params, dtype_bytes: params * dtype_bytes * 4,  # the model answer
    lambda p, b: sum(p * b for _ in range(4)),  # four values added one by one
    lambda p, b: float((p + p + 2 * p) * b),  # weights + gradients + m and v, as a float
    lambda p, b: np.int64(p) * b * 4,  # a NumPy integer
])
def test_adam_training_bytes_accepts_right_answers_written_differently(answer):
    fb = check.adam_training_bytes(answer)
    assert fb.ok and "16 bytes per weight" in fb.message, fb


@pytest.mark.parametrize("answer, hint", [
    (lambda p, b: 1 * p * b, "weights alone"),
    (lambda p, b: 2 * p * b, "weights and gradients"),
    (lambda p, b: 3 * p * b, "one part of the four is missing"),
    (lambda p, b: 5 * p * b, "one value too many"),
    (lambda p, b: 32 * p * b, "in bits"),
    (lambda p, b: 8 * p * b, "twice the answer"),
    (lambda p, b: p * b / 2, "you divide by 8"),
    (lambda p, b: 4 * p * b / 1e9, "in GB (you divide by 10**9)"),  # the issue's case: GB, not bytes
    (lambda p, b: round(4 * p * b / 1e9, 2), "in GB (you divide by 10**9)"),  # GB, rounded for printing
    (lambda p, b: 4 * p * b / 2**30, "in GiB (you divide by 2**30)"),
    (lambda p, b: 4 * p * b / 1e6, "in MB"),
    (lambda p, b: 16 * p, "16 bytes per weight, float32's figure"),
    (lambda p, b: 18 * p, "mixed precision's figure"),
    (lambda p, b: 2 * p * b + 8 * p, "Adam's two moments at 4 bytes"),
    (lambda p, b: p * b + 12 * p, "only your weights take dtype_bytes"),
    (lambda p, b: 7 * p * b, "count four values per weight"),
])
def test_adam_training_bytes_names_the_mistake(answer, hint):
    fb = check.adam_training_bytes(answer)
    assert not fb.ok and hint in fb.message, fb.message


def test_adam_training_bytes_refuses_constants_placeholders_errors_and_types():
    one = 4 * 25_557_032 * 4  # right for ResNet-50 in float32 only
    assert not check.adam_training_bytes(lambda params, dtype_bytes: one).ok
    assert "Define a function" in check.adam_training_bytes(one).message
    assert "Not answered yet" in check.adam_training_bytes(...).message
    assert "returns None" in check.adam_training_bytes(lambda p, b: None).message
    assert "raised ZeroDivisionError" in check.adam_training_bytes(lambda p, b: p / 0).message
    assert "return a number" in check.adam_training_bytes(lambda p, b: "16 GB").message
    assert "return a number" in check.adam_training_bytes(lambda p, b: True).message
    assert "finite number" in check.adam_training_bytes(lambda p, b: math.inf).message


# ---------------------------------------------------------------- exercise 2
@pytest.mark.parametrize("answer", [
    lambda job_bytes, gpu_memory_gb: job_bytes <= 0.9 * gpu_memory_gb * 2**30,  # the model answer
    lambda j, g: j / 1024**3 <= g * 9 / 10,  # GiB on the left, 9/10 on the right
    lambda j, g: np.bool_(j * 10 <= 9 * g * (1 << 30)),  # integers, a NumPy bool
    lambda j, g: not j > 0.9 * g * 2**30,  # the complement of "too big"
    lambda j, g: j <= g * 1024 * 1024 * 1024 * 0.9,
])
def test_fits_accepts_right_answers_written_differently(answer):
    fb = check.fits(answer)
    assert fb.ok and "2**30" in fb.message, fb


@pytest.mark.parametrize("answer, hint", [
    (lambda j, g: round(j / 2**30) <= 0.9 * g, "round (or truncate) to whole GB"),  # the issue's loophole
    (lambda j, g: j // 2**30 <= 0.9 * g, "round (or truncate) to whole GB"),  # integer division
    (lambda j, g: int(j / 2**30) <= 0.9 * g, "round (or truncate) to whole GB"),
    (lambda j, g: math.ceil(j / 2**30) <= 0.9 * g, "round (or truncate) to whole GB"),
    (lambda j, g: j <= round(0.9 * g) * 2**30, "round (or truncate) to whole GB"),  # the memory rounded
    (lambda j, g: round(j / 2**30, 1) <= 0.9 * g, "round (or truncate) to 1 decimal of a GB"),
    (lambda j, g: j <= 0.85 * g * 2**30, "You plan with 0.85 of the memory (85 %)"),  # the issue's wrong hint
    (lambda j, g: j <= 0.88 * g * 2**30, "You plan with 0.88 of the memory"),
    (lambda j, g: j <= 0.95 * g * 2**30, "You plan with 0.95 of the memory"),
    (lambda j, g: j <= 0.9 * g * 1e9, "1 GB as 10**9 bytes"),
    (lambda j, g: j <= 0.85 * g * 1e9, "1 GB as 10**9 bytes, but GPU memory comes in binary"),
    (lambda j, g: j <= 0.9 * g * 1024e6, "1 GB as 1024 x 10**6 bytes"),
    (lambda j, g: j <= 0.9 * g * 1.074e9, "close to 0.9 but not it"),  # a decimal approximation of 2**30
    (lambda j, g: j <= 0.9 * g * 1.07e9, "close to 0.9 but not it"),
    (lambda j, g: j <= g * 2**30, "keep the 10 % margin"),
    (lambda j, g: j <= g * 1e9, "1 GB as 10**9 bytes"),
    (lambda j, g: 0.9 * j <= g * 2**30, "belongs to the memory"),
    (lambda j, g: j * 1.1 <= g * 2**30, "Adding 10 % to the job"),
    (lambda j, g: j < 0.9 * g * 2**30, "compare with <=, not <"),  # a job of exactly 90 % fits
    (lambda j, g: j >= 0.9 * g * 2**30, "the wrong way round"),
    (lambda j, g: j <= g * 2**30 / 1.2, "not 0.9 x"),
    (lambda j, g: True, "says yes to every job"),
    (lambda j, g: False, "says no to every job"),
])
def test_fits_names_the_mistake(answer, hint):
    fb = check.fits(answer)
    assert not fb.ok and hint.lower() in fb.message.lower(), fb.message


def test_fits_refuses_the_issue_loophole_on_the_issue_case():
    """round(job / 2**30) <= 0.9 * gb said True for 15.47e9 bytes on a 16 GB card, which needs 90.05 %."""
    assert (15.47e9, 16) in check.FIT_CASES and 15.47e9 > 0.9 * 16 * GIB
    fb = check.fits(lambda j, g: round(j / 2**30) <= 0.9 * g)
    assert not fb.ok and "15,470,000,000 bytes" in fb.message and "the answer is False" in fb.message


def test_fits_cases_sit_on_both_sides_of_the_edge_and_on_it():
    shares = [job / (gb * GIB) for job, gb in check.FIT_CASES]
    assert any(0.899 < s < 0.9 for s in shares) and any(0.9 < s < 0.901 for s in shares)
    assert sum(s == 0.9 for s in shares) >= 2


def test_fits_diagnosis_keeps_a_printing_function_quiet(capsys):
    def noisy(job_bytes, gpu_memory_gb):
        print("checking", job_bytes)
        return round(job_bytes / 2**30) <= 0.9 * gpu_memory_gb

    assert "whole GB" in check.fits(noisy).message
    assert capsys.readouterr().out.count("checking") == len(check.FIT_CASES)  # the cases, not the search


def test_fits_refuses_non_booleans_constants_and_placeholders():
    assert "return True or False" in check.fits(lambda j, g: 1).message
    assert "return True or False" in check.fits(lambda j, g: "yes").message
    assert "Define a function" in check.fits(True).message
    assert "returns None" in check.fits(lambda j, g: None).message
    assert "Not answered yet" in check.fits(...).message
    assert "raised TypeError" in check.fits(lambda j: j).message


# ---------------------------------------------------------------- exercise 3
@pytest.mark.parametrize("answer", [
    lambda images, images_per_s, watts: images / images_per_s / 3600 * watts / 1000,  # the model answer
    lambda n, r, w: w / 1000 * (n / r) / 3600,
    lambda n, r, w: n * w / (r * 3.6e6),  # joules over 3.6e6 joules per kWh
    lambda n, r, w: np.float32(n / r / 3600 * w / 1000),  # a NumPy float (float32 is close enough)
])
def test_energy_accepts_right_answers_written_differently(answer):
    fb = check.energy_kwh(answer)
    assert fb.ok and "upper-bound" in fb.message, fb


@pytest.mark.parametrize("answer, hint", [
    (lambda n, r, w: n / r * w / 1000, "divide by 3600"),
    (lambda n, r, w: n / r / 3600 * w, "watt-hours"),
    (lambda n, r, w: n / r * w, "joules"),
    (lambda n, r, w: n / r / 3600 / 3600 * w / 1000, "divided by 3600 twice"),
    (lambda n, r, w: n / r / 60 * w / 1000, "gives minutes"),
    (lambda n, r, w: n / r / 3600 * w * 1000, "multiplied by 1000 where you should divide"),
    (lambda n, r, w: n / r / 3600 * w / 1e6, "divided by 1000 twice"),
    (lambda n, r, w: n * r / 3600 * w / 1000, "multiply images by images_per_s"),
    (lambda n, r, w: r / n / 3600 * w / 1000, "the wrong way round"),
    (lambda n, r, w: (n // r) / 3600 * w / 1000, "integer division"),
    (lambda n, r, w: round(n / r / 3600 * w / 1000, 2), "round the result to 2 decimals"),
    (lambda n, r, w: int(n / r / 3600 * w / 1000), "truncate the result to 0 decimals"),
    # floor division of the hours (a learner's `images//rate//3600*w/1000` returned 0 and was told it truncated
    # the result to 1 decimal): the hint names the // on the hours
    (lambda images, rate, w: images // rate // 3600 * w / 1000, "// 3600"),
    (lambda n, r, w: n / r // 3600 * w / 1000, "keeps whole hours only"),
    (lambda n, r, w: int(n / r / 3600) * w / 1000, "int() of the hours"),
    (lambda n, r, w: n // r // 3600 * w // 1000, "floor-divide twice"),
    (lambda n, r, w: n / r / 3600 * w // 1000, "// 1000"),
    (lambda n, r, w: n / r / 3600 * w / 1000 * 1.1, "seconds = images / images_per_s"),
])
def test_energy_names_the_unit_slip(answer, hint):
    fb = check.energy_kwh(answer)
    assert not fb.ok and hint in fb.message, fb.message


@pytest.mark.parametrize("answer", [
    lambda n, r, w: n // r // 3600 * w / 1000,
    lambda n, r, w: n / r // 3600 * w / 1000,
])
def test_energy_floored_hours_are_not_blamed_on_rounding(answer):
    assert "decimal" not in check.energy_kwh(answer).message


def test_energy_refuses_a_constant_right_for_one_run_and_bad_types():
    assert not check.energy_kwh(lambda n, r, w: 0.4).ok  # right for the first run only
    assert "Define a function" in check.energy_kwh(0.4).message
    assert "Not answered yet" in check.energy_kwh(None).message
    assert "return a number" in check.energy_kwh(lambda n, r, w: "0.4 kWh").message


# ---------------------------------------------------------------- hints the review found missing
@pytest.mark.parametrize("answer, hint", [
    (lambda p, b: round(4 * p * b, -6), "nearest million bytes (round(..., -6))"),
    (lambda p, b: round(4 * p * b, -3), "nearest thousand bytes (round(..., -3))"),
])
def test_adam_training_bytes_names_rounding_to_millions(answer, hint):
    fb = check.adam_training_bytes(answer)
    assert not fb.ok and hint in fb.message, fb.message


@pytest.mark.parametrize("answer, shown", [
    (lambda j, g: j / 2**20 <= int(0.9 * g * 1024), "flips at 14,745.0 MiB"),  # the review's passing answer: truncated
    (lambda j, g: j / 2**20 <= round(0.9 * g * 1024), "flips at 14,746.0 MiB"),  # rounded up, past the edge
    (lambda j, g: round(j / 2**20) <= 0.9 * g * 1024, "whole MiB"),  # the job rounded instead of the edge
    (lambda j, g: math.floor(j / 2**20) <= 0.9 * g * 1024, "whole MiB"),
    (lambda j, g: int(j) // 2**20 <= 0.9 * g * 1024, "whole MiB"),  # integer division of the bytes
])
def test_fits_refuses_an_edge_rounded_to_whole_mib_and_says_so(answer, shown):
    fb = check.fits(answer)
    assert not fb.ok and "You round (or truncate) to whole MiB" in fb.message and shown in fb.message, fb.message


def test_fits_accepts_mib_arithmetic_that_does_not_round():
    assert check.fits(lambda j, g: j / 2**20 <= 0.9 * g * 1024).ok
    assert check.fits(lambda j, g: j / 1024 / 1024 / 1024 <= g * 9 / 10).ok


@pytest.mark.parametrize("answer, hint", [
    (lambda n, r, w: n / r / 3600 * w / 1024, "you divide the watts by 1024"),
    (lambda n, r, w: n / r / 3600 * w / 1024 / 1024, "you divide by 1024 twice"),
    (lambda n, r, w: math.ceil(n / r / 3600) * w / 1000, "you round the hours up (math.ceil)"),
    (lambda n, r, w: -(-n // r // 3600) * w / 1000, "you round the hours up (math.ceil)"),  # ceil by negated //
    (lambda n, r, w: math.ceil(n / r / 3600 * w / 1000), "you round the kWh up"),
    (lambda n, r, w: 0.4, "whatever the run (a hard-coded value)"),
    (lambda n, r, w: 12.0, "whatever the run (a hard-coded value)"),
])
def test_energy_names_1024_ceil_and_hard_coded_values(answer, hint):
    fb = check.energy_kwh(answer)
    assert not fb.ok and hint in fb.message, fb.message
    assert "seconds = images / images_per_s; hours" not in fb.message  # not the generic formula hint


# ---------------------------------------------------------------- the notebook's text matches the checks
def test_the_exercise_text_states_the_counts_the_checks_use():
    nb = json.loads(NOTEBOOK.read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    words = {"four": 4, "five": 5, "six": 6, "nineteen": 19}
    found = re.findall(r"on (\w+)\s+made-up\s+(models|jobs|runs)", text)
    said = {kind: words.get(count) or int(count) for count, kind in found}
    assert said == {"models": len(check.ADAM_CASES), "jobs": len(check.FIT_CASES), "runs": len(check.ENERGY_CASES)}
