"""`make test`'s notebook runs: each notebook executed in ONE kernel, twice, and every check asserted on it.

Loaded as a pytest plugin (``pytest -p tests.notebook_session ... notebooks``; the Makefile does it), this
collects each ``notebooks/NN_x.ipynb`` as one group of test items that share a kernel, in this order:

``NN_x.ipynb::claims``
    Pass 1: the notebook with papermill's parameters (``SMOKE = True``, ``RESULTS_PATH``) injected after its
    parameters cell, in a kernel whose working folder is outside a copy of the course that sits in a folder
    whose name has a space, with that copy's ``helpers`` first on the path and Keras resolving
    ``jit_compile="auto"`` as on a GPU machine (:func:`nbrun.kernel_environment`). Then
    ``tests/claims/nbNN.py``'s ``check(run)`` on the results it wrote, and nothing written outside its scratch
    folder or into the course.
``NN_x.ipynb::variant: ...`` (00, 06, 07)
    Where a third execution used to test another path, the notebook's one kernel takes it (:data:`VARIANTS`):
    CUDA hidden for 00, oneDNN off for 06 (the path of CPUs without AVX-512), four replicas in 07's pass 1;
    this item asserts what that path must show.
``NN_x.ipynb::Cell 0`` ... ``Cell N``
    Pass 2, nbval's own cell items (``--nbval-lax``: cells marked ``# NBVAL_CHECK_OUTPUT`` are compared with
    their recorded outputs, sanitised by ``--nbval-sanitize-with``): every code cell of the committed notebook
    once more in the same kernel, so a cell that fails the second time fails here (CONTRIBUTING.md: "twice in a
    row in one kernel").
``NN_x.ipynb::second run shows no stderr``
    No red text (stderr, which includes C++ log lines: the kernel forwards descriptor 2 as JupyterLab's do)
    in pass 2.

Before, ``make test`` ran every notebook four times in three kernels (the claims run, twice in one kernel,
nbval); now twice in one. The items of a notebook carry ``xdist_group`` marks, so ``--dist loadgroup`` keeps
them on one worker, in order, while the unit tests fill the other worker.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from nbval import plugin as nbval_plugin

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
pytest.register_assert_rewrite("claims")

import nbrun  # noqa: E402

CELL_TIMEOUT = 600  # seconds for one cell, as papermill's execution_timeout in tests/nbrun.py
EXPECTED_IN_WORKDIR = {"results.json", "scratch", "ipython"}  # plus the executed notebook itself


def _no_gpu_when_cuda_hidden(run: nbrun.Run) -> None:
    assert run.results["gpu_count"] == 0
    assert run.results["devices"] and all(":GPU:" not in d for d in run.results["devices"])


def _on_the_eigen_path(run: nbrun.Run) -> None:
    # The claims (among them the time box's rule) held on this slow path; the variable reached the kernel.
    assert run.results["onednn"]["on"] is False, run.results["onednn"]


def _four_replicas(run: nbrun.Run) -> None:
    r = run.results
    assert r["replicas"] == 4 and r["replicas_asked"] == 4
    assert r["global_batch"] == r["per_replica_batch"] * 4
    assert len(r["fresh_split"]["logical"]) == 4


# Where a notebook's one kernel takes a path a third execution would otherwise test: its environment (for the
# whole kernel), pass 1's extra parameters (pass 2 keeps the defaults), and what is asserted on top of the claims.
VARIANTS = {
    "00_environment_check.ipynb": ("CUDA hidden", {"CUDA_VISIBLE_DEVICES": "-1"}, {}, _no_gpu_when_cuda_hidden),
    "06_mixed_precision.ipynb": ("TensorFlow's path on CPUs without AVX-512 (oneDNN off, 16-bit math emulated)",
                                 {"TF_ENABLE_ONEDNN_OPTS": "0"}, {}, _on_the_eigen_path),
    "07_multi_gpu_mirrored_strategy.ipynb": ("pass 1 on four replicas", {}, {"N_REPLICAS": 4}, _four_replicas),
}


class DeadKernel(RuntimeError):
    """The kernel process died while a cell ran (a crash of TensorFlow's C++ runtime, not a Python error)."""


class CellFailed(AssertionError):
    """A cell of pass 1 raised: the message names the cell and carries its traceback."""


def execute(kernel: Any, source: str, timeout: float = CELL_TIMEOUT) -> list[dict]:
    """Run `source` in nbval's running `kernel`; return its outputs as nbformat output dicts.

    Raises :class:`DeadKernel` if the kernel dies, ``TimeoutError`` after `timeout` seconds.
    """
    import nbformat

    msg_id = kernel.execute_cell_input(source, allow_stdin=False)
    outputs: list[dict] = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            msg = kernel.get_message("iopub", timeout=1)
        except Empty:
            if not kernel.is_alive():
                raise DeadKernel("the kernel died") from None
            if time.monotonic() > deadline:
                kernel.interrupt()
                raise TimeoutError(f"cell still running after {timeout} s") from None
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content["execution_state"] == "idle":
            break
        if kind == "stream":
            if outputs and outputs[-1].get("name") == content["name"]:
                outputs[-1]["text"] += content["text"]
            else:
                outputs.append(nbformat.v4.new_output("stream", name=content["name"], text=content["text"]))
        elif kind in ("display_data", "execute_result"):
            outputs.append(nbformat.v4.new_output("display_data", data=content["data"],
                                                  metadata=content.get("metadata", {})))
        elif kind == "error":
            outputs.append(nbformat.v4.new_output("error", ename=content["ename"], evalue=content["evalue"],
                                                  traceback=content["traceback"]))
        elif kind == "clear_output":
            outputs.clear()
    kernel.await_reply(msg_id, timeout=30)  # the shell reply, so the channel holds nothing for nbval's cells
    return outputs


def run_all(kernel: Any, notebook: Any) -> None:
    """Execute every code cell of `notebook` in `kernel`, in order, storing its outputs; stop at an error."""
    import re

    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        cell.outputs = execute(kernel, cell.source)
        errors = [o for o in cell.outputs if o["output_type"] == "error"]
        if errors:
            trace = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors[0]["traceback"]))
            first = cell.source.strip().splitlines()[0][:80] if cell.source.strip() else "empty"
            raise CellFailed(f"cell {index} ({first}) raised {errors[0]['ename']}: {errors[0]['evalue']}\n{trace}")


