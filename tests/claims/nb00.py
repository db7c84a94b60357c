"""Claims of notebook 00 · environment check, asserted on its results JSON."""

import os


def check(run):
    r = run.results
    assert r["tf_version"].startswith("2."), r["tf_version"]
    assert r["devices"], "no physical devices recorded"
    assert any(d.endswith("CPU:0") for d in r["devices"]), r["devices"]
    gpu_devices = [d for d in r["devices"] if ":GPU:" in d]
    assert r["gpu_count"] == len(gpu_devices) == len(r["gpus"]), (r["gpu_count"], r["devices"])
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "-1":
        assert r["gpu_count"] == 0
    assert isinstance(r["on_colab"], bool)
    assert r["ready"] is True and r["readiness"]["Course data (sha256)"] is True, r["readiness"]
    assert r["readiness"]["GPU visible to TensorFlow"] == (r["gpu_count"] > 0)
    assert r["build"]["is_cuda_build"] in (True, False)
    assert r["exercises_solved"] is True
    text = run.outputs_text()
    assert "Verdict: ready" in text
    if r["gpu_count"] == 0:
        assert "Colab" in text, "no-GPU advice missing"
    assert run.stderr_text() == "", run.stderr_text()
