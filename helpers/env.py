"""Hardware and software facts as TensorFlow sees them: versions, build, devices, GPUs, memory.

Used by every notebook through :func:`helpers.setup` (the report it returns and prints), by 00
(versions, build, devices, GPUs), 02 (GPU fields), 05, 06 and 09 (``memory_info``), and by
:mod:`helpers.readiness` (``make doctor``). NVML lives in :mod:`helpers.nvml`.

Every function that touches TensorFlow or NVML takes it as an optional argument (``tf=...``,
``nvml=...``), so tests can feed fakes and check the GPU branches on a machine without a GPU.

On a CPU TensorFlow answers some questions with errors or empty values
(``get_device_details`` returns ``{}``, ``set_memory_growth`` raises ``ValueError``); the functions
here turn each of those into a plain answer (``None``, an empty list, a sentence) instead.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import platform
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from helpers import colab
from helpers import nvml as nvml_api

ROOT = Path(__file__).resolve().parent.parent
GIB = 1024**3


# --------------------------------------------------------------------------- TensorFlow import
@contextlib.contextmanager
def _stderr_silenced():
    """Send the process's file descriptor 2 to /dev/null for the duration (C++ logs included)."""
    try:
        fd = sys.__stderr__.fileno() if sys.__stderr__ else 2
        saved = os.dup(fd)
    except (OSError, ValueError):  # no real stderr (some embedded interpreters)
        yield
        return
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), fd)
        try:
            yield
        finally:
            os.dup2(saved, fd)
            os.close(saved)


def tensorflow() -> Any:
    """Import TensorFlow once, without the C++ start-up lines it writes to stderr.

    TensorFlow's native libraries log at import (oneDNN notices, "Could not find cuda drivers" in
    some builds) before any Python log setting applies; Jupyter shows them in red. Python errors
    still surface: an ImportError is raised as usual.

    Example:
        >>> tf = tensorflow()
        >>> tf.__version__.startswith("2.")
        True
    """
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    with _stderr_silenced():
        tf = importlib.import_module("tensorflow")
    return tf


def tensorflow_available() -> bool:
    """True when TensorFlow can be imported here (without importing it)."""
    return importlib.util.find_spec("tensorflow") is not None


# --------------------------------------------------------------------------- GPUs through TensorFlow
@dataclass
class GpuInfo:
    """What the course knows about one GPU that TensorFlow can use."""

    index: int
    device: str
    name: str
    compute_capability: tuple[int, int] | None
    memory_bytes: int | None
    memory_source: str

    @property
    def memory_gib(self) -> float | None:
        return None if self.memory_bytes is None else self.memory_bytes / GIB

    def describe(self) -> str:
        """Example: 'Tesla T4 (compute capability 7.5, 15.0 GiB)'."""
        cc = "compute capability unknown" if self.compute_capability is None else (
            f"compute capability {self.compute_capability[0]}.{self.compute_capability[1]}")
        mem = "memory unknown" if self.memory_bytes is None else f"{self.memory_gib:.1f} GiB"
        return f"{self.name} ({cc}, {mem})"


def gpus(tf: Any | None = None, nvml: Any | None = None, environ: dict[str, str] | None = None) -> list[GpuInfo]:
    """List the GPUs TensorFlow can use, with name, compute capability and memory.

    Name and compute capability come from ``tf.config.experimental.get_device_details`` (empty on
    a CPU build); total memory from NVML when a driver is there, else ``None``.

    Example:
        >>> len(gpus()) == len(tensorflow().config.list_physical_devices("GPU"))
        True
    """
    tf = tf if tf is not None else tensorflow()
    environ = os.environ if environ is None else environ
    readings = {r.index: r for r in nvml_api.readings(nvml)}
    running = nvml_api.tensorflow_bus_ids() if tf is sys.modules.get("tensorflow") else None
    found = []
    for index, device in enumerate(tf.config.list_physical_devices("GPU")):
        try:
            details = tf.config.experimental.get_device_details(device) or {}
        except Exception:
            details = {}
        # TensorFlow's PCI bus id decides which NVML card this is (job-relative indices under SLURM's
        # ConstrainDevices name another card); CUDA_VISIBLE_DEVICES (indices, UUIDs, MIG) when it is unknown
        bus = details.get("pci_bus_id") or (running[index] if running and index < len(running) else None)
        nvml_i = nvml_api.locate(index, environ, nvml, bus_id=bus).index  # None for a MIG slice
        reading = readings.get(nvml_i) if nvml_i is not None else None
        cc = details.get("compute_capability")
        name = details.get("device_name") or (reading.name if reading else f"GPU {index}")
        memory = reading.memory_total_bytes if reading else None
        found.append(GpuInfo(index=index, device=device.name, name=name,
                             compute_capability=tuple(cc) if cc else None,
                             memory_bytes=memory, memory_source="NVML" if memory else "unknown"))
    return found


