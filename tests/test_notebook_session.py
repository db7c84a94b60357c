"""The plugin that runs every notebook once in one kernel for `make test` (tests/notebook_session.py)."""

from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import nbrun
import pytest

notebook_session = pytest.importorskip("notebook_session")


@pytest.fixture(scope="module")
def kernel():
    from nbval.kernel import RunningKernel

    running = RunningKernel("python3")
    yield running
    running.stop()


def test_execute_gathers_streams_results_and_errors_as_a_notebook_would(kernel):
    outputs = notebook_session.execute(kernel, "import sys\nprint('a')\nprint('b')\nsys.stderr.write('red\\n')\n6 * 7")
    assert [o["output_type"] for o in outputs] == ["stream", "stream", "display_data"], outputs
    assert outputs[0]["name"] == "stdout" and outputs[0]["text"] == "a\nb\n"  # one block, as on the page
    assert outputs[1]["name"] == "stderr" and outputs[1]["text"] == "red\n"
    assert outputs[2]["data"]["text/plain"] == "42"
    failed = notebook_session.execute(kernel, "1 / 0")
    assert failed[-1]["output_type"] == "error" and failed[-1]["ename"] == "ZeroDivisionError"


def test_run_all_stops_at_the_first_error_and_names_its_cell(kernel):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# title"),
                                         nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_code_cell("raise ValueError('bad SIZE')"),
                                         nbformat.v4.new_code_cell("y = 2")])
    with pytest.raises(notebook_session.CellFailed, match=r"cell 2 \(raise ValueError.*ValueError: bad SIZE"):
        notebook_session.run_all(kernel, nb)
    assert nb.cells[3].outputs == [] and notebook_session.execute(kernel, "print('y' in dir())")[0]["text"] == "False\n"


def test_a_cell_that_outlives_its_timeout_is_interrupted(kernel):
    with pytest.raises(TimeoutError, match="after 1 s"):
        notebook_session.execute(kernel, "import time\ntime.sleep(30)", timeout=1)
    assert notebook_session.execute(kernel, "print('alive')")[0]["text"] == "alive\n"


def test_pass_one_gets_papermills_parameters_after_the_parameters_cell(tmp_path):
    name = nbrun.COURSE[0]
    nb = notebook_session.parameterised(nbrun.NOTEBOOKS / name, tmp_path / "results.json")
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    first = next(i for i, t in enumerate(tags) if "parameters" in t)
    assert "injected-parameters" in tags[first + 1]
    assert "SMOKE = True" in nb.cells[first + 1].source and str(tmp_path / "results.json") in nb.cells[first + 1].source


def test_each_notebook_is_collected_as_claims_its_variant_its_cells_then_the_stderr_check():
    name = nbrun.COURSE[0]
    listed = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.notebook_session", "--collect-only", "-q",
                             "-p", "no:cacheprovider", f"notebooks/{name}"], cwd=nbrun.ROOT, capture_output=True,
                            text=True)
    ids = [line for line in listed.stdout.splitlines() if line.startswith("notebooks/")]
    code_cells = sum(c.cell_type == "code" for c in nbformat.read(nbrun.NOTEBOOKS / name, as_version=4).cells)
    assert ids[0] == f"notebooks/{name}::claims", listed.stdout + listed.stderr
    assert ids[1] == f"notebooks/{name}::variant: {notebook_session.VARIANTS[name][0]}"  # 00 runs with CUDA hidden
    assert ids[2:-1] == [f"notebooks/{name}::Cell {i}" for i in range(code_cells)]
    assert ids[-1] == f"notebooks/{name}::second run shows no stderr"


def test_the_plugin_refuses_nbvals_own_collector():
    from types import SimpleNamespace

    for flags in ({"nbval": True, "nbval_lax": False}, {"nbval": False, "nbval_lax": True}):
        with pytest.raises(pytest.UsageError, match="drop --nbval"):
            notebook_session.pytest_configure(SimpleNamespace(option=SimpleNamespace(**flags)))
    notebook_session.pytest_configure(SimpleNamespace(option=SimpleNamespace(nbval=False, nbval_lax=False)))


def test_make_test_runs_the_notebooks_through_the_plugin_grouped_per_notebook():
    recipe = re.search(r"^test:.*?(?=^\S)", (nbrun.ROOT / "Makefile").read_text(), re.M | re.S).group(0)
    assert "-p tests.notebook_session" in recipe and "--dist loadgroup" in recipe
    assert "--nbval" not in recipe.replace("--nbval-sanitize-with", "")
    assert recipe.count("-m pytest") == 1, "one pytest session: notebooks and unit tests share the workers"


def test_pass_one_is_kept_for_the_site_only_when_asked_and_never_half_written(tmp_path, monkeypatch):
    executed = tmp_path / "run" / "03_x.ipynb"
    executed.parent.mkdir()
    executed.write_text('{"cells": []}')
    monkeypatch.delenv("COURSE_EXECUTED_DIR", raising=False)
    assert notebook_session.keep_executed(executed) is None
    monkeypatch.setenv("COURSE_EXECUTED_DIR", str(tmp_path / "build" / "executed"))
    kept = notebook_session.keep_executed(executed)
    assert kept == tmp_path / "build" / "executed" / "03_x.ipynb" and kept.read_text() == '{"cells": []}'
    assert [p.name for p in kept.parent.iterdir()] == ["03_x.ipynb"], "no partial file left"
