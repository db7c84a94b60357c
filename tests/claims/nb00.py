"""Claims of notebook 00 · environment check, asserted on its results JSON, on any hardware."""

import os

from claims import common


def check(run) -> None:
    common.dispatch(run, __name__)


def shared(run):
    r = run.results
    assert r["tf_version"].startswith("2."), r["tf_version"]
    assert r["devices"], "no physical devices recorded"
    assert any(d.endswith("CPU:0") for d in r["devices"]), r["devices"]
    gpu_devices = [d for d in r["devices"] if ":GPU:" in d]
    assert r["gpu_count"] == len(gpu_devices) == len(r["gpus"]), (r["gpu_count"], r["devices"])
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "-1":
        assert r["gpu_count"] == 0
    assert isinstance(r["on_colab"], bool) and isinstance(r["on_kaggle"], bool)
    assert r["on_kaggle"] == ("KAGGLE_KERNEL_RUN_TYPE" in os.environ), "Kaggle is detected by its variable"
    assert r["ready"] is True and r["readiness"]["Course data (sha256)"] is True, r["readiness"]
    assert r["readiness"]["GPU visible to TensorFlow"] == (r["gpu_count"] > 0)
    assert r["build"]["is_cuda_build"] in (True, False)
    assert r["exercises_solved"] is True
    assert "Verdict: ready" in run.outputs_text()
    assert run.stderr_text() == "", run.stderr_text()
    assert "Traceback" not in run.outputs_text()


def on_cpu(run):
    r = run.results
    assert r["gpus"] == [] and not any(":GPU:" in d for d in r["logical_devices"])
    text = run.outputs_text()
    assert "Colab" in text, "no-GPU advice missing"
    assert "EXAMPLE, not measured here" in text, "the T4 example must be labelled as not measured"


def on_gpu(run):
    r = run.results
    assert r["build"]["is_cuda_build"] is True, "a GPU run needs a CUDA build of TensorFlow"
    for gpu in r["gpus"]:
        assert gpu["name"] and gpu["compute_capability"] and len(gpu["compute_capability"]) == 2, gpu
    assert any(":GPU:" in d for d in r["logical_devices"]), r["logical_devices"]
    text = run.outputs_text()
    assert "EXAMPLE, not measured here" not in text, "a GPU run shows its own GPU, not the T4 example"
    assert "GPU 0:" in text
