"""Start `make lab` on a free localhost port with a known token, and stop it (the whole process group)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(url: str) -> int:
    """HTTP status of a GET (raises URLError when nothing listens)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@dataclass
class Lab:
    base: str
    token: str
    port: int
    process: subprocess.Popen


@contextlib.contextmanager
def running_lab(extra_args: str = "", env: dict[str, str] | None = None, timeout: float = 90,
                lab_dir: Path | None = None) -> Iterator[Lab]:
    """`make lab` on a free port with a known token; `lab_dir` serves a copy instead of notebooks/."""
    port, token = free_port(), "course-test-token"
    # `make lab` first runs `make kernel` (ipykernel install into the venv): two test workers starting a lab at the
    # same moment race on that kernelspec folder, and one `make lab` exits with 2. One start at a time.
    starting = open(Path(sys.prefix) / ".labserver-start.lock", "w")  # noqa: SIM115 - closed in finally
    fcntl.flock(starting, fcntl.LOCK_EX)
    proc = subprocess.Popen(
        ["make", "-s", "lab", f"VENV={sys.prefix}", f"LAB_PORT={port}", f"LAB_TOKEN={token}",
         f"LAB_ARGS=--no-browser {extra_args}".strip(), *([f"LAB_DIR={lab_dir}"] if lab_dir else [])],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        # Without PYTEST_CURRENT_TEST, kernels forward C++ stderr to the page as a learner's do.
        env={**{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}, **(env or {})})
    lab = Lab(f"http://127.0.0.1:{port}", token, port, proc)
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"make lab exited with {proc.returncode}: {proc.stdout.read()[-2000:]}")
            try:
                if status(f"{lab.base}/api/status?token={token}") == 200:
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.time() > deadline:
                raise TimeoutError(f"JupyterLab did not answer on port {port} within {timeout} s")
            time.sleep(0.5)
        fcntl.flock(starting, fcntl.LOCK_UN)
        yield lab
    finally:
        starting.close()  # releases the lock if the start failed
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
