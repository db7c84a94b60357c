"""The course runs offline: make test runs the notebooks with the network cut, and the cut is real."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import offline  # noqa: E402

PROBE = """
import json, socket
out = {}
for name, address in (("public", ("192.0.2.1", 80)), ("dns", None)):
    try:
        if address:
            s = socket.socket(); s.settimeout(2); s.connect(address)
        else:
            socket.getaddrinfo("pypi.org", 443)
        out[name] = "reached"
    except socket.gaierror:
        out[name] = "cut"
    except OSError as exc:  # unreachable at once, not a time-out: the route itself is gone
        out[name] = "cut" if exc.errno == 101 else f"failed otherwise ({exc})"
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()
client = socket.create_connection(server.getsockname(), timeout=2)
out["loopback"] = "ok"
print(json.dumps(out))
"""


def run_probe(argv_env):
    cmd, env = argv_env
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_offline_wrapper_cuts_the_network_and_keeps_loopback():
    answer = run_probe(offline.command([sys.executable, "-c", PROBE]))
    assert answer == {"public": "cut", "dns": "cut", "loopback": "ok"}, answer


def test_the_socket_guard_cuts_the_network_where_namespaces_are_not_allowed(monkeypatch):
    monkeypatch.setattr(offline, "netns_works", lambda: False)
    cmd, env = offline.command([sys.executable, "-c", PROBE])
    assert env["COURSE_OFFLINE"] == "socket-guard"
    assert run_probe((cmd, env)) == {"public": "cut", "dns": "cut", "loopback": "ok"}


def test_the_wrapper_refuses_an_empty_command():
    with pytest.raises(ValueError, match="give the command"):
        offline.command([])


@pytest.mark.skipif(not os.environ.get("COURSE_OFFLINE"), reason="only inside make test's offline run")
def test_this_test_session_runs_with_the_network_cut():
    """make test runs pytest (and so every notebook's papermill and nbval run) through tools/offline.py."""
    import socket

    with pytest.raises(OSError):
        socket.create_connection(("192.0.2.1", 80), timeout=2)
