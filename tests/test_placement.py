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
