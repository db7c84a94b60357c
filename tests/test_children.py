"""helpers.children: a visible script run in fresh Pythons, each answering in JSON."""

from __future__ import annotations

import sys

import pytest

from helpers import children

PROBE = '''
import json, os, sys
import tensorflow as tf
split = int(sys.argv[1]) if len(sys.argv) > 1 else 0
if split:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * split)
tf.debugging.set_log_device_placement(os.environ.get("LOG_PLACEMENT") == "1")
product = tf.matmul(tf.ones((8, 8)), tf.ones((8, 8)))
print(json.dumps({"visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
                  "gpus": len(tf.config.list_physical_devices("GPU")),
                  "logical": [d.name for d in tf.config.list_logical_devices("CPU")],
                  "device": product.device}))
'''


def test_child_environ_removes_sets_and_keeps_helpers_importable():
    base = {"CUDA_VISIBLE_DEVICES": "0", "KEEP": "1"}
    environ = children.child_environ({"CUDA_VISIBLE_DEVICES": None, "NEW": "x"}, base=base)
    assert "CUDA_VISIBLE_DEVICES" not in environ
    assert environ["NEW"] == "x" and environ["KEEP"] == "1"
    assert environ["TF_CPP_MIN_LOG_LEVEL"] == "2"
    assert environ["PYTHONPATH"].split(":")[0] == str(children.ROOT)


def test_run_script_refuses_bad_arguments_before_starting_anything(tmp_path):
    script = tmp_path / "s.py"
    with pytest.raises(ValueError, match="script="):
        children.run_script(script, {"x": {}})
    script.write_text("print('{}')")
    with pytest.raises(ValueError, match="unknown key"):
        children.run_script(script, {"x": {"envv": {}}})
    with pytest.raises(ValueError, match="non-empty"):
        children.run_script(script, {})
    with pytest.raises(ValueError, match="args"):
        children.run_script(script, {"x": {"args": "1"}})
    with pytest.raises(ValueError, match="timeout="):
        children.run_script(script, {"x": {}}, timeout=0)


