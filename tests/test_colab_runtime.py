"""Each notebook on a Colab-like or Kaggle-like runtime: opened alone, it fetches the course and runs.

Runs only under `.venv-colab` (tools/colab_env.py), from `make test-colab`, `make test-kaggle` or `make test-hosted`
(both runtimes in one session on both cores). Each notebook runs in the kernel of its runtime's own venv:

- **Colab**: Python 3.13 with Colab's pins; the kernel starts as Colab's does (``colab_kernel_launcher``), so
  ``google.colab`` is imported before the first cell and the shell is a subclass of ``ZMQInteractiveShell``.
- **Kaggle**: Python 3.12 with Kaggle's pins, ipykernel's launcher, ``KAGGLE_KERNEL_RUN_TYPE`` set, no ``google.colab``.

Each committed notebook is put alone into a fresh folder, as the runtime opens it; its first cell clones the course
from a local bare clone of HEAD (COURSE_REPO_URL) into COURSE_DIR, and the notebook runs in smoke mode. Its claims
are asserted as in `make test`, and its page must carry no stderr (no red text).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import nbrun
import pytest

VENVS = {"colab": os.environ.get("COURSE_COLAB_VENV", ""), "kaggle": os.environ.get("COURSE_KAGGLE_VENV", "")}
# What each runtime is, as the test asserts it from inside its kernel.
EXPECTED = {
    "colab": {"python": [3, 13], "colab_loaded": True, "numpy": "2.1.3", "shell_is_subclass": True},
    "kaggle": {"python": [3, 12], "colab_loaded": False, "numpy": "2.0.2", "shell_is_subclass": False},
}
COMMON = {"tensorflow": "2.20.0", "keras": "3.13.2", "ipykernel": "6.17.1", "IPython": "7.34.0"}
RUNTIMES = [r for r in os.environ.get("COURSE_HOSTED_RUNTIMES", "").split(",") if r]
IN_HOSTED_VENV = bool(VENVS["colab"]) and Path(sys.prefix).resolve() == Path(VENVS["colab"]).resolve()
KAGGLE_ENV = {"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}
pytestmark = [pytest.mark.colab, pytest.mark.skipif(not IN_HOSTED_VENV or not RUNTIMES,
                                                    reason="only in the hosted-runtime venv (make test-colab, "
                                                           "make test-kaggle, make test-hosted)")]
ROOT = Path(__file__).resolve().parent.parent


def as_runtime(runtime: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the kernels this test starts those of `runtime`: its venv's kernelspec, its variables."""
    if runtime not in EXPECTED:
        raise ValueError(f"runtime={runtime!r}: use 'colab' or 'kaggle' (COURSE_HOSTED_RUNTIMES)")
    if not VENVS[runtime]:
        raise ValueError(f"COURSE_{runtime.upper()}_VENV is not set: run make test-{runtime}")
    # JUPYTER_PATH comes first in jupyter_client's kernelspec search: "python3" is this runtime's kernel.
    monkeypatch.setenv("JUPYTER_PATH", str(Path(VENVS[runtime]) / "share" / "jupyter"))
    for key, value in KAGGLE_ENV.items():
        if runtime == "kaggle":
            monkeypatch.setenv(key, value)
        else:
            monkeypatch.delenv(key, raising=False)


