"""Notebook 06's memory claim follows what each device really does (``helpers.precision.peak_share_limit``).

Below compute capability 8.0 TensorFlow computes a bfloat16 convolution through float32 copies
(tensorflow/core/kernels/conv_ops_bfloat16.cc), and cuDNN's workspace sits inside every peak, so a T4's
bfloat16 peak is not held to the 75 % measured on a CPU; an A100's still is (plus the workspace).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from claims import nb06

from helpers import precision

FIXTURE = json.loads((Path(__file__).resolve().parent / "claims" / "gpu_nb06.json").read_text())


def memory_of(cc, bf16_share, f16_share=0.53, workspace_mb=64):
    memory = copy.deepcopy(FIXTURE["results"]["memory"])
    f32 = memory["peak_bytes"]["float32"]
    memory["peak_bytes"].update(mixed_float16=int(f16_share * f32), mixed_bfloat16=int(bf16_share * f32))
    memory.update(compute_capability=list(cc), workspace_mb=workspace_mb, expected_share={
        p: round(precision.peak_share_limit(p, "GPU", cc, f32, workspace_mb)[0], 4) for p in precision.PEAK_SHARE})
    return memory


def test_a_t4s_bfloat16_peak_through_float32_convolutions_passes_the_claim():
    nb06.peak_shares(memory_of((7, 5), bf16_share=0.95))  # above the CPU's 75 %: float32 copies, as on a T4


def test_an_a100_is_still_held_to_the_cpus_share_plus_its_workspace():
    f32 = FIXTURE["results"]["memory"]["peak_bytes"]["float32"]
    limit = 0.75 + 64 * 2**20 / f32
    nb06.peak_shares(memory_of((8, 0), bf16_share=limit - 0.01))
    with pytest.raises(AssertionError, match="mixed_bfloat16 peak"):
        nb06.peak_shares(memory_of((8, 0), bf16_share=limit + 0.01))


def test_the_whole_t4_run_passes_the_shared_claims_with_its_bfloat16_peak():
    data = FIXTURE
    run = SimpleNamespace(results=data["results"], outputs_text=lambda: "\n".join(data["text"]),
                          stderr_text=lambda: "")
    peak = data["results"]["memory"]["peak_bytes"]
    assert peak["mixed_bfloat16"] > 0.60 * peak["float32"]  # the fixture's T4 keeps a float32-sized conv copy
    nb06.shared(run)


def test_the_page_and_the_claim_use_one_rule():
    nb = json.loads((Path(__file__).resolve().parent.parent / "notebooks" / "06_mixed_precision.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "helpers.precision.peak_share_limit(" in code and '"expected_share"' in code


@pytest.mark.parametrize("policy, device, cc, limit", [
    ("mixed_float16", "CPU", None, 0.60), ("mixed_bfloat16", "CPU", None, 0.75),
    ("mixed_float16", "GPU", (7, 5), 0.60 + 0.0625), ("mixed_bfloat16", "GPU", (7, 5), 1.25 + 0.0625),
    ("mixed_bfloat16", "GPU", (6, 0), 1.3125), ("mixed_bfloat16", "GPU", None, 1.3125),
    ("mixed_bfloat16", "GPU", (8, 0), 0.75 + 0.0625), ("mixed_bfloat16", "GPU", (9, 0), 0.8125)])
def test_peak_share_limit_by_device_and_compute_capability(policy, device, cc, limit):
    got, why = precision.peak_share_limit(policy, device, cc, float32_peak=2**30, workspace_mb=64)
    assert got == pytest.approx(limit) and why


def test_peak_share_limit_defaults_to_tensorflows_4096_mib_workspace_and_refuses_bad_input():
    assert precision.peak_share_limit("mixed_float16", "GPU", (8, 0), float32_peak=2**32)[0] == pytest.approx(1.6)
    for kwargs, name in (({"policy": "float32"}, "policy="), ({"device_type": "TPU"}, "device_type="),
                         ({"float32_peak": 0}, "float32_peak="), ({"workspace_mb": -1}, "workspace_mb="),
                         ({"compute_capability": (8,)}, "compute_capability=")):
        args = {"policy": "mixed_float16", "device_type": "GPU", "compute_capability": (8, 0),
                "float32_peak": 2**30, **kwargs}
        with pytest.raises(ValueError, match=name):
            precision.peak_share_limit(**args)
