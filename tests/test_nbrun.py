"""The test harness itself: a notebook whose kernel dies is run once more, and the cell it died in is named."""

import json
import os
import warnings

import nbrun
import pytest


class DeadKernelError(Exception):
    """Named as nbclient's, which the harness matches by name."""


def saved(tmp_path, running):
    cells = [{"cell_type": "code", "source": src, "metadata": {"papermill": {"status": status}}}
             for src, status in [("import helpers", "completed"), (running, "running"), ("print(1)", "pending")]]
    path = tmp_path / "out.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    return path


def test_the_cell_that_was_running_is_named(tmp_path):
    assert nbrun.where_the_kernel_died(saved(tmp_path, "tf.profiler.experimental.start(x)\nmore")) == \
        "cell 1 (tf.profiler.experimental.start(x))"
    assert nbrun.where_the_kernel_died(tmp_path / "missing.ipynb") == "a cell papermill did not save"


def test_a_dead_kernel_is_run_once_more_with_a_warning(tmp_path):
    calls = []

    def execute():
        calls.append(1)
        if len(calls) == 1:
            raise DeadKernelError("Kernel died")

    with pytest.warns(RuntimeWarning, match=r"died in cell 1 \(train\(\)\) of out.ipynb"):
        nbrun.once_more_if_the_kernel_dies(execute, saved(tmp_path, "train()"))
    assert len(calls) == 2


def test_a_kernel_that_dies_twice_fails_and_a_cell_error_fails_at_once(tmp_path):
    out = saved(tmp_path, "train()")

    def always_dies():
        raise DeadKernelError("Kernel died")

    with warnings.catch_warnings(), pytest.raises(RuntimeError, match="died twice in out.ipynb: in cell 1"):
        warnings.simplefilter("ignore")
        nbrun.once_more_if_the_kernel_dies(always_dies, out)
    calls = []

    def cell_error():
        calls.append(1)
        raise ValueError("a Python error in a cell")

    with pytest.raises(ValueError):
        nbrun.once_more_if_the_kernel_dies(cell_error, out)
    assert calls == [1]


def test_the_kernel_inherits_the_callers_environment(tmp_path, monkeypatch):
    """A variable the test sets (CUDA_VISIBLE_DEVICES, TF_ENABLE_ONEDNN_OPTS) reaches the notebook's kernel."""
    seen = {}

    def fake_execute_notebook(*args, **kwargs):
        seen.update(os.environ)
        (tmp_path / "results.json").write_text("{}")
        (tmp_path / "00_environment_check.ipynb").write_text(json.dumps(
            {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))

    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute_notebook)
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "x")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nbrun.run_notebook("00_environment_check.ipynb", tmp_path)
    assert seen["TF_ENABLE_ONEDNN_OPTS"] == "0" and "PATH" in seen and "PYTEST_CURRENT_TEST" not in seen
    assert "TF_CPP_MIN_LOG_LEVEL" not in seen  # a learner's kernel shows what TensorFlow logs
    assert "MPLBACKEND" not in seen  # and draws inline: its figures reach the page (and the course site)
    assert os.environ["PYTEST_CURRENT_TEST"] == "x"  # and the caller's environment comes back