PROBE = """\
import importlib.metadata as md, json, os, sys
ZMQ = "ipykernel.zmqshell.ZMQInteractiveShell"
names = [c.__module__ + "." + c.__name__ for c in type(get_ipython()).__mro__]
packages = ["tensorflow-cpu", "keras", "numpy", "ipykernel", "ipython"]
print(json.dumps({"python": list(sys.version_info[:2]), "colab_loaded": "google.colab" in sys.modules,
                  "shell": names[0], "shell_is_subclass": names[0] != ZMQ and ZMQ in names,
                  "kaggle": "KAGGLE_KERNEL_RUN_TYPE" in os.environ,
                  "versions": {p: md.version(p) for p in packages}}))
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_kernel_is_the_runtimes(runtime, monkeypatch, tmp_path):
    import nbformat
    import papermill as pm

    as_runtime(runtime, monkeypatch)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROBE)])
    nbformat.write(notebook, tmp_path / "probe.ipynb")
    pm.execute_notebook(str(tmp_path / "probe.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                        cwd=str(tmp_path), progress_bar=False, execution_timeout=120)
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    seen = json.loads("".join(o.get("text", "") for o in out.cells[0].outputs if o.get("name") == "stdout"))
    for key, value in EXPECTED[runtime].items():
        if key != "numpy":
            assert seen[key] == value, f"{runtime}: {key} is {seen[key]!r}, expected {value!r} ({seen})"
    versions = seen["versions"]
    assert versions["numpy"] == EXPECTED[runtime]["numpy"], versions
    assert (versions["tensorflow-cpu"], versions["keras"], versions["ipykernel"], versions["ipython"]) == (
        COMMON["tensorflow"], COMMON["keras"], COMMON["ipykernel"], COMMON["IPython"]), versions
    assert seen["kaggle"] == (runtime == "kaggle")
    if runtime == "colab":
        assert seen["shell"] == "google.colab._shell.Shell", seen
    probe = subprocess.run([str(Path(VENVS[runtime]) / "bin" / "python"), "-c",
                            "import sys, importlib.util as u; print('google.colab' in sys.modules, "
                            "u.find_spec('helpers') is None)"], capture_output=True, text=True, check=True,
                           cwd=tmp_path)
    assert probe.stdout.split() == ["False", "True"], (
        f"{runtime}: a child process imports google.colab, or helpers is installed: {probe.stdout}")


@pytest.fixture(scope="session")
def bare_clone(tmp_path_factory):
    target = tmp_path_factory.mktemp("remote") / "course.git"
    subprocess.run(["git", "clone", "--bare", "--quiet", str(ROOT), str(target)], check=True)
    return target


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", nbrun.present())
def test_notebook_fetches_the_course_and_runs_alone(name, runtime, tmp_path, bare_clone, monkeypatch):
    import nbformat
    import papermill as pm

    folder = tmp_path / ("working" if runtime == "kaggle" else "opened")  # Kaggle's kernels start in /kaggle/working
    folder.mkdir()
    # The notebook alone, as Colab opens it from the repository: the committed version, like the helpers.
    shown = subprocess.run(["git", "--git-dir", str(bare_clone), "show", f"HEAD:notebooks/{name}"], capture_output=True)
    if shown.returncode:
        pytest.skip(f"{name} is not committed yet")
    (folder / name).write_bytes(shown.stdout)
    course = tmp_path / ("kaggle temp" if runtime == "kaggle" else "content") / "gpu-deep-learning-notebooks"
    as_runtime(runtime, monkeypatch)
    monkeypatch.setenv("COURSE_REPO_URL", str(bare_clone))
    monkeypatch.setenv("COURSE_DIR", str(course))
    monkeypatch.setenv("COURSE_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("COURSE_SMOKE", raising=False)
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)  # the kernel forwards C++ stderr, as a real one does
    results_path = tmp_path / "results.json"
    nbrun.once_more_if_the_kernel_dies(lambda: pm.execute_notebook(
        str(folder / name), str(tmp_path / name), parameters={"SMOKE": True, "RESULTS_PATH": str(results_path)},
        cwd=str(folder), kernel_name="python3", progress_bar=False, execution_timeout=900), tmp_path / name)
    assert (course / "helpers" / "__init__.py").exists(), f"the first cell did not fetch the course on {runtime}"
    results = json.loads(results_path.read_text())
    executed = nbformat.read(tmp_path / name, as_version=4)
    red = nbrun.stderr_text(executed).strip()  # what the page shows in red
    assert not red, f"{name} on {runtime}: the page shows stderr in red: {red[:600]}"
    run = nbrun.Run(results, executed, 0.0, tmp_path)
    # Some claims ask the helpers (for example whether a worker still runs): use the copy the notebook fetched.
    monkeypatch.syspath_prepend(str(course))
    importlib.import_module(f"claims.nb{name[:2]}").check(run)
    assert os.listdir(folder) == [name], f"{name} wrote next to itself: {os.listdir(folder)}"


def readme_gpu_check_cell() -> str:
    """The README's cell for `make gpu-check` on Colab and Kaggle, as written there."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("On Colab or Kaggle there is no `make`"):]
    start = section.index("```python\n") + len("```python\n")
    return section[start:section.index("\n```", start)]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_readmes_gpu_check_cell_works_as_written(runtime, tmp_path, bare_clone, monkeypatch):
    """The cell clones the course, installs papermill and runs tools/gpu_check.py; here with a stand-in GPU report."""
    import nbformat
    import papermill as pm

    cell = readme_gpu_check_cell()
    url = cell.split("git clone --depth=1 ")[1].split()[0]
    as_runtime(runtime, monkeypatch)
    # git fetches the README's address from the local bare clone (no network), the cell unchanged.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "2")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.file://{bare_clone}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", url)
    monkeypatch.setenv("GIT_CONFIG_KEY_1", "protocol.file.allow")
    monkeypatch.setenv("GIT_CONFIG_VALUE_1", "always")
    # On the runtime, `python` is the runtime's own interpreter.
    monkeypatch.setenv("PATH", f"{Path(VENVS[runtime]) / 'bin'}{os.pathsep}{os.environ['PATH']}")
    t4 = {"name": "Tesla T4", "compute_capability": "7.5", "memory_gib": 14.7}
    monkeypatch.setenv("COURSE_GPU_CHECK_FAKE", json.dumps({"gpus": [t4] * (2 if runtime == "kaggle" else 1),
                                                           "notebooks": ["00"]}))
    monkeypatch.setenv("COURSE_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for key in ("COURSE_SMOKE", "PYTEST_CURRENT_TEST", "COURSE_DIR", "COURSE_REPO_URL"):
        monkeypatch.delenv(key, raising=False)
    folder = tmp_path / "opened"
    folder.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)]), folder / "check.ipynb")
    pm.execute_notebook(str(folder / "check.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                        cwd=str(folder), progress_bar=False, execution_timeout=900)
    printed = "".join(o.get("text", "") for o in nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[0].outputs)
    reports = sorted((folder / url.rsplit("/", 1)[1] / "benchmarks" / "gpu-runs").glob("*.json"))
    assert reports, f"{runtime}: the cell wrote no report. It printed:\n{printed[-2000:]}"
    report = json.loads(reports[-1].read_text())
    assert report["passed"] == 1 and not report["failed"], printed[-2000:]
    assert report["mode"] == "quick" and [g["name"] for g in report["machine"]["gpus"]] == [t4["name"]] * (
        2 if runtime == "kaggle" else 1)
    machine = report["machine"]
    assert (machine["tensorflow"], machine["keras"]) == (COMMON["tensorflow"], COMMON["keras"]), machine
    assert machine["python"].startswith(".".join(map(str, EXPECTED[runtime]["python"]))), machine
    assert "[1/1] 00_environment_check.ipynb" in printed and "Estimate, not a measurement" in printed, printed
