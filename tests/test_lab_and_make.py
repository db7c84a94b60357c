"""`make lab` serves JupyterLab on 127.0.0.1 behind a token; `make doctor` prints the readiness table."""

import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import labserver
import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.prefix)


def test_make_lab_serves_on_localhost_with_token_auth():
    with labserver.running_lab() as lab:
        assert labserver.status(f"{lab.base}/api/status") == 403, "the server must refuse requests without the token"
        assert labserver.status(f"{lab.base}/api/status?token=wrong") == 403
        contents = urllib.request.urlopen(f"{lab.base}/api/contents?token={lab.token}", timeout=5).read().decode()
        assert "00_environment_check.ipynb" in contents, "the lab must open on notebooks/"
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", lab.port)) != 0, "server still listening after stop"


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


def test_preflight_names_what_stops_an_install():
    sys.path.insert(0, str(ROOT / "tools"))
    import preflight

    assert preflight.problems((3, 11), free_bytes=10**12) == []
    [old] = preflight.problems((3, 9), free_bytes=10**12)
    assert "3.9 is too old" in old
    [disk] = preflight.problems((3, 11), free_bytes=10**9)
    assert "1.0 GB free" in disk


def test_installer_sees_a_wsl2_driver_by_its_library(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "tools"))
    import install

    monkeypatch.setattr(install.shutil, "which", lambda name: None)
    assert not install.nvidia_driver_present(markers=(str(tmp_path / "libcuda.so.1"),))
    (tmp_path / "libcuda.so.1").write_text("")
    assert install.nvidia_driver_present(markers=(str(tmp_path / "libcuda.so.1"),))
    assert "/usr/lib/wsl/lib/libcuda.so.1" in install.DRIVER_MARKERS


def documented_targets(text: str) -> set[str]:
    return set(re.findall(r"make ([a-z][a-z-]*)", text))


def test_every_make_target_is_in_make_help_and_the_readme():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.MULTILINE)) - {"help"}
    helped = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    readme = (ROOT / "README.md").read_text()
    assert {"install", "kernel"} <= targets
    for where, text in [("make help", helped), ("README.md", readme)]:
        assert not targets - documented_targets(text), f"{where} does not mention {targets - documented_targets(text)}"
