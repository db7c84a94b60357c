"""Every notebook runs under papermill in smoke mode, in a temporary folder, and its claims hold.

Each notebook writes its key results to RESULTS_PATH; ``tests/claims/nbNN.py`` asserts on them.
Learner-size runs are in ``test_learner_runs`` (``make test-full``).
"""

import importlib

import nbrun
import pytest

NOTEBOOKS = nbrun.present()


def claims_for(name: str):
    return importlib.import_module(f"claims.nb{name[:2]}")


@pytest.mark.notebook
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_claims_hold_in_smoke_mode(name, tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_SMOKE", raising=False)  # papermill sets SMOKE itself
    run = nbrun.run_notebook(name, tmp_path, smoke=True)
    print(f"{name}: smoke run {run.seconds:.1f} s")
    claims_for(name).check(run)
    leftovers = {p.name for p in tmp_path.iterdir()} - {name, "results.json", "scratch"}
    assert not leftovers, f"{name} wrote outside its scratch folder: {leftovers}"


@pytest.mark.notebook
def test_notebook_00_records_no_gpu_when_cuda_hidden(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    run = nbrun.run_notebook("00_environment_check.ipynb", tmp_path, smoke=True)
    assert run.results["gpu_count"] == 0
    assert run.results["devices"] and all(":GPU:" not in d for d in run.results["devices"])


def test_every_notebook_has_claims():
    for name in NOTEBOOKS:
        assert hasattr(claims_for(name), "check"), f"tests/claims/nb{name[:2]}.py needs check(run)"


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_learner_runs(name, tmp_path, monkeypatch):
    """Learner sizes (SMOKE False). Prints the wall time; the 120 s target is checked in benchmarks/."""
    monkeypatch.delenv("COURSE_SMOKE", raising=False)
    run = nbrun.run_notebook(name, tmp_path, smoke=False, timeout=1200)
    print(f"\n{name}: learner run {run.seconds:.1f} s")
    claims_for(name).check(run)


@pytest.mark.notebook
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_twice_in_a_row_in_one_kernel(name, tmp_path, monkeypatch):
    """CONTRIBUTING.md: "twice in a row in one kernel" - the setup cell and every demo are idempotent."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("COURSE_SMOKE", "1")
    monkeypatch.setenv("COURSE_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(nbrun.NOTEBOOKS / name, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel():
        for _ in range(2):
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)  # raises CellExecutionError on any error
    red = nbrun.stderr_text(nb)
    assert red == "", f"{name}: stderr on the second run: {red}"