def parameterised(path: Path, results_path: Path, **params: Any) -> Any:
    """The notebook with papermill's parameters cell injected, as ``papermill`` would run it."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = load_notebook_node(str(path))
    return parameterize_notebook(nb, {"SMOKE": True, "RESULTS_PATH": str(results_path), **params})


def keep_executed(path: Path, folder: str | None = None) -> Path | None:
    """Copy pass 1's executed notebook into ``COURSE_EXECUTED_DIR`` when set (``make test`` sets build/executed).

    The course site's browser test builds from that folder (``tools/build_book.py --executed``) instead of
    executing every notebook once more. Written to a temporary name, then renamed: never half-written.
    """
    folder = os.environ.get("COURSE_EXECUTED_DIR") if folder is None else folder
    if not folder:
        return None
    target = Path(folder) / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    shutil.copyfile(path, partial)
    partial.replace(target)
    return target


def course_copy(config: pytest.Config) -> Path:
    """One copy of the course per test process, in a folder whose name has a space (as on a laptop)."""
    copy = getattr(config, "_course_copy", None)
    if copy is None:
        copy = nbrun.copy_course(config._tmp_path_factory.mktemp("home") / "Documents" / "ML course")
        config._course_copy = copy
    return copy


class SessionNotebook(nbval_plugin.IPyNbFile):
    """A course notebook: claims (pass 1), nbval's cells (pass 2) and the stderr check, in one kernel."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.compare_outputs = False  # lax: only cells marked NBVAL_CHECK_OUTPUT are compared
        self.workdir: Path | None = None
        self.cells: list[Any] = []
        self.variant = VARIANTS.get(self.path.name, ("", {}, {}, None))
        self.run: nbrun.Run | None = None  # pass 1, once the claims item ran it

    def start_kernel(self) -> None:
        """nbval's kernel, started in the claims run's environment and working folder."""
        env = nbrun.kernel_environment(self.workdir, course=course_copy(self.config), gpu_path=True)
        env["COURSE_SMOKE"] = "1"  # pass 2 runs the committed parameters cell, which reads it
        env.update(self.variant[1])
        with nbrun.kernel_environ(env):
            self.kernel = nbval_plugin.RunningKernel("python3", cwd=str(self.workdir),
                                               startup_timeout=self.config.option.nbval_kernel_startup_timeout)

    def setup(self) -> None:
        self.workdir = self.config._tmp_path_factory.mktemp(self.path.stem[:2]) / "my runs"
        self.workdir.mkdir()
        self.start_kernel()
        self.setup_sanitize_files()

    def collect(self):
        group = pytest.mark.xdist_group(name=self.path.stem)
        claims = ClaimsItem.from_parent(self, name="claims")
        cells = list(super().collect())
        self.cells = cells
        stderr = SecondRunStderrItem.from_parent(self, name="second run shows no stderr")
        extra = [VariantItem.from_parent(self, name=f"variant: {self.variant[0]}")] if self.variant[3] else []
        for item in [claims, *extra, *cells, stderr]:
            item.add_marker(group)
            item.add_marker(pytest.mark.notebook)
            yield item