def bus_ids(tf: Any | None = None) -> list[str | None] | None:
    """TensorFlow's PCI bus id of each of its GPUs (normalised), or None where TensorFlow does not say.

    From ``get_device_details``'s ``pci_bus_id`` when a build gives one, else from the device description
    once TensorFlow's runtime runs (:func:`helpers.nvml.tensorflow_bus_ids`).

    Example:
        >>> bus_ids() is None or isinstance(bus_ids(), list)
        True
    """
    tf = tf if tf is not None else tensorflow()
    devices = tf.config.list_physical_devices("GPU")
    found: list[str | None] = []
    for device in devices:
        try:
            details = tf.config.experimental.get_device_details(device) or {}
        except Exception:
            details = {}
        found.append(nvml_api.normalize_bus_id(details.get("pci_bus_id")))
    if devices and all(b is not None for b in found):
        return found
    running = nvml_api.tensorflow_bus_ids() if tf is sys.modules.get("tensorflow") else None
    return running if running and len(running) == len(devices) else None


# XLA's GPU back end compiles through LLVM's NVPTX target to PTX of the CUDA version TensorFlow was built with.
# TensorFlow's pip builds (CUDA 12.5.1, PTX ISA 8.5, up to 2.20) cannot target Blackwell (compute capability 10.x,
# 12.x): XLA stops with "LLVM ERROR: PTX version 8.5 does not support target 'sm_120'" (tensorflow/tensorflow#111958,
# also #99592 and #103531). PTX ISA 8.6 adds sm_100 and 8.7 sm_120; CUDA 12.8 is the first public toolkit with both
# (NVIDIA's PTX ISA release notes).
XLA_BLACKWELL_FIRST_CUDA = (12, 8)  # CUDA 12.8 is the first to compile for sm_100 and sm_120 (PTX ISA 8.6 / 8.7)


def xla_compile_problem(compute_capability: tuple[int, int] | None,
                        build: dict[str, Any] | None = None) -> str | None:
    """Why XLA cannot compile for this GPU with this TensorFlow build, in one sentence; None when it can.

    The rule: compute capability 10.0 or later (Blackwell: B200 10.0, RTX PRO 6000 12.0, and any newer card) with
    a build whose CUDA is older than 12.8 (every TensorFlow pip build up to 2.20, built with CUDA 12.5) cannot
    compile. XLA caps the PTX version at the older of the build's CUDA and the ptxas it finds
    (``NVPTXGetTargetMachine`` in xla/service/gpu/llvm_gpu_backend/nvptx_backend.cc); PTX 8.5 knows no sm_100 or
    sm_120, so LLVM stops the process with "LLVM ERROR: PTX version 8.5 does not support target 'sm_120'"
    (reported for 12.0: tensorflow/tensorflow#111958, also #99592, #103531; 10.0 follows from the same code, with
    no report found). A fatal LLVM error ends the process, so this is decided before compiling. Without XLA,
    TensorFlow runs its own kernels on such a card.

    Example:
        >>> xla_compile_problem((12, 0), {"cuda_version": "12.5.1"}).startswith("XLA cannot compile")
        True
        >>> xla_compile_problem((7, 5), {"cuda_version": "12.5.1"}) is None
        True
    """
    if compute_capability is None or tuple(compute_capability)[0] < 10:
        return None
    cc = f"{compute_capability[0]}.{compute_capability[1]}"
    version = str((build or {}).get("cuda_version") or "")
    try:
        built = tuple(int(x) for x in version.split(".")[:2])
    except ValueError:
        built = ()
    if len(built) == 2 and built >= XLA_BLACKWELL_FIRST_CUDA:
        return None
    target = f"sm_{compute_capability[0]}{compute_capability[1]}"
    reported = ("tensorflow/tensorflow#111958" if compute_capability[0] == 12 else
                "the same limit as tensorflow/tensorflow#111958 for compute capability 12.0")
    return (f"XLA cannot compile for compute capability {cc} with this TensorFlow (built with CUDA "
            f"{version or 'unknown'}, older than 12.8): LLVM stops with \"PTX version ... does not support target "
            f"'{target}'\" ({reported}); keep jit_compile=False, or on Colab ask for an A100 or L4 runtime.")


def tf32_state(tf: Any | None = None, gpu_list: list[GpuInfo] | None = None) -> str:
    """Whether float32 matmuls and convolutions run as TF32 on this run's GPUs: one sentence to print.

    TensorFlow allows TF32 by default (``tf.config.experimental.enable_tensor_float_32_execution``);
    it takes effect only on GPUs of compute capability 8.0 or higher (A100, L4, H100, ...), where
    float32 inputs are rounded to a 10-bit mantissa inside matmuls and convolutions. Print this beside
    every "FP32" rate measured on a GPU: on such a card the figure is a TF32 one.

    Example:
        >>> tf32_state(gpu_list=[]).startswith("TF32 ")
        True
    """
    tf = tf if tf is not None else tensorflow()
    gpu_list = gpus(tf) if gpu_list is None else gpu_list
    capable = [g for g in gpu_list if g.compute_capability and tuple(g.compute_capability) >= (8, 0)]
    if not tf.config.experimental.tensor_float_32_execution_enabled():
        return "TF32 off: float32 matmuls and convolutions keep full float32 precision."
    if capable:
        cc = capable[0].compute_capability
        return (f"TF32 on: {capable[0].name} (compute capability {cc[0]}.{cc[1]}) rounds float32 matmul and "
                "convolution inputs to a 10-bit mantissa, so its 'float32' rates are TF32 rates.")
    where = "no GPU" if not gpu_list else "no GPU of compute capability 8.0 or higher"
    return f"TF32 allowed but unused: {where}, so float32 stays float32."


