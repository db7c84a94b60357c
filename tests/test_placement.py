"""Tests for helpers.placement: recording where ops run, and fresh-process demos."""

from __future__ import annotations

import pytest

from helpers import env, placement


@pytest.fixture(scope="module")
def tf():
    return env.tensorflow()


def test_short_device_parses_long_and_short_forms():
    assert placement.short_device("/job:localhost/replica:0/task:0/device:CPU:0") == "CPU:0"
    assert placement.short_device("/device:GPU:1") == "GPU:1"
    assert placement.short_device("") == ""
    assert placement.short_device("/CPU:0") == placement.short_device("CPU:0") == "CPU:0"  # short names too
    assert placement.short_device("/job:localhost") == ""


def test_short_device_rejects_non_strings():
    with pytest.raises(ValueError, match="device string"):
        placement.short_device(None)


def test_where_ops_run_reports_the_device_of_each_result(tf):
    a = tf.ones((4, 4))

    def on_cpu():
        with tf.device("/CPU:0"):
            return tf.matmul(a, a)

    where = placement.where_ops_run({"cpu": on_cpu, "pair": lambda: (a + 1, a)})
    assert placement.short_device(where["cpu"]) == "CPU:0"
    assert where["pair"].endswith("device:CPU:0") or where["pair"].endswith("device:GPU:0")


def test_where_ops_run_follows_soft_placement_to_an_existing_device(tf):
    missing = f"/GPU:{len(tf.config.list_physical_devices('GPU'))}"

    def on_missing():
        with tf.device(missing):
            return tf.reduce_sum(tf.ones((3,)))

    where = placement.where_ops_run({"soft": on_missing})
    logical = {placement.short_device(d.name) for d in tf.config.list_logical_devices()}
    assert placement.short_device(where["soft"]) in logical


def test_where_ops_run_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty"):
        placement.where_ops_run({})
    with pytest.raises(ValueError, match="pass a function"):
        placement.where_ops_run({"x": 3})
    with pytest.raises(ValueError, match="has no .device"):
        placement.where_ops_run({"x": lambda: 3})


def test_placement_table_uses_short_names():
    text = placement.placement_table({"matmul": "/job:localhost/replica:0/task:0/device:CPU:0", "odd": ""})
    assert text.splitlines()[1].split() == ["matmul", "CPU:0"]
    assert "(unknown)" in text


# --------------------------------------------------------------------------- 02's CUDA_VISIBLE_DEVICES children
@pytest.mark.parametrize("mine, first", [("2,3", "2"), (None, "0"), ("-1", "-1"), ("", ""),
                                         ("GPU-5d3e8a10,GPU-5d3e8a11", "GPU-5d3e8a10")])
def test_visibility_runs_stay_within_this_kernels_gpus(mine, first):
    environ = {} if mine is None else {"CUDA_VISIBLE_DEVICES": mine}
    runs = placement.visibility_runs(environ)
    assert runs[placement.HIDE_ALL] == {"env": {"CUDA_VISIBLE_DEVICES": "-1"}}
    assert runs[placement.FIRST_ONLY] == {"env": {"CUDA_VISIBLE_DEVICES": first}}
    assert "env" not in runs[placement.AS_THIS_KERNEL], "a child that drops the variable sees GPUs outside the job"
    shown = placement.visibility_value(placement.AS_THIS_KERNEL, runs, environ)
    assert shown == {None: "(not set)", "": "'' (empty)"}.get(mine, mine)


def test_visibility_children_really_inherit_a_schedulers_list(tmp_path, monkeypatch):
    from helpers import children

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")  # what SLURM gives a job on GPUs 2 and 3
    script = tmp_path / "echo.py"
    script.write_text("import json, os; print(json.dumps({'visible': os.environ.get('CUDA_VISIBLE_DEVICES')}))")
    answers = children.run_script(script, placement.visibility_runs())
    seen = {label: child.answer["visible"] for label, child in answers.items()}
    assert seen == {placement.HIDE_ALL: "-1", placement.FIRST_ONLY: "2", placement.AS_THIS_KERNEL: "2,3"}


def test_notebook_02_builds_its_visibility_children_within_the_kernels_list():
    import json

    from helpers.env import ROOT

    nb = json.loads((ROOT / "notebooks" / "02_gpu_detection_and_placement.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "helpers.placement.visibility_runs()" in code
    assert '"CUDA_VISIBLE_DEVICES": None' not in code, "a child without the variable sees every GPU of the machine"
