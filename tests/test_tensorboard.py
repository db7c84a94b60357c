"""Notebook 04's inline TensorBoard: its port, the servers a kernel started, and their stop.

A stand-in for the ``tensorboard`` program (FAKE below, a few lines of Python) serves HTTP on the
--host and --port it is given and records itself in TensorBoard's info folder the way TensorBoard
does (``tensorboard.manager.write_info_file`` once it listens, ``remove_info_file`` at exit, SIGTERM
handled). ``tensorboard.notebook.start``, the code behind ``%tensorboard``, launches it through
$TENSORBOARD_BINARY, so the real manager path is exercised in about a second, without TensorBoard's
own start-up (which imports TensorFlow: about 3 s here). The real server is checked in the
papermill run of notebook 04 (``tests/claims/nb04.py``) and in ``tests/test_browser_tensorboard.py``.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from helpers import pipelines

ROOT = Path(__file__).resolve().parent.parent
FAKE = f"""#!{sys.executable}
import argparse, atexit, http.server, os, signal, sys, time
from tensorboard import manager, version

parser = argparse.ArgumentParser()
parser.add_argument("--logdir", required=True)
parser.add_argument("--host", default="localhost")
parser.add_argument("--port", type=int, default=6006)
parser.add_argument("--load_fast", default="auto")
flags = parser.parse_args()
server = http.server.HTTPServer((flags.host, flags.port), http.server.SimpleHTTPRequestHandler)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
atexit.register(manager.remove_info_file)
manager.write_info_file(manager.TensorBoardInfo(
    version=version.VERSION, start_time=int(time.time()), pid=os.getpid(), port=server.server_port,
    path_prefix="", logdir=flags.logdir, db="", cache_key=manager.cache_key(os.getcwd(), sys.argv[1:], {{}})))