def test_a_failing_child_is_reported_without_raising(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n")
    out = children.run_script(script, {"bad": {}})["bad"]
    assert not out.ok and out.answer == {}
    assert "exit code 3" in out.error and "boom" in out.error


def test_a_child_that_hangs_is_killed_at_the_timeout(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import time\ntime.sleep(60)\n")
    out = children.run_script(script, {"slow": {}}, timeout=1)["slow"]
    assert not out.ok and "within 1 s" in out.error and out.seconds < 30


def test_fresh_processes_hide_gpus_split_the_cpu_and_capture_the_placement_log(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    out = children.run_script(script, {
        "hidden": {"env": {"CUDA_VISIBLE_DEVICES": "-1"}},
        "split": {"args": ["2"]},
        "log": {"env": {"TF_CPP_MIN_LOG_LEVEL": "0", "LOG_PLACEMENT": "1"}},
    }, python=sys.executable)
    assert all(c.ok for c in out.values()), {k: c.error for k, c in out.items()}
    assert out["hidden"].answer["gpus"] == 0 and out["hidden"].answer["visible"] == "-1"
    assert len(out["split"].answer["logical"]) == 2
    assert out["log"].stderr_lines("Executing op"), "placement log lines should be in the captured stderr"
    assert not out["hidden"].stderr_lines("Executing op")


# ---------------------------------------------------------------- the device environment of a child
ENV_PROBE = '''
import json, os
print(json.dumps({k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "TF_FORCE_GPU_ALLOW_GROWTH", "KEEP")}))
'''


def test_gpu_env_without_a_gpu_changes_nothing():
    assert children.gpu_env(None, environ={"CUDA_VISIBLE_DEVICES": "-1"}) == {}
    assert children.gpu_env(None, environ={}) == {}


def test_gpu_env_with_one_gpu_and_no_list_gives_the_index_and_memory_growth():
    assert children.gpu_env(0, environ={}) == {"CUDA_VISIBLE_DEVICES": "0", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    assert children.gpu_env(1, environ={"OTHER": "x"})["CUDA_VISIBLE_DEVICES"] == "1"


def test_gpu_env_respects_the_parents_list_of_indices():
    parent = {"CUDA_VISIBLE_DEVICES": "2,3"}  # a SLURM allocation: this process's GPU:0 is the machine's GPU 2
    assert children.gpu_env(0, environ=parent)["CUDA_VISIBLE_DEVICES"] == "2"
    assert children.gpu_env(1, environ=parent)["CUDA_VISIBLE_DEVICES"] == "3"
    assert children.gpu_env(0, environ={"CUDA_VISIBLE_DEVICES": " 5 , 7"})["CUDA_VISIBLE_DEVICES"] == "5"
    with pytest.raises(ValueError, match="sees 2 GPU"):
        children.gpu_env(2, environ=parent)


def test_gpu_env_passes_uuids_and_mig_names_as_they_are():
    uuids = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,GPU-0c9a1f2e-59b6-4d9e-1b1f-7b2a3c4d5e6f"
    assert children.gpu_env(1, environ={"CUDA_VISIBLE_DEVICES": uuids})["CUDA_VISIBLE_DEVICES"] == uuids.split(",")[1]
    mig = "MIG-4b1c2d3e-1111-2222-3333-444455556666"
    assert children.gpu_env(0, environ={"CUDA_VISIBLE_DEVICES": mig})["CUDA_VISIBLE_DEVICES"] == mig


def test_gpu_env_stops_where_cuda_stops_and_refuses_bad_indices():
    assert children.gpu_env(0, environ={"CUDA_VISIBLE_DEVICES": "1,-1,2"})["CUDA_VISIBLE_DEVICES"] == "1"
    with pytest.raises(ValueError, match="sees 1 GPU"):
        children.gpu_env(1, environ={"CUDA_VISIBLE_DEVICES": "1,-1,2"})  # CUDA never sees the 2
    with pytest.raises(ValueError, match="sees 0 GPU"):
        children.gpu_env(0, environ={"CUDA_VISIBLE_DEVICES": ""})
    for bad in (-1, "0", True, 0.0):
        with pytest.raises(ValueError, match="gpu="):
            children.gpu_env(bad, environ={})


@pytest.mark.parametrize("parent, gpu, visible, growth", [
    ({}, None, None, None),  # no GPU: the child inherits the parent's (empty) view
    ({}, 0, "0", "true"),  # one GPU, no list
    ({"CUDA_VISIBLE_DEVICES": "2,3"}, 0, "2", "true"),  # the parent's entry, not the index
    ({"CUDA_VISIBLE_DEVICES": "GPU-aaaa,GPU-bbbb"}, 1, "GPU-bbbb", "true"),  # UUIDs
])
def test_run_script_gives_each_child_its_device_environment(tmp_path, monkeypatch, parent, gpu, visible, growth):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    for key, value in parent.items():
        monkeypatch.setenv(key, value)
    script = tmp_path / "env.py"
    script.write_text(ENV_PROBE)
    out = children.run_script(script, {"child": {"gpu": gpu, "env": {"KEEP": "1"}}})["child"]
    assert out.ok, out.error
    expected_visible = visible if gpu is not None else parent.get("CUDA_VISIBLE_DEVICES")
    assert out.answer == {"CUDA_VISIBLE_DEVICES": expected_visible, "TF_FORCE_GPU_ALLOW_GROWTH": growth, "KEEP": "1"}
    if gpu is not None:  # what the child got is on record beside its answer
        assert out.env["CUDA_VISIBLE_DEVICES"] == visible and out.env["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"


def test_run_script_refuses_a_device_said_twice(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('{}')")
    with pytest.raises(ValueError, match="keep one"):
        children.run_script(script, {"x": {"gpu": 0, "env": {"CUDA_VISIBLE_DEVICES": "1"}}})
