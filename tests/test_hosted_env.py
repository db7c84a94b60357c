"""tools/colab_env.py: where the hosted runtimes' Pythons come from, and Colab's kernel as the venv reproduces it."""

from __future__ import annotations

import importlib
import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import colab_env  # noqa: E402


def test_each_runtime_has_its_python_and_pins():
    assert colab_env.RUNTIMES["colab"]["python"] == "3.13"
    assert colab_env.RUNTIMES["kaggle"]["python"] == "3.12"
    for spec in colab_env.RUNTIMES.values():
        pins = (colab_env.ROOT / spec["requirements"]).read_text()
        for pin in ("tensorflow-cpu==2.20.0", "keras==3.13.2", "ipykernel==6.17.1", "ipython==7.34.0"):
            assert pin in pins.splitlines(), (spec["requirements"], pin)
    assert "numpy==2.1.3" in (colab_env.ROOT / "requirements-colab.txt").read_text().splitlines()
    assert "numpy==2.0.2" in (colab_env.ROOT / "requirements-kaggle.txt").read_text().splitlines()


def test_an_unknown_runtime_is_refused_by_name():
    with pytest.raises(ValueError, match=r"runtime='paperspace': use one of \['colab', 'kaggle'\]"):
        colab_env.build("paperspace")


def test_candidates_try_the_named_python_then_pyenv_then_the_system_then_the_own_build(tmp_path):
    home = tmp_path / "home"
    for version in ("3.13.0", "3.13.5", "3.12.1"):
        (home / ".pyenv" / "versions" / version / "bin").mkdir(parents=True)
        (home / ".pyenv" / "versions" / version / "bin" / ("python" + version[:4])).touch()
    found = colab_env.candidates("python3.13-not-on-path", "3.13", home, tmp_path / "cache")
    assert found[0] == "python3.13-not-on-path"
    assert found[1:3] == [str(home / ".pyenv/versions/3.13.5/bin/python3.13"),
                          str(home / ".pyenv/versions/3.13.0/bin/python3.13")]  # the newest patch release first
    assert found[3:] == ["/usr/bin/python3.13", "/usr/local/bin/python3.13",
                         str(tmp_path / "cache" / "python-3.13" / "bin" / "python3.13")]


def test_no_compiler_gives_one_sentence_naming_what_to_install(monkeypatch):
    monkeypatch.setattr(colab_env, "_missing_build_packages", lambda: ["libssl-dev", "libffi-dev"])
    monkeypatch.setattr(colab_env.os, "geteuid", lambda: 1000)  # not root: nothing is installed
    with pytest.raises(SystemExit) as stop:
        colab_env.build_cpython("3.13")
    message = str(stop.value)
    assert "libssl-dev libffi-dev" in message and "COLAB_PYTHON=" in message and "\n" not in message


def test_only_the_pinned_cpython_is_built(monkeypatch):
    with pytest.raises(SystemExit, match="builds only 3.13.5"):
        colab_env.build_cpython("3.14")


def test_a_source_with_another_hash_is_refused_and_nothing_is_left(monkeypatch, tmp_path):
    monkeypatch.setattr(colab_env, "_missing_build_packages", lambda: [])
    monkeypatch.setattr(colab_env.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(colab_env, "CACHE", tmp_path)
    monkeypatch.setattr(colab_env.urllib.request, "urlopen", lambda url, timeout: io.BytesIO(b"not CPython"))
    with pytest.raises(SystemExit, match="refused"):
        colab_env.build_cpython("3.13")
    assert list(tmp_path.iterdir()) == [], "a refused download left files in the cache"


def test_the_fake_colab_kernel_is_colabs_a_subclass_of_ipykernels_shell(tmp_path, monkeypatch):
    zmqshell = pytest.importorskip("ipykernel.zmqshell")
    for relative, text in colab_env.FAKE_COLAB.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    colab = [m for m in sys.modules if m == "google.colab" or m.startswith("google.colab.")]
    for name in colab:
        monkeypatch.delitem(sys.modules, name)
    try:
        shell = importlib.import_module("google.colab._shell")
        kernel = importlib.import_module("google.colab._kernel")
        assert issubclass(shell.Shell, zmqshell.ZMQInteractiveShell)
        assert shell.Shell is not zmqshell.ZMQInteractiveShell
        assert kernel.Kernel.shell_class.default_value is shell.Shell
    finally:  # "google.colab" in sys.modules is how the course tells Colab: leave none behind for later tests
        for name in [m for m in sys.modules if (m == "google.colab" or m.startswith("google.colab.")) and
                     m not in colab]:
            del sys.modules[name]
    assert "google.colab" not in sys.modules or "google.colab" in colab
    assert "launch_new_instance(kernel_class=_kernel.Kernel)" in colab_env.FAKE_COLAB["colab_kernel_launcher.py"]


def test_the_kernelspec_starts_the_runtimes_launcher(tmp_path):
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    import json
    for runtime, module in (("colab", "colab_kernel_launcher"), ("kaggle", "ipykernel_launcher")):
        spec = colab_env.install_kernelspec(python, runtime)
        argv = json.loads((spec / "kernel.json").read_text())["argv"]
        assert argv == [str(python), "-m", module, "-f", "{connection_file}"]