class ClaimsItem(pytest.Item):
    """Pass 1 (papermill's parameters) and the notebook's claims on the results it wrote."""

    def runtest(self) -> None:
        parent: SessionNotebook = self.parent
        name = parent.path.name
        results_path = parent.workdir / "results.json"
        params = parent.variant[2]
        notebook = parameterised(parent.path, results_path, **params)
        start = time.perf_counter()
        try:
            run_all(parent.kernel, notebook)
        except DeadKernel:  # seen once in CI on the Colab-era TensorFlow: run once more in a new kernel
            import warnings

            warnings.warn(f"the kernel died in pass 1 of {name}; running it once more", RuntimeWarning,
                          stacklevel=1)
            parent.kernel.stop()
            shutil.rmtree(parent.workdir / "scratch", ignore_errors=True)
            parent.start_kernel()
            notebook = parameterised(parent.path, results_path, **params)
            run_all(parent.kernel, notebook)
        seconds = time.perf_counter() - start
        import nbformat

        nbformat.write(notebook, parent.workdir / name)
        keep_executed(parent.workdir / name)
        run = nbrun.Run(json.loads(results_path.read_text()), notebook, seconds, parent.workdir)
        parent.run = run
        print(f"{name}: smoke run {seconds:.1f} s")
        with pytest.MonkeyPatch.context() as mp:  # the claims read the variables the kernel had (CUDA hidden)
            for key, value in parent.variant[1].items():
                mp.setenv(key, value)
            importlib.import_module(f"claims.nb{name[:2]}").check(run)
        leftovers = {p.name for p in parent.workdir.iterdir()} - EXPECTED_IN_WORKDIR - {name}
        assert not leftovers, f"{name} wrote outside its scratch folder: {leftovers}"
        assert not (course_copy(self.config) / "scratch").exists(), f"{name} wrote into the course folder"

    def reportinfo(self):
        return self.path, None, f"{self.parent.path.name}::claims"


class VariantItem(pytest.Item):
    """What pass 1 of this notebook's variant (:data:`VARIANTS`) must show on top of the claims."""

    def runtest(self) -> None:
        parent: SessionNotebook = self.parent
        assert parent.run is not None, f"{parent.path.name}: pass 1 did not finish (see its claims item)"
        parent.variant[3](parent.run)

    def reportinfo(self):
        return self.path, None, f"{self.parent.path.name}::{self.name}"


class SecondRunStderrItem(pytest.Item):
    """Pass 2 (nbval's cells) showed no stderr: no red text on the learner's page the second time."""

    def runtest(self) -> None:
        parent: SessionNotebook = self.parent
        unrun = [c.name for c in parent.cells if c.test_outputs is None and not c.options.get("skip")]
        assert not unrun, f"{parent.path.name}: cells that did not run the second time: {unrun}"
        red = "\n".join(o.get("text", "") for c in parent.cells for o in (c.test_outputs or [])
                        if o.get("name") == "stderr")
        assert red == "", f"{parent.path.name}: stderr on the second run: {red}"

    def reportinfo(self):
        return self.path, None, f"{self.parent.path.name}::second run shows no stderr"


@pytest.hookimpl(tryfirst=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    """Course notebooks become :class:`SessionNotebook` groups (instead of plain nbval files)."""
    if file_path.suffix == ".ipynb" and file_path.parent == nbrun.NOTEBOOKS and file_path.name in nbrun.COURSE:
        return SessionNotebook.from_parent(parent, path=file_path)
    return None


def pytest_configure(config: pytest.Config) -> None:
    if config.option.nbval or config.option.nbval_lax:
        raise pytest.UsageError("tests.notebook_session collects the notebooks itself: drop --nbval/--nbval-lax")
