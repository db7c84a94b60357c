"""Is this machine ready for the course? The readiness table of notebook 00 and ``make doctor``.

Used by notebook 00 (Readiness) and by ``make doctor`` (:func:`main`), which prints the same table in
a terminal for instructors checking a room of machines and exits 0 when every required check passes,
1 otherwise. Each check is a :class:`Check` row; the advice for a machine without a GPU depends on the
platform (Colab, Windows, macOS, a driver without a CUDA build).
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers import env
from helpers.env import ROOT, Report
from helpers.tables import text_table


@dataclass
class Check:
    """One row of the readiness table. `ok` is True, False, or None (information only)."""

    name: str
    ok: bool | None
    required: bool
    detail: str
    advice: str = ""


def no_gpu_advice(rep: Report, system: str | None = None, driver_present: bool | None = None) -> str:
    """Concrete next step when TensorFlow sees no GPU, for this kind of machine.

    Example:
        >>> no_gpu_advice(env.report(), system="Windows").startswith("Native Windows")
        True
    """
    system = system or platform.system()
    if driver_present is None:
        driver_present = rep.nvml.startswith("NVIDIA driver")
    if rep.on_colab:
        return ("On Colab: Runtime > Change runtime type > Hardware accelerator: a GPU (T4 on the free "
                "tier), then Runtime > Restart session and run the notebook again.")
    if rep.on_kaggle:
        return ("On Kaggle: in the notebook's Settings, Accelerator: GPU T4 x2 (two T4 GPUs, Kaggle's one GPU "
                "choice); the session restarts, then run the notebook again.")
    if system == "Windows":
        return ("Native Windows: TensorFlow 2.11 and later has no GPU support there. If this computer has an "
                "NVIDIA GPU, use WSL2 with NVIDIA's driver for WSL and run `make lab` inside it; otherwise use Colab.")
    if system == "Darwin":
        return "macOS: TensorFlow has no CUDA GPU support here. The course runs on the CPU; use Colab for GPU runs."
    if driver_present and not rep.build.get("is_cuda_build"):
        return ("An NVIDIA driver is present but this TensorFlow is a CPU build: reinstall with "
                "`COURSE_TF_FLAVOUR=cuda make install`, then restart the kernel.")
    if driver_present:
        return ("An NVIDIA driver is present but TensorFlow sees no GPU. The course hides TensorFlow's C++ "
                "warnings; to read its reason run `TF_CPP_MIN_LOG_LEVEL=0 .venv/bin/python -c \"import tensorflow "
                "as tf; print(tf.config.list_physical_devices('GPU'))\"`. 'Cannot dlopen some GPU libraries' means "
                "CUDA libraries are missing (`COURSE_TF_FLAVOUR=cuda make install`); a driver older than the "
                "build's CUDA version (see build info) needs updating. Also check CUDA_VISIBLE_DEVICES.")
    return ("No NVIDIA GPU or driver here. Every notebook still runs on the CPU with smaller sizes; for GPU "
            "runs open the notebook in Colab (badge at the top) and choose a GPU runtime.")


def checks(rep: Report, data_ok: bool | None = None, pinned_tf: str | None = None) -> list[Check]:
    """The readiness table: what the course needs (required) and what makes it faster (recommended).

    Example:
        >>> all(isinstance(c, Check) for c in checks(env.report()))
        True
    """
    py_ok = sys.version_info >= (3, 10)
    rows = [
        Check("Python >= 3.10", py_ok, True, rep.python, "" if py_ok else "Install Python 3.10 or newer."),
    ]
    tf_ok = rep.tensorflow.startswith("2.")
    tf_detail = rep.tensorflow + ("" if not pinned_tf or pinned_tf == rep.tensorflow
                                  else f" (course pins {pinned_tf}; other 2.x versions usually work)")
    rows.append(Check("TensorFlow 2.x", tf_ok, True, tf_detail, "" if tf_ok else "Run `make install`."))
    keras_ok = rep.keras.startswith("3.")
    rows.append(Check("Keras 3", keras_ok, True, rep.keras, "" if keras_ok else "Run `make install`."))
    if data_ok is not None:
        rows.append(Check("Course data (sha256)", data_ok, True, "verified" if data_ok else "mismatch",
                            "" if data_ok else "Restore data/ from the repository (git checkout data/)."))
    build = rep.build
    build_detail = (f"CUDA {build.get('cuda_version')}, cuDNN {build.get('cudnn_version')}"
                    if build.get("is_cuda_build") else "CPU-only build (no CUDA)")
    rows.append(Check("TensorFlow build", None, False, build_detail))
    if rep.gpus:
        rows.append(Check("GPU visible to TensorFlow", True, False,
                            "; ".join(g.describe() for g in rep.gpus)))
        ccs = [g.compute_capability for g in rep.gpus if g.compute_capability]
        # GeForce GTX 16xx cards are compute capability 7.5 but were built without Tensor Cores.
        gtx = any("GTX" in g.name.upper() for g in rep.gpus)
        tc = bool(ccs) and min(ccs) >= (7, 0) and not gtx
        detail = ", ".join(f"{a}.{b}" for a, b in ccs) or "unknown"
        rows.append(Check("Tensor Cores (compute capability >= 7.0)", tc, False,
                            detail + (" (GeForce GTX: no Tensor Cores)" if gtx else ""),
                            "" if tc else "Mixed precision (notebook 06) will run but not speed up here."))
        rows += xla_checks(rep)
        mode = compute_mode_check(rep.compute_modes)
        if mode is not None:
            rows.append(mode)
    else:
        rows.append(Check("GPU visible to TensorFlow", False, False, "none", no_gpu_advice(rep)))
        hidden = hidden_gpu_check(rep)
        if hidden is not None:
            rows.append(hidden)
    cores_ok = rep.cpu_logical_cores >= 2
    rows.append(Check("CPU cores >= 2", cores_ok, False,
                        f"{rep.cpu_logical_cores} logical, {rep.cpu_physical_cores or '?'} physical",
                        "" if cores_ok else "Expect the default runs to take about twice as long."))
    rows.append(Check("GPU readings (NVML)", None, False, rep.nvml))
    rows.append(Check("Hosted runtime", None, False, "Colab" if rep.on_colab else "Kaggle" if rep.on_kaggle else "no"))
    return rows


# TensorFlow's message when the driver has a GPU but its CUDA libraries cannot be loaded, logged as a WARNING (W) by
# tensorflow/core/common_runtime/gpu/gpu_device.cc ("Cannot dlopen some GPU
# libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to
# use GPU. ... Skipping registering GPU devices..."). TF_CPP_MIN_LOG_LEVEL=2, which the course sets, hides it.
HIDDEN_GPU_LINE = "Cannot dlopen some GPU libraries ... Skipping registering GPU devices..."


def hidden_gpu_check(rep: Report) -> Check | None:
    """The row for a GPU the driver sees and TensorFlow does not; None when that is not the case.

    NVML (or ``nvidia-smi``) counting a GPU while TensorFlow lists none means TensorFlow could not load the
    CUDA libraries it needs (cuDNN, cuBLAS, ...), or is a CPU build. TensorFlow says so in a warning that
    ``TF_CPP_MIN_LOG_LEVEL=2`` hides (:data:`HIDDEN_GPU_LINE`).

    Example:
        >>> hidden_gpu_check(env.report()) is None or hidden_gpu_check(env.report()).ok is False
        True
    """
    if rep.gpus or not rep.nvml_gpu_count:
        return None
    if not rep.build.get("is_cuda_build"):
        why = "this TensorFlow is a CPU build"
        todo = "reinstall with `pip install tensorflow[and-cuda]` (here: `COURSE_TF_FLAVOUR=cuda make install`)"
    else:
        why = (f"TensorFlow could not load its CUDA libraries and logged \"{HIDDEN_GPU_LINE}\", a warning the "
               "course's TF_CPP_MIN_LOG_LEVEL=2 hides")
        todo = ("install the CUDA and cuDNN libraries TensorFlow looks for with `pip install tensorflow[and-cuda]` "
                "(here: `COURSE_TF_FLAVOUR=cuda make install`); to see the hidden line, run `TF_CPP_MIN_LOG_LEVEL=0 "
                "python -c \"import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))\"`")
    return Check("GPU seen by the driver, not by TensorFlow", False, False,
                 f"{rep.nvml_gpu_count} GPU(s) in NVML/nvidia-smi, 0 in TensorFlow", f"{why}: {todo}.")


def xla_checks(rep: Report) -> list[Check]:
    """One row per GPU on which XLA cannot compile with this TensorFlow (compute capability 12.x), else none.

    Example:
        >>> xla_checks(env.report()) == [] or xla_checks(env.report())[0].ok is False
        True
    """
    rows = []
    for g in rep.gpus:
        problem = env.xla_compile_problem(g.compute_capability, rep.build)
        if problem:
            rows.append(Check(f"XLA on GPU {g.index}", False, False,
                              f"{g.name}, compute capability {g.compute_capability[0]}.{g.compute_capability[1]}",
                              problem + " Notebook 03 skips its XLA row on such a card."))
    return rows


def compute_mode_check(modes: list[str]) -> Check | None:
    """The row for GPUs in an exclusive or prohibited compute mode (``nvmlDeviceGetComputeMode``); None otherwise.

    Under ``exclusive_process`` only one process holds a CUDA context on the GPU: while the notebook's kernel
    holds one, every child process the course starts on that GPU fails (02, 03, 05, 06, 07, 09 and 08's
    workers start some); 05 and 06 fall back to the CPU (``helpers.children.gpu_refusal``), the others stop.

    Example:
        >>> compute_mode_check(["default"]) is None
        True
        >>> compute_mode_check(["exclusive_process"]).ok
        False
    """
    odd = [(i, m) for i, m in enumerate(modes) if m in ("exclusive_process", "exclusive_thread", "prohibited")]
    if not odd:
        return None
    detail = ", ".join(f"GPU {i}: {m}" for i, m in odd)
    return Check("GPU compute mode", False, False, detail,
                 "Only one process may use such a GPU at a time (unless it is shared through NVIDIA's MPS), so "
                 "a child process a notebook starts on it while the kernel holds it gets no GPU: 05 and 06 then "
                 "measure memory on the CPU and say so; the children of 02, 03, 07 and 09 and 08's workers stop "
                 "with CUDA's error. Ask the administrator for the Default compute mode (`nvidia-smi -c DEFAULT`), "
                 "or run the course on another GPU.")


def is_ready(rows: list[Check]) -> bool:
    """True when every required check passed."""
    return all(c.ok for c in rows if c.required)


def table(rows: list[Check]) -> str:
    """Format checks as a plain-text table (works in a terminal and in a notebook).

    Example:
        >>> print(table([Check("Python >= 3.10", True, True, "3.11.7")]))  # doctest: +NORMALIZE_WHITESPACE
        status  needed    check           detail
        ok      required  Python >= 3.10  3.11.7
    """
    def status(c: Check) -> str:
        if c.ok is None:
            return "info"
        if c.ok:
            return "ok"
        return "MISSING" if c.required else "no"

    lines = [text_table([("status", "needed", "check", "detail")] + [
        (status(c), "required" if c.required else "optional", c.name, c.detail) for c in rows])]
    advice = [f"- {c.name}: {c.advice}" for c in rows if c.advice]
    if advice:
        lines += ["", "What to do:"] + advice
    return "\n".join(lines)


def pinned_tensorflow_version(requirements: Path = ROOT / "requirements.txt") -> str | None:
    """The TensorFlow version requirements.txt pins, or None when the file is not there (Colab)."""
    try:
        for line in requirements.read_text().splitlines():
            if line.startswith("tensorflow=="):
                return line.split("==", 1)[1].strip()
    except OSError:
        return None
    return None


def tensorflow_flavour(distributions: dict[str, str] | None = None) -> str | None:
    """Which TensorFlow package is installed: ``tensorflow-cpu``, ``tensorflow`` (with or without CUDA
    libraries), ``tensorflow-macos``; None when none is.

    Example:
        >>> tensorflow_flavour({"tensorflow-cpu": "2.21.0", "keras": "3.15.1"})
        'tensorflow-cpu 2.21.0'
    """
    if distributions is None:
        from importlib import metadata

        distributions = {}
        for dist in metadata.distributions():
            name = (dist.metadata["Name"] or "").lower().replace("_", "-")
            if name.startswith("tensorflow") or name.startswith("nvidia-cudnn"):
                distributions[name] = dist.version
    for name in ("tensorflow-cpu", "tensorflow", "tensorflow-macos"):
        if name in distributions:
            cuda = " with NVIDIA's CUDA libraries" if any(d.startswith("nvidia-cudnn") for d in distributions) else ""
            return f"{name} {distributions[name]}{cuda}"
    return None


def _kernel_specs() -> dict[str, str]:
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        return KernelSpecManager().find_kernel_specs()
    except Exception:  # jupyter_client missing or broken: no kernels found
        return {}


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def setup_checks(kernel_specs: dict[str, str] | None = None, prefix: str | None = None,
                 free_disk_bytes: int | None = None, available_memory_bytes: int | None = None,
                 lab_port: int = 8888, port_free: bool | None = None) -> list[Check]:
    """The rows ``make doctor`` adds for the machine around the notebooks: the Jupyter kernel the
    course installs, free disk and memory, and the port JupyterLab will use.

    Every reading can be passed in, so tests can feed a broken setup.

    Example:
        >>> rows = setup_checks(kernel_specs={}, prefix="/x", free_disk_bytes=10**10,
        ...                     available_memory_bytes=8 * 2**30, port_free=True)
        >>> [(r.name, r.ok) for r in rows][0]
        ('Jupyter kernel "python3" of this environment', False)
    """
    import shutil

    specs = _kernel_specs() if kernel_specs is None else kernel_specs
    prefix = sys.prefix if prefix is None else prefix
    kernel = specs.get("python3")
    kernel_ok = kernel is not None and str(kernel).startswith(str(prefix))
    rows = [Check('Jupyter kernel "python3" of this environment', kernel_ok, True, kernel or "not registered",
                  "" if kernel_ok else "Run `make kernel` (or `make lab`), which registers it.")]
    free = shutil.disk_usage(ROOT).free if free_disk_bytes is None else free_disk_bytes
    rows.append(Check("Free disk >= 2 GiB", free >= 2 * 2**30, False, f"{free / 2**30:.1f} GiB free",
                      "" if free >= 2 * 2**30 else "Notebooks write checkpoints and traces: free some space."))
    if available_memory_bytes is None:
        import psutil

        available_memory_bytes = psutil.virtual_memory().available
    mem_ok = available_memory_bytes >= 4 * 2**30
    rows.append(Check("Available memory >= 4 GiB", mem_ok, False, f"{available_memory_bytes / 2**30:.1f} GiB",
                      "" if mem_ok else "Close other programs; the larger runs may be slow or stop."))
    port_ok = _port_free(lab_port) if port_free is None else port_free
    rows.append(Check(f"Port {lab_port} free for JupyterLab", port_ok, False, "free" if port_ok else "in use",
                      "" if port_ok else f"Something listens on {lab_port}: run `LAB_PORT={lab_port + 1} make lab`."))
    flavour = tensorflow_flavour()
    rows.append(Check("TensorFlow package", None, False, flavour or "none installed"))
    return rows


def main(data_dir: Path | str | None = None, extra: list[Check] | None = None) -> int:
    """``make doctor``: print the readiness table of this machine and its setup; 0 when ready, 1 otherwise.

    `data_dir` and `extra` (the setup rows) are for tests that feed a broken setup.
    """
    from helpers import data

    try:
        tf = env.tensorflow()
    except ImportError as exc:
        print(f"TensorFlow cannot be imported ({exc}). Run `make install` (or `make lab`) first.")
        return 1
    report = env.report(tf)
    rows = checks(report, data_ok=data.verify_all(data_dir), pinned_tf=pinned_tensorflow_version())
    port = os.environ.get("LAB_PORT", "8888")
    rows += setup_checks(lab_port=int(port) if port.isdigit() else 8888) if extra is None else extra
    print(f"Machine: {report.platform}, Python {report.python}")
    print(table(rows))
    ready = is_ready(rows)
    mode = "with a GPU" if report.gpu_count else "on the CPU (smaller sizes)"
    if ready:
        print(f"\nVerdict: READY, the course runs {mode}.")
    else:
        missing = [c.name for c in rows if c.required and not c.ok]
        print(f"\nVerdict: NOT READY. Missing: {'; '.join(missing)}. Do what the table says above, then run "
              "`make doctor` again.")
    return 0 if ready else 1

