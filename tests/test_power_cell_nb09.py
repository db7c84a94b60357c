"""Notebook 09's power cell on a GPU, with a fake NVML: the samples taken while the benchmark ran, quoted as measured.

The cell runs as written on the page (its source is read from the notebook), fed a PowerSampler that sampled a
fake GPU during a fake benchmark, so the GPU branch is tested on a machine without one.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path
from types import SimpleNamespace

import fakes
import pytest
from claims import nb09

import helpers
from helpers import monitor

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "09_choosing_a_gpu.ipynb"


def power_cell() -> str:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    return next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith("NVML_AVERAGE_S"))


def sampled(watts=66.0, seconds=0.3):
    nvml = fakes.PowerNVML(watts=20.0)
    with monitor.PowerSampler(interval=0.02, nvml=nvml, gpu_index=0) as sampler:
        nvml.watts = watts  # the GPU works from here; the clock marks the timed calls inside that
        sampler.clock()
        time.sleep(seconds)
        sampler.clock()
        nvml.watts = 20.0
    return sampler.summary()


def run_cell(power, name="Tesla T4", cc=(7, 5), rate=410.0):
    hw = SimpleNamespace(gpus=[SimpleNamespace(name=name, compute_capability=cc)], gpu_count=1)
    namespace = {"helpers": helpers, "table": helpers.gpus.specs(), "hw": hw, "rates": {"GPU:0": rate},
                 "power": power}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(power_cell(), namespace)
    return out.getvalue()


def test_the_power_line_quotes_the_samples_taken_during_the_benchmark():
    power = {"CPU:0": sampled(31.0, 0.05), "GPU:0": sampled(66.0, 0.3)}
    text = run_cell(power)
    g = power["GPU:0"]
    assert g["samples"] >= 5 and g["mean_w"] == 66.0, g  # only the working GPU's samples: none of the idle 20 W
    assert f"{g['samples']} NVML samples over {g['seconds']:.2f} s, mean 66 W, max 66 W of a 70 W TDP" in text
    assert f"{66.0 / 410.0:.3f} J per image at the rate measured." in text and "may be low" not in text
    run = SimpleNamespace(results={"benchmark_power": power, "images_per_s": {"CPU:0": 5.0, "GPU:0": 410.0}},
                          outputs_text=lambda: text)
    nb09.benchmark_power(run)  # the claims accept what the cell printed


@pytest.mark.parametrize("cc, seconds, low", [((8, 6), 0.3, True), ((8, 0), 0.3, False), ((8, 9), 1.1, False)])
def test_a_run_shorter_than_nvmls_average_is_flagged_on_newer_cards(cc, seconds, low):
    """NVML averages power over 1 s from compute capability 8.6 (not on the A100, 8.0): a shorter run may read low."""
    power = {"GPU:0": dict(sampled(60.0, 0.05), seconds=seconds)}
    text = run_cell(power, name="NVIDIA A10", cc=cc)
    assert ("the mean may be low" in text) == low, text


def test_without_samples_the_cell_says_why():
    power = {"GPU:0": monitor.PowerSampler(nvml=fakes.PowerNVML(unsupported={"power_mw"}), gpu_index=0)
             .start().stop().summary()}
    assert "No power samples of GPU:0 during the benchmark: NVML reads no power of GPU 0" in run_cell(power)
