"""A learner's path in a real browser: `make lab`, open a notebook in JupyterLab, run all cells.

Needs Playwright and Debian's Chromium (`make test-browser` installs both); skipped otherwise.
Every notebook runs in smoke mode (COURSE_SMOKE=1 reaches the kernels through the server's
environment). The test asserts that every cell ran, no cell shows an error or red stderr text, and
the notebook's last line says what it did with its results; it saves a screenshot per notebook.
"""

import os
import shutil
from pathlib import Path

import chromium
import labserver
import nbformat
import nbrun
import pytest

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = chromium.marks()
COUNT_CELLS = """() => {
    // Read from the notebook's model, not the page: JupyterLab draws only the cells in view, and a
    // collapsed cell (the Colab cell) shows no prompt. Red stderr text and tracebacks both count as stderr.
    const widgets = window.jupyterapp.shell.currentWidget.content.widgets;
    const cells = widgets.filter(w => w.model.type === 'code');
    const outputs = cells.flatMap(c => c.model.outputs.toJSON());
    const red = outputs.filter(o => o.output_type === 'error' || (o.output_type === 'stream' && o.name === 'stderr'));
    const text = o => o.output_type === 'error' ? o.ename + (o.traceback || []).join('') : [].concat(o.text).join('');
    return {cells: cells.length, unrun: cells.filter(c => !c.model.executionCount).length,
            stderr: red.length, errors: red.filter(o => /Traceback|Error/.test(text(o))).length};
}"""
SHOTS = Path(os.environ.get("COURSE_SCRATCH") or labserver.ROOT / "scratch") / "browser"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    # Serve copies: JupyterLab autosaves, and the committed notebooks must stay stripped.
    copies = tmp_path_factory.mktemp("lab")
    for name in nbrun.present():
        shutil.copy(nbrun.NOTEBOOKS / name, copies / name)
    control = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('import sys\nsys.stderr.write("red text\\n")'),
                                              nbformat.v4.new_code_cell("1 / 0")])
    control.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(control, copies / "control.ipynb")
    with labserver.running_lab("--LabApp.expose_app_in_browser=True", env={"COURSE_SMOKE": "1"},
                               lab_dir=copies) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    yield from chromium.launched()


def open_and_run_all(lab, browser, name):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{lab.base}/lab/tree/{name}?token={lab.token}&reset", wait_until="domcontentloaded")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext", timeout=60_000)
    page.wait_for_function("window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
                           timeout=60_000)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    return page


def test_page_check_sees_red_stderr_and_errors(lab, browser):
    page = open_and_run_all(lab, browser, "control.ipynb")
    page.locator(".jp-OutputArea-output", has_text="ZeroDivisionError").first.wait_for(timeout=60_000)
    counts = page.evaluate(COUNT_CELLS)
    page.close()
    assert counts["errors"] == 1 and counts["stderr"] == 2, counts


@pytest.mark.parametrize("name", nbrun.present())
def test_notebook_runs_all_cells_cleanly_in_jupyterlab(lab, browser, name):
    page = open_and_run_all(lab, browser, name)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    last_line = page.locator(".jp-Cell").last.locator(".jp-OutputArea-output")
    last_line.filter(has_text="key results").first.wait_for(timeout=180_000)
    # The last output can arrive before the kernel's reply that numbers the cell.
    page.wait_for_function("window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
                           timeout=60_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name[:2]}.png"), full_page=False)
    counts = page.evaluate(COUNT_CELLS)
    page.close()
    assert counts["cells"] > 5 and counts["unrun"] == 0, counts
    assert counts["errors"] == 0 and counts["stderr"] == 0, f"{name}: error or stderr output on the page: {counts}"
    assert not errors, errors
