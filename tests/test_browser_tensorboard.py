"""Notebook 04's inline TensorBoard in a real browser: the frame loads TensorBoard, and the stop leaves nothing.

JupyterLab (``make lab``, ``tests/labserver.py``) serves a two-cell notebook that does what 04's cells do, on a
tiny trace folder: ``%load_ext tensorboard``, ``helpers.pipelines.tensorboard_port``, ``%tensorboard --logdir
... --host 127.0.0.1 --port ...``, and, in the second cell, ``helpers.pipelines.stop_tensorboard()``. Headless
Chromium runs the first cell and waits for TensorBoard's own page inside the output's frame (its profile plugin
active, since the folder holds a trace); then the second cell, and no TensorBoard process may remain. A second
test runs ``make tensorboard`` (the terminal's way) and checks what it listens on. Notebook 04 itself runs in
the browser in ``tests/test_browser.py``. Needs Playwright and Debian's Chromium (``make test-browser``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.parse
import urllib.request

import chromium
import labserver
import nbformat
import psutil
import pytest

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = chromium.marks("tensorboard")
START = """%load_ext tensorboard
import helpers, pathlib
trace_root = pathlib.Path("traces").resolve()
tb_port = helpers.pipelines.tensorboard_port(trace_root)
%tensorboard --logdir "{trace_root}" --host 127.0.0.1 --port {tb_port} --load_fast=false
print("servers:", helpers.pipelines.tensorboard_servers(tb_port))"""
STOP = 'print("stopped:", helpers.pipelines.stop_tensorboard())'
# Offline, the profile plugin's page fails to fetch Google Charts and a web font, and then reports that the charts
# library is missing: what notebook 04 tells a learner without internet. Any other console error fails the test.
EXTERNAL_HOSTS = {"www.gstatic.com", "www.gstatic.cn", "fonts.googleapis.com"}
OFFLINE_ONLY = ("www.gstatic.com/charts/loader.js", "www.gstatic.cn/charts/loader.js", "fonts.googleapis.com/",
                "ReferenceError: google is not defined")
KERNEL_IDLE = "window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'"


def tensorboards(logdir) -> list[psutil.Process]:
    """Every TensorBoard process on this machine that serves `logdir` (whoever started it)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if any(os.path.basename(a) == "tensorboard" for a in cmdline[:2]) and str(logdir) in cmdline:
            found.append(proc)
    return found


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("labtb")  # make lab passes LAB_DIR unquoted: no space here
    # A trace folder as the profiler leaves it: run "tiny", one session, one (empty) XSpace file.
    session = folder / "traces" / "tiny" / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    (session / "host.xplane.pb").write_bytes(b"")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(START), nbformat.v4.new_code_cell(STOP)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "tb.ipynb")
    with labserver.running_lab("--LabApp.expose_app_in_browser=True", lab_dir=folder) as server:
        server.folder = folder
        yield server


def run_cell(page, index: int) -> None:
    page.evaluate(f"""() => {{
        const panel = window.jupyterapp.shell.currentWidget;
        panel.content.activeCellIndex = {index};
        return window.jupyterapp.commands.execute('notebook:run-cell');
    }}""")


@pytest.fixture(scope="module")
def browser():
    yield from chromium.launched()


def test_inline_tensorboard_loads_in_jupyterlab_and_its_stop_leaves_no_process(lab, browser):
    logdir = (lab.folder / "traces").resolve()
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    console, failures = [], []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text} ({m.location.get('url', '')})")
            if m.type == "error" else None)
    page.on("pageerror", lambda exc: failures.append(str(exc)))
    external = []  # nothing leaves this machine: requests to other hosts are refused, and noted

    def refuse(route):
        external.append(urllib.parse.urlsplit(route.request.url).hostname)
        route.abort()

    page.route(lambda url: urllib.parse.urlsplit(url).hostname not in ("127.0.0.1", "localhost"), refuse)
    page.goto(f"{lab.base}/lab/tree/tb.ipynb?token={lab.token}&reset", wait_until="domcontentloaded")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext", timeout=60_000)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    started = time.perf_counter()
    run_cell(page, 0)
    page.locator(".jp-OutputArea-output", has_text="servers:").first.wait_for(timeout=90_000)
    frame = page.frame_locator("iframe[id^='tensorboard-frame-']")
    frame.locator("text=TensorBoard").first.wait_for(timeout=30_000)
    frame.locator("text=/profile/i").first.wait_for(timeout=30_000)
    frame.frame_locator("iframe").first.locator("text=tiny").first.wait_for(timeout=30_000)  # the run
    shown_s = time.perf_counter() - started
    errors_while_shown = [m for m in console if not any(known in m for known in OFFLINE_ONLY)]
    src = page.locator("iframe[id^='tensorboard-frame-']").get_attribute("src") or ""
    servers = tensorboards(logdir)
    assert len(servers) == 1, servers
    listening = {f"{c.laddr.ip}:{c.laddr.port}" for c in servers[0].net_connections("inet")
                 if c.status == psutil.CONN_LISTEN}
    port = next(iter(listening)).rsplit(":", 1)[1] if listening else "?"
    assert listening == {f"127.0.0.1:{port}"}, listening
    assert src.rstrip("/").endswith(f":{port}"), src
    pid = servers[0].pid

    run_cell(page, 1)
    page.locator(".jp-OutputArea-output", has_text="stopped:").first.wait_for(timeout=30_000)
    text = page.locator(".jp-OutputArea-output", has_text="stopped:").first.inner_text()
    page.wait_for_function(KERNEL_IDLE, timeout=30_000)
    page.close()
    print(f"\ninline TensorBoard shown {shown_s:.1f} s after the cell started")
    assert f"stopped: [{pid}]" in text, text
    assert not psutil.pid_exists(pid) and tensorboards(logdir) == [], "a TensorBoard process is still running"
    assert not list(__import__("pathlib").Path(__import__("tempfile").gettempdir(), ".tensorboard-info")
                    .glob(f"pid-{pid}.info")), "its record was left behind"
    assert not failures, failures
    assert not errors_while_shown, errors_while_shown
    assert set(external) <= EXTERNAL_HOSTS, f"the page asked other hosts than the ones 04 names: {set(external)}"


def test_make_tensorboard_serves_the_traces_on_127_0_0_1_only(tmp_path):
    logdir = tmp_path / "traces"
    (logdir / "tiny" / "plugins" / "profile" / "2026_01_01_00_00_00").mkdir(parents=True)
    port = labserver.free_port()
    proc = subprocess.Popen(["make", "-s", "tensorboard", f"TB_LOGDIR={logdir}", f"TB_PORT={port}"],
                            cwd=labserver.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        deadline = time.time() + 60
        while True:
            assert proc.poll() is None, f"make tensorboard exited: {proc.stdout.read()[-2000:]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    page = r.read().decode()
                break
            except OSError:
                assert time.time() < deadline, "TensorBoard did not answer within 60 s"
                time.sleep(0.2)
        assert "<title>TensorBoard</title>" in page or "TensorBoard" in page
        servers = tensorboards(logdir)
        listening = {f"{c.laddr.ip}:{c.laddr.port}" for s in servers for c in s.net_connections("inet")
                     if c.status == psutil.CONN_LISTEN}
        assert listening == {f"127.0.0.1:{port}"}, listening
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    assert tensorboards(logdir) == []