def memory_info(device: str = "GPU:0", tf: Any | None = None) -> dict[str, int] | None:
    """Current and peak bytes TensorFlow has allocated on `device`, or None where it cannot say.

    Example:
        >>> (memory_info("GPU:0") is None) == (not tensorflow().config.list_physical_devices("GPU"))
        True
    """
    tf = tf if tf is not None else tensorflow()
    kind = device.split(":")[0].upper()
    if kind not in ("GPU", "CPU"):
        raise ValueError(f"device={device!r}: use a name such as 'GPU:0' or 'CPU:0'.")
    if kind == "GPU" and not tf.config.list_physical_devices("GPU"):
        return None
    try:
        return dict(tf.config.experimental.get_memory_info(device))
    except (ValueError, RuntimeError):  # devices without an allocator that tracks stats
        return None


def build_info(tf: Any | None = None) -> dict[str, Any]:
    """What this TensorFlow was built for: CUDA and cuDNN versions (None on a CPU build).

    Example:
        >>> build_info()["is_cuda_build"] in (True, False)
        True
    """
    tf = tf if tf is not None else tensorflow()
    info = dict(tf.sysconfig.get_build_info())
    return {
        "is_cuda_build": bool(info.get("is_cuda_build", False)),
        "cuda_version": info.get("cuda_version"),
        "cudnn_version": info.get("cudnn_version"),
        "cuda_compute_capabilities": info.get("cuda_compute_capabilities"),
    }


# --------------------------------------------------------------------------- the whole report
def on_colab() -> bool:
    """True inside a Google Colab runtime (its kernel has imported ``google.colab`` at start)."""
    return colab.hosted(environ={}) == "colab"


def on_kaggle() -> bool:
    """True inside a Kaggle Notebooks kernel (Kaggle sets ``KAGGLE_KERNEL_RUN_TYPE`` in every one)."""
    return colab.hosted(modules={}) == "kaggle"


def cpu_cores() -> tuple[int, int | None]:
    """(logical cores, physical cores or None when unknown)."""
    logical = os.cpu_count() or 1
    try:
        import psutil

        physical = psutil.cpu_count(logical=False)
    except ImportError:
        physical = None
    return logical, physical


@dataclass
class Report:
    """A snapshot of the software and hardware this run has."""

    python: str
    platform: str
    tensorflow: str
    keras: str
    numpy: str
    build: dict[str, Any]
    physical_devices: list[str]
    logical_devices: list[str]
    gpus: list[GpuInfo]
    cpu_logical_cores: int
    cpu_physical_cores: int | None
    on_colab: bool
    nvml: str
    on_kaggle: bool = False
    notes: list[str] = field(default_factory=list)
    nvml_gpu_count: int | None = None  # GPUs the driver sees (NVML, else nvidia-smi); None when neither answers
    compute_modes: list[str] = field(default_factory=list)  # per GPU TensorFlow uses (helpers.nvml.compute_modes)

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    def summary(self) -> str:
        """One line: what hardware this run has."""
        if self.gpus:
            hw = f"{self.gpu_count} GPU(s): " + "; ".join(g.describe() for g in self.gpus)
        else:
            hw = f"CPU only ({self.cpu_logical_cores} cores, {platform.machine() or 'unknown arch'})"
        place = " on Colab" if self.on_colab else " on Kaggle" if self.on_kaggle else ""
        return f"{hw}{place} | TensorFlow {self.tensorflow}, Keras {self.keras}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["gpu_count"] = self.gpu_count
        return data


def report(tf: Any | None = None, nvml: Any | None = None) -> Report:
    """Collect versions, build info, devices, GPUs, CPU cores and Colab detection.

    Example:
        >>> r = report()
        >>> r.gpu_count >= 0 and r.cpu_logical_cores >= 1
        True
    """
    tf = tf if tf is not None else tensorflow()
    import numpy

    try:
        import keras

        keras_version = keras.__version__
    except ImportError:
        keras_version = "not installed"
    logical, physical = cpu_cores()
    return Report(
        python=platform.python_version(),
        platform=f"{platform.system()} {platform.machine()}",
        tensorflow=tf.__version__,
        keras=keras_version,
        numpy=numpy.__version__,
        build=build_info(tf),
        physical_devices=[d.name for d in tf.config.list_physical_devices()],
        logical_devices=[d.name for d in tf.config.list_logical_devices()],
        gpus=gpus(tf, nvml),
        cpu_logical_cores=logical,
        cpu_physical_cores=physical,
        on_colab=on_colab(),
        nvml=nvml_api.status(nvml),
        on_kaggle=on_kaggle(),
        nvml_gpu_count=nvml_api.gpu_count(nvml),
        compute_modes=nvml_api.compute_modes(nvml=nvml, bus_ids=bus_ids(tf)),
    )