server.serve_forever()
"""


@pytest.fixture
def tb(tmp_path, monkeypatch):
    """A private temp folder (TensorBoard's records go under it), the fake program, a log folder."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    fake = tmp_path / "bin" / "tensorboard"
    fake.parent.mkdir()
    fake.write_text(FAKE)
    fake.chmod(0o755)
    monkeypatch.setenv("TENSORBOARD_BINARY", str(fake))
    monkeypatch.setattr(pipelines, "_kernel_port", None)
    logdir = tmp_path / "a folder with spaces" / "traces"
    logdir.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    yield {"logdir": logdir, "records": temp / ".tensorboard-info"}
    pipelines.stop_tensorboard(timeout=5)


def test_the_magic_starts_our_server_on_127_0_0_1_and_stop_leaves_nothing(tb, capsys):
    from tensorboard import notebook

    port = pipelines.tensorboard_port(tb["logdir"])
    args = f'--logdir "{tb["logdir"]}" --host 127.0.0.1 --port {port} --load_fast=false'  # as the notebook's cell
    notebook.start(args)
    assert f"http://localhost:{port}" in capsys.readouterr().out
    servers = pipelines.tensorboard_servers(port)
    assert len(servers) == 1, servers
    pid = servers[0]["pid"]
    assert servers[0]["listening"] == [f"127.0.0.1:{port}"] and servers[0]["logdir"] == str(tb["logdir"])
    assert json.loads((tb["records"] / f"pid-{pid}.info").read_text())["port"] == port
    assert len(list(tb["records"].parent.glob(".tensorboard-std*"))) == 2, "manager.start's two output files"

    # The cell run again in the same kernel: the same port, the same server, reused (no second process).
    assert pipelines.tensorboard_port(tb["logdir"]) == port
    notebook.start(args)
    assert f"Reusing TensorBoard on port {port} (pid {pid})" in capsys.readouterr().out
    assert [s["pid"] for s in pipelines.tensorboard_servers()] == [pid]

    assert pipelines.stop_tensorboard(port) == [pid]
    assert not psutil.pid_exists(pid), "the stopped server is still in the process table (or a zombie)"
    assert not (tb["records"] / f"pid-{pid}.info").exists(), "its record was left behind"
    assert not list(tb["records"].parent.glob(".tensorboard-std*")), "the server's output files were left behind"
    assert pipelines.tensorboard_servers() == [] and pipelines.stop_tensorboard() == []
    # Run again after the stop (the notebook's second run in one kernel): a new server on the same port.
    notebook.start(args)
    again = pipelines.tensorboard_servers(port)
    assert len(again) == 1 and again[0]["pid"] != pid
    assert pipelines.stop_tensorboard() == [again[0]["pid"]] and not psutil.pid_exists(again[0]["pid"])
    assert sorted(p.name for p in tb["records"].parent.iterdir()) == [".tensorboard-info"], "left in the temp folder"


def test_a_port_another_program_holds_is_given_up_for_a_free_one(tb):
    with socket.socket() as other:  # another kernel's server, or any program, on this kernel's port
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        pipelines._kernel_port = taken
        port = pipelines.tensorboard_port(tb["logdir"])
        assert port != taken and 1024 <= port <= 65535
    assert pipelines.tensorboard_port(tb["logdir"]) == port, "a free port stays this kernel's port"


def test_stop_spares_a_server_this_process_did_not_start(tb):
    # Another kernel's server: a child of another process, not of this one.
    code = ("import subprocess, sys; p = subprocess.Popen(sys.argv[1:]); print(p.pid, flush=True); "
            "sys.stdin.read(); p.terminate(); p.wait()")
    port = pipelines.tensorboard_port(tb["logdir"])
    other = subprocess.Popen([sys.executable, "-c", code, os.environ["TENSORBOARD_BINARY"], "--logdir",
                              str(tb["logdir"]), "--host", "127.0.0.1", "--port", str(port)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(other.stdout.readline())
        assert pipelines.tensorboard_servers() == [] and pipelines.stop_tensorboard() == []
        assert psutil.pid_exists(grandchild)
    finally:
        other.communicate("", timeout=10)
    assert not psutil.pid_exists(grandchild)


def test_records_of_servers_that_no_longer_run_are_forgotten(tb):
    tb["records"].mkdir(exist_ok=True)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead, alive = tb["records"] / f"pid-{int(gone.stdout)}.info", tb["records"] / f"pid-{os.getpid()}.info"
    dead.write_text("{}")
    alive.write_text("{}")
    pipelines.tensorboard_port(tb["logdir"])
    assert not dead.exists() and alive.exists()


def test_the_launcher_runs_this_tensorboard_without_tensorflow_from_a_folder_with_spaces(tb, monkeypatch):
    monkeypatch.delenv("TENSORBOARD_BINARY")
    monkeypatch.setattr(pipelines, "_launcher", None)
    pipelines.tensorboard_port(tb["logdir"])
    program = tb["logdir"].parent / "tensorboard_launcher" / "tensorboard"
    assert os.environ["TENSORBOARD_BINARY"] == str(program) and " " in str(program)
    from tensorboard import version

    # As %tensorboard starts it: the file itself, through /bin/sh, which hands it to this Python.
    shown = subprocess.run([str(program), "--version_tb"], capture_output=True, text=True, timeout=60)
    assert shown.stdout.strip() == version.VERSION, shown.stderr[-2000:]
    assert "TensorFlow installation not found" in shown.stderr, "the launcher let TensorBoard import TensorFlow"
    assert 'sys.modules["tensorflow"] = None' in program.read_text()
    # A TENSORBOARD_BINARY set by hand is kept.
    monkeypatch.setenv("TENSORBOARD_BINARY", "/opt/mine/tensorboard")
    pipelines.tensorboard_port(tb["logdir"])
    assert os.environ["TENSORBOARD_BINARY"] == "/opt/mine/tensorboard"


def test_bad_arguments_name_the_parameter_and_the_allowed_values(tb):
    with pytest.raises(ValueError, match=r"logdir=.*missing.* is not a folder"):
        pipelines.tensorboard_port(tb["logdir"] / "missing")
    with pytest.raises(ValueError, match=r"port=70000: use an integer from 0 to 65535"):
        pipelines.tensorboard_servers(70000)
    with pytest.raises(ValueError, match=r"timeout=0: use a number of seconds above 0"):
        pipelines.stop_tensorboard(timeout=0)


def test_notebook_04_serves_tensorboard_on_127_0_0_1_only_and_stops_it():
    cells = [c for c in json.loads((ROOT / "notebooks" / "04_input_pipelines.ipynb").read_text())["cells"]
             if c["cell_type"] == "code"]
    sources = ["".join(c["source"]) for c in cells]
    load = next(i for i, s in enumerate(sources) if "%load_ext tensorboard" in s)
    magic = next(i for i, s in enumerate(sources) if re.search(r"^%tensorboard ", s, re.M))
    stop = next(i for i, s in enumerate(sources) if "helpers.pipelines.stop_tensorboard(" in s)
    assert load <= magic < stop, (load, magic, stop)
    line = re.search(r"^%tensorboard (.*)$", sources[magic], re.M).group(1)
    assert "--host 127.0.0.1" in line and "--port {tb_port}" in line and '--logdir "{trace_root}"' in line, line
    assert "--bind_all" not in "".join(sources) and "0.0.0.0" not in line
    makefile = (ROOT / "Makefile").read_text()
    target = makefile[makefile.index("\ntensorboard:"):].split("\n\n", 1)[0]
    assert "--host 127.0.0.1" in target and "--bind_all" not in target, target


def test_servers_are_read_with_psutil_5_as_colab_ships_it(monkeypatch):
    """psutil 5.9 (Colab's) has Process.connections only; psutil 6 renamed it net_connections."""
    from types import SimpleNamespace

    import psutil

    listen = SimpleNamespace(laddr=SimpleNamespace(ip="127.0.0.1", port=6123), status=psutil.CONN_LISTEN)

    class OldProcess:  # the psutil 5 interface
        pid = 4242

        def cmdline(self):
            return ["python", "tensorboard", "--logdir", "/runs", "--port", "6123"]

        def connections(self, kind="inet"):
            assert kind == "inet"
            return [listen]

    monkeypatch.setattr(pipelines, "_tensorboard_children", lambda port: [OldProcess()])
    assert pipelines.tensorboard_servers(6123) == [
        {"pid": 4242, "port": 6123, "listening": ["127.0.0.1:6123"], "logdir": "/runs"}]
