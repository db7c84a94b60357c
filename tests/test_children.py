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
