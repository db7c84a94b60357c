"""Notebook 02's logical-device child sees only the GPU it splits: the first entry of this kernel's list."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from claims import nb02

from helpers import children, placement

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = json.loads((ROOT / "tests" / "claims" / "gpu_nb02.json").read_text())


@pytest.mark.parametrize("mine, first", [("2,3", "2"), (None, "0"), ("GPU-aaa,GPU-bbb", "GPU-aaa"),
                                         ("MIG-aaa,MIG-bbb", "MIG-aaa"), ("-1", "-1")])
def test_the_split_child_sees_one_entry_of_this_kernels_list(mine, first):
    environ = {} if mine is None else {"CUDA_VISIBLE_DEVICES": mine}
    assert placement.first_gpu_only(["2"], environ) == {"args": ["2"], "env": {"CUDA_VISIBLE_DEVICES": first}}
    with pytest.raises(ValueError, match="args="):
        placement.first_gpu_only("2", environ)


def test_a_real_split_child_under_a_schedulers_list_sees_only_the_first_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")  # a 2-GPU job on GPUs 2 and 3
    script = tmp_path / "echo.py"
    script.write_text("import json, os, sys\n"
                      "print(json.dumps({'visible': os.environ.get('CUDA_VISIBLE_DEVICES'), 'args': sys.argv[1:]}))")
    child = children.run_script(script, {"split": placement.first_gpu_only(["2"])})["split"]
    assert child.answer == {"visible": "2", "args": ["2"]}


def test_notebook_02_runs_its_split_child_on_the_first_gpu_only():
    nb = json.loads((ROOT / "notebooks" / "02_gpu_detection_and_placement.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "helpers.placement.first_gpu_only([\"2\"])" in code
    assert '{"split": {"args": ["2"]}}' not in code, "a split child that inherits the list sees every GPU"


def test_the_claims_refuse_a_two_gpu_run_whose_split_child_saw_both():
    r = copy.deepcopy(FIXTURE["results"])
    r.update(gpu_count=2, physical_devices=r["physical_devices"] + ["/physical_device:GPU:1"],
             split_child_physical_gpus=["/physical_device:GPU:0", "/physical_device:GPU:1"],
             nvml_readings=r["nvml_readings"] + [{**r["nvml_readings"][0], "index": 1}])
    run = SimpleNamespace(results=r, outputs_text=lambda: "\n".join(FIXTURE["text"]), stderr_text=lambda: "")
    with pytest.raises(AssertionError, match="the logical-device child saw 2 GPUs"):
        nb02.on_gpu(run)
    r["split_child_physical_gpus"] = ["/physical_device:GPU:0"]
    nb02.on_gpu(run)
