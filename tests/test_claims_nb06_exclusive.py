"""Notebook 06's claims when GPU:0's compute mode gave the memory children no CUDA context: the CPU measured, and
the claims accept that only with a reason a GPU can give (helpers.children.SKIP_REASONS), never on a GPU in the
default mode, which must measure itself."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from claims import nb06

FIXTURE = json.loads((Path(__file__).resolve().parent / "claims" / "gpu_nb06.json").read_text())
TEXT = "\n".join(FIXTURE["text"]) if isinstance(FIXTURE["text"], list) else FIXTURE["text"]


def run_of(results):
    return SimpleNamespace(results=results, outputs_text=lambda: TEXT, stderr_text=lambda: "")


def skipped(reason, mode):
    r = copy.deepcopy(FIXTURE["results"])
    r["memory"].update(device="CPU:0")
    r["memory_skipped"] = {"reason": reason, "compute_mode": mode, "measured_on": "CPU"}
    return r


def test_the_fixture_measured_on_its_gpu_passes():
    nb06.on_gpu(run_of(FIXTURE["results"]))


@pytest.mark.parametrize(("reason", "mode"), [("exclusive_process", "exclusive_process"),
                                              ("prohibited", "prohibited"), ("device_busy", "unknown")])
def test_a_cpu_measurement_with_the_gpus_reason_passes(reason, mode):
    nb06.on_gpu(run_of(skipped(reason, mode)))


@pytest.mark.parametrize(("reason", "mode"), [("exclusive_process", "default"), ("device_busy", "default"),
                                              ("busy", "unknown"), ("prohibited", "exclusive_process")])
def test_a_cpu_measurement_without_an_accepted_reason_fails(reason, mode):
    with pytest.raises(AssertionError):
        nb06.on_gpu(run_of(skipped(reason, mode)))


def test_a_cpu_measurement_with_no_reason_fails():
    r = skipped("exclusive_process", "exclusive_process")
    r["memory_skipped"] = None
    with pytest.raises(AssertionError):
        nb06.on_gpu(run_of(r))
