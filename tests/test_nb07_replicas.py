"""Notebook 07 with another N_REPLICAS: 4 replicas train, and too many are refused before TensorFlow starts."""

import os

import nbrun
import pytest
from claims import nb07 as claims

from helpers import distribute

NAME = "07_multi_gpu_mirrored_strategy.ipynb"


@pytest.mark.notebook
def test_notebook_07_trains_on_four_replicas(tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_SMOKE", raising=False)
    run = nbrun.run_notebook(NAME, tmp_path, smoke=True, N_REPLICAS=4)
    print(f"{NAME} with N_REPLICAS=4: smoke run {run.seconds:.1f} s")
    claims.check(run)
    r = run.results
    assert r["replicas"] == 4 and r["replicas_asked"] == 4
    assert r["global_batch"] == r["per_replica_batch"] * 4
    assert len(r["fresh_split"]["logical"]) == 4


@pytest.mark.notebook
def test_notebook_07_refuses_too_many_replicas_before_tensorflow_starts(tmp_path, monkeypatch):
    import nbformat
    import papermill as pm

    too_many = distribute.replica_limit(distribute.visible_gpu_count(), os.cpu_count() or 1) + 1
    if too_many > 64:
        pytest.skip("this machine holds 64 replicas, the most the parameter rule allows")
    monkeypatch.delenv("COURSE_SMOKE", raising=False)
    monkeypatch.setenv("COURSE_SCRATCH", str(tmp_path / "scratch"))
    out = tmp_path / NAME
    with pytest.raises(pm.PapermillExecutionError) as err:
        pm.execute_notebook(str(nbrun.NOTEBOOKS / NAME), str(out), parameters={"SMOKE": True, "N_REPLICAS": too_many},
                            cwd=str(tmp_path), kernel_name="python3", progress_bar=False)
    assert err.value.ename == "ValueError" and f"N_REPLICAS={too_many} is not allowed" in err.value.evalue
    executed = nbformat.read(out, as_version=4)
    text = "\n".join(o.get("text", "") for c in executed.cells for o in c.get("outputs", []))
    assert "Hardware:" not in text, "helpers.setup ran (and started TensorFlow) before the refusal"
