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
    power = {"GPU:0": sampled(66.0, 0.3)}  # the CPU's benchmark runs without a sampler
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


def test_the_claims_refuse_gpu_watts_under_a_cpu_key():
    power = {"CPU:0": sampled(20.0, 0.05), "GPU:0": sampled(66.0, 0.3)}  # what the page recorded before
    run = SimpleNamespace(results={"benchmark_power": power, "images_per_s": {"CPU:0": 5.0, "GPU:0": 410.0}},
                          outputs_text=lambda: run_cell({"GPU:0": power["GPU:0"]}))
    with pytest.raises(AssertionError, match="CPU:0"):
        nb09.benchmark_power(run)


def benchmark_cell() -> str:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    return next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith("rates, spreads, power, tf32"))


def test_the_benchmark_cell_samples_the_gpu_only_and_keeps_its_timed_repeats():
    """The page's benchmark cell, a fake GPU: one sampler, around GPU:0's benchmark, its window the timed repeats."""
    nvml, made = fakes.PowerNVML(watts=20.0), []

    class Sampler(monitor.PowerSampler):
        def __init__(self):
            super().__init__(interval=0.01, nvml=nvml, gpu_index=0)
            made.append(self)

    def forward_on(device):
        def forward(x):  # GPU:0's calls draw 70 W and take 20 ms
            nvml.watts = 70.0 if "GPU" in device else 20.0
            time.sleep(0.02)
            return SimpleNamespace(numpy=lambda: None)
        return forward

    fake = SimpleNamespace(env=SimpleNamespace(tf32_state=lambda tf, gpus: "TF32 off: a fake"),
                           monitor=SimpleNamespace(PowerSampler=Sampler), bench=helpers.bench)
    namespace = {"helpers": fake, "tf": SimpleNamespace(random=SimpleNamespace(uniform=lambda shape: shape)),
                 "hw": SimpleNamespace(gpus=[], gpu_count=1), "forward_on": forward_on, "cpu_batch": 2,
                 "repeats": 3, "SMOKE": True, "results": {}}
    namespace["results"] = SimpleNamespace(update=lambda **kw: namespace.update(recorded=kw))
    with contextlib.redirect_stdout(io.StringIO()):
        exec(benchmark_cell(), namespace)
    power = namespace["recorded"]["benchmark_power"]
    assert set(power) == {"GPU:0"} and len(made) == 1, power  # no sampler around the CPU's benchmark
    window = made[0].window
    assert window[1] - window[0] == pytest.approx(power["GPU:0"]["seconds"])
    assert power["GPU:0"]["seconds"] < made[0].seconds  # the timed repeats, not all it sampled
    assert power["GPU:0"]["mean_w"] == 70.0, power  # the warm-up's switch from 20 W is outside the window
