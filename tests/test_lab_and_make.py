"""`make lab` serves JupyterLab on 127.0.0.1 behind a token; `make doctor` prints the readiness table."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.prefix)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_make_lab_serves_on_localhost_with_token_auth():
    port, token = free_port(), "course-test-token"
    proc = subprocess.Popen(
        ["make", "-s", "lab", f"VENV={VENV}", f"LAB_PORT={port}", f"LAB_TOKEN={token}", "LAB_BROWSER=--no-browser"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 90
        status = None
        while time.time() < deadline and proc.poll() is None:
            try:
                status = get(f"{base}/api/status?token={token}")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.5)
        assert status == 200, f"no answer with the token (exit {proc.poll()})"
        assert get(f"{base}/api/status") == 403, "the server must refuse requests without the token"
        assert get(f"{base}/api/status?token=wrong") == 403
        contents = urllib.request.urlopen(f"{base}/api/contents?token={token}", timeout=5).read().decode()
        assert "00_environment_check.ipynb" in contents, "the lab must open on notebooks/"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0, "server still listening after stop"


def test_make_doctor_prints_the_readiness_table_and_verdict():
    out = subprocess.run(["make", "-s", "doctor", f"VENV={VENV}"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "GPU visible to TensorFlow" in out.stdout and "Verdict: READY" in out.stdout
    assert out.stderr == ""


@pytest.mark.parametrize("environ, system, expected", [
    ({"COURSE_TF_FLAVOUR": "cuda"}, "Linux", "cuda"),
    ({}, "Darwin", "plain"),
    ({}, "Windows", "cpu"),
])
def test_installer_picks_the_tensorflow_flavour(environ, system, expected):
    sys.path.insert(0, str(ROOT / "tools"))
    import install

    assert install.detect_flavour(environ, system) == expected
    req, rest = install.tensorflow_requirement("tensorflow==2.21.0\nkeras==3.15.1\n", expected)
    assert req.endswith("==2.21.0") and "tensorflow" not in rest
    with pytest.raises(ValueError, match="COURSE_TF_FLAVOUR='gpu'.*cpu, cuda, plain"):
        install.detect_flavour({"COURSE_TF_FLAVOUR": "gpu"})


def test_requirements_pin_every_runtime_package():
    for name in ("requirements.txt", "requirements-test.txt"):
        for line in (ROOT / name).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                assert "==" in line, f"{name}: unpinned {line!r}"
