"""Notebooks 06 and 09 on a P100 (compute capability 6.0: no Tensor Cores, no bfloat16; retired from Kaggle).

The hand-written fixtures are T4 runs. These tests turn them into P100 runs with the sentences the helpers
write for 6.0, and check that the claims accept them and refuse a P100 page that promises Tensor Cores.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from claims import nb06, nb09

from helpers import gpus, precision

CLAIMS = Path(__file__).resolve().parent / "claims"
P100 = "Tesla P100-PCIE-16GB"


def fixture(number):
    return json.loads((CLAIMS / f"gpu_nb{number}.json").read_text())


def run_of(results, text):
    return SimpleNamespace(results=results, outputs_text=lambda: "\n".join(text), stderr_text=lambda: "")


def p100_nb06():
    data = fixture("06")
    r = copy.deepcopy(data["results"])
    speed = precision.gpu_speed_reading((6, 0), r["step_s"])
    keep = [line for line in data["text"] if line.startswith(("mixed_float16 peaked", "The loss of the raw batch"))]
    timed = r["multiple_of_8"]
    mult8 = (f"float16 matmul, measured on {P100}: n=4096 {timed['4096']['tflops']:.1f} TFLOP/s, n=4095 "
             f"{timed['4095']['tflops']:.1f} TFLOP/s: the multiple of 8 ran 1.01x the rate. "
             + precision.tensor_core_note((6, 0)))
    return r, keep + [f"GPU: {P100} (compute capability 6.0, 16.0 GiB)", *speed, mult8]


def test_a_p100_run_of_06_passes_the_claims():
    r, text = p100_nb06()
    nb06.check(run_of(r, text))


def test_a_p100_page_that_promises_tensor_cores_is_refused():
    r, text = p100_nb06()
    t4_sentences = precision.gpu_speed_reading((7, 5), r["step_s"])  # what the page would say with the T4 branch
    wrong = [line for line in text if "has no Tensor Cores" not in line and "below" not in line] + t4_sentences
    with pytest.raises(AssertionError):
        nb06.check(run_of(r, wrong))


def test_a_p100_run_of_09_passes_and_gets_float32():
    data = fixture("09")
    r = copy.deepcopy(data["results"])
    r["detected"] = [{"name": P100, "row": "Tesla P100 PCIe 16 GB", "note": "in the table as 'Tesla P100 PCIe 16 GB'"}]
    text = [line for line in data["text"] if not line.startswith("Your Tesla T4")]
    text.append(f"Your {P100} has compute capability 6.0: train with {gpus.suggested_policy((6, 0))} (notebook 06).")
    nb09.check(run_of(r, text))
    wrong = text[:-1] + [f"Your {P100} has compute capability 6.0: train with mixed_bfloat16 (notebook 06)."]
    with pytest.raises(AssertionError, match="compute capability 6.0"):
        nb09.check(run_of(r, wrong))


def test_a_09_page_that_scales_the_p100_by_its_peak_is_refused():
    """The P100 has no Tensor Cores: its row of the cost table says "not comparable", never a rate scaled by peak."""
    data = fixture("09")
    nb09.check(run_of(data["results"], data["text"]))  # the fixture's P100 row: not comparable
    r = copy.deepcopy(data["results"])
    scaled = 2375 * 18.7 / 312  # what scaling the A100's Tensor Core rate by the P100's plain FP16 peak would give
    hours = r["run_job"]["images"] / scaled / 3600
    r["run_cost"]["Tesla P100 PCIe 16 GB"].update(
        images_per_s=scaled, hours=hours, kwh=hours * 250 / 1000,
        rate_source="scaled from the A100 40 GB's measured rate by datasheet peak (18.7 / 312 TFLOP/s): a rough guess")
    text = [line.replace("not comparable (no Tensor Cores)  -      -             not scaled",
                         f"{scaled:,.0f}  {hours:,.1f}  {hours / 4:,.2f}  scaled by peak: rough")
            if line.startswith("Tesla P100") else line for line in data["text"]]
    with pytest.raises(AssertionError, match="Tesla P100"):
        nb09.check(run_of(r, text))
    with pytest.raises(AssertionError, match="not comparable"):  # the right figures, the wrong words on the page
        nb09.check(run_of(data["results"], text))


# --------------------------------------------------------------------------- Kaggle retired the P100
def _learner_texts():
    """Every text a learner reads: README, CONTRIBUTING, each notebook's cells, each helper's strings."""
    root = CLAIMS.parent.parent
    yield from [root / "README.md", root / "CONTRIBUTING.md"]
    yield from sorted((root / "notebooks").glob("*.ipynb"))
    yield from sorted((root / "helpers").rglob("*.py"))


def _offers_kaggles_p100(path: Path) -> list[str]:
    """Lines (with the next one) naming Kaggle and the P100 without saying it is retired; notebooks per cell."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        lines = [line for cell in cells for line in "".join(cell["source"]).splitlines()]
    else:
        lines = path.read_text().splitlines()
    pairs = [" ".join(lines[i:i + 2]).lower() for i in range(len(lines))]  # a sentence may wrap onto the next line
    return [pair for pair in pairs if "kaggle" in pair and "p100" in pair and "retired" not in pair]


@pytest.mark.parametrize("path", list(_learner_texts()), ids=lambda p: str(p.relative_to(CLAIMS.parent.parent)))
def test_no_learner_text_offers_kaggles_retired_p100(path):
    assert _offers_kaggles_p100(path) == []


def test_the_table_keeps_the_p100_labelled_as_retired_from_kaggle():
    rows = {g["name"]: g for g in gpus.specs()}
    assert rows["Tesla P100 PCIe 16 GB"]["retired_from_kaggle"] is True
    assert rows["Tesla T4"]["retired_from_kaggle"] is False  # Kaggle's GPU T4 x2
