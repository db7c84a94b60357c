"""Hardware and software facts: the one place the course reads the machine.

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

from helpers.tables import text_table

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


# --------------------------------------------------------------------------- NVML
def nvml_module() -> Any | None:
    """Return the ``pynvml`` module from nvidia-ml-py, or None when it is not installed."""
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


@dataclass
class NvmlReading:
    """One NVML sample of one GPU. Units: percent, bytes, watts, degrees Celsius."""

    index: int
    name: str
    utilization_pct: float | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    power_w: float | None
    temperature_c: float | None


def _decode(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml_call(fn: Any, *args: Any) -> Any:
    """Call an NVML function; None when this GPU or driver does not support the query."""
    try:
        return fn(*args)
    except Exception:  # NVMLError_NotSupported and friends: a missing reading, not a failure
        return None


def nvml_status(nvml: Any | None = None) -> str:
    """One sentence on NVML: the driver version and GPU count, or why there are no readings.

    Example:
        >>> nvml_status().startswith(("NVIDIA driver", "no NVIDIA driver", "NVML is not installed"))
        True
    """
    nvml = nvml if nvml is not None else nvml_module()
    if nvml is None:
        return "NVML is not installed (pip package nvidia-ml-py): no GPU readings."
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return f"no NVIDIA driver here (NVML could not start: {exc}): no GPU readings."
    try:
        driver = _decode(_nvml_call(nvml.nvmlSystemGetDriverVersion) or "unknown")
        count = nvml.nvmlDeviceGetCount()
        return f"NVIDIA driver {driver}, {count} GPU(s) seen by NVML."
    finally:
        _nvml_call(nvml.nvmlShutdown)


def nvml_readings(nvml: Any | None = None) -> list[NvmlReading]:
    """Read utilisation, memory, power and temperature of every GPU; [] when there is no driver.

    Example:
        >>> isinstance(nvml_readings(), list)
        True
    """
    nvml = nvml if nvml is not None else nvml_module()
    if nvml is None:
        return []
    try:
        nvml.nvmlInit()
    except Exception:
        return []
    try:
        readings = []
        count = _nvml_call(nvml.nvmlDeviceGetCount) or 0
        for index in range(count):
            handle = _nvml_call(nvml.nvmlDeviceGetHandleByIndex, index)
            if handle is None:  # a GPU that fell off the bus, or no permission: skip it, keep the others
                continue
            util = _nvml_call(nvml.nvmlDeviceGetUtilizationRates, handle)
            mem = _nvml_call(nvml.nvmlDeviceGetMemoryInfo, handle)
            power_mw = _nvml_call(nvml.nvmlDeviceGetPowerUsage, handle)
            temp = _nvml_call(nvml.nvmlDeviceGetTemperature, handle, getattr(nvml, "NVML_TEMPERATURE_GPU", 0))
            readings.append(NvmlReading(
                index=index,
                name=_decode(_nvml_call(nvml.nvmlDeviceGetName, handle) or f"GPU {index}"),
                utilization_pct=None if util is None else float(util.gpu),
                memory_used_bytes=None if mem is None else int(mem.used),
                memory_total_bytes=None if mem is None else int(mem.total),
                power_w=None if power_mw is None else power_mw / 1000.0,
                temperature_c=None if temp is None else float(temp),
            ))
        return readings
    finally:
        _nvml_call(nvml.nvmlShutdown)


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


def nvml_index(tf_index: int, environ: dict[str, str] | None = None) -> int | None:
    """NVML's index of TensorFlow's ``GPU:tf_index``, or None when it cannot be told.

    NVML numbers every GPU by PCI bus and ignores ``CUDA_VISIBLE_DEVICES``; ``helpers`` sets
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so CUDA numbers them the same way. With
    ``CUDA_VISIBLE_DEVICES=2,3``, TensorFlow's GPU:0 is NVML's GPU 2. Entries given as UUIDs or MIG
    names cannot be mapped this way: None, so no reading of another card is shown by mistake.

    Example:
        >>> nvml_index(0, {"CUDA_VISIBLE_DEVICES": "2,3"})
        2
    """
    environ = os.environ if environ is None else environ
    visible = environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if not visible:
        return tf_index
    ids = [v.strip() for v in visible.split(",")]
    if tf_index < len(ids) and ids[tf_index].isdigit():
        return int(ids[tf_index])
    return None


def gpus(tf: Any | None = None, nvml: Any | None = None, environ: dict[str, str] | None = None) -> list[GpuInfo]:
    """List the GPUs TensorFlow can use, with name, compute capability and memory.

    Name and compute capability come from ``tf.config.experimental.get_device_details`` (empty on
    a CPU build); total memory from NVML when a driver is there, else ``None``.

    Example:
        >>> [g.name for g in gpus()]  # on a machine without a GPU
        []
    """
    tf = tf if tf is not None else tensorflow()
    environ = os.environ if environ is None else environ
    readings = {r.index: r for r in nvml_readings(nvml)}
    found = []
    for index, device in enumerate(tf.config.list_physical_devices("GPU")):
        try:
            details = tf.config.experimental.get_device_details(device) or {}
        except Exception:
            details = {}
        nvml_i = nvml_index(index, environ)
        reading = readings.get(nvml_i) if nvml_i is not None else None
        cc = details.get("compute_capability")
        name = details.get("device_name") or (reading.name if reading else f"GPU {index}")
        memory = reading.memory_total_bytes if reading else None
        found.append(GpuInfo(index=index, device=device.name, name=name,
                             compute_capability=tuple(cc) if cc else None,
                             memory_bytes=memory, memory_source="NVML" if memory else "unknown"))
    return found


def memory_info(device: str = "GPU:0", tf: Any | None = None) -> dict[str, int] | None:
    """Current and peak bytes TensorFlow has allocated on `device`, or None where it cannot say.

    Example:
        >>> memory_info("GPU:0") is None  # no GPU here
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
    """True inside a Google Colab runtime."""
    return importlib.util.find_spec("google") is not None and importlib.util.find_spec("google.colab") is not None


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
    notes: list[str] = field(default_factory=list)

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    def summary(self) -> str:
        """One line: what hardware this run has."""
        if self.gpus:
            hw = f"{self.gpu_count} GPU(s): " + "; ".join(g.describe() for g in self.gpus)
        else:
            hw = f"CPU only ({self.cpu_logical_cores} cores, {platform.machine() or 'unknown arch'})"
        place = " on Colab" if self.on_colab else ""
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
        nvml=nvml_status(nvml),
    )


# --------------------------------------------------------------------------- readiness
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
        >>> no_gpu_advice(report(), system="Windows").startswith("Native Windows")
        True
    """
    system = system or platform.system()
    if driver_present is None:
        driver_present = rep.nvml.startswith("NVIDIA driver")
    if rep.on_colab:
        return ("On Colab: Runtime > Change runtime type > Hardware accelerator: a GPU (T4 on the free "
                "tier), then Runtime > Restart session and run the notebook again.")
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


def readiness(rep: Report, data_ok: bool | None = None, pinned_tf: str | None = None) -> list[Check]:
    """The readiness table: what the course needs (required) and what makes it faster (recommended).

    Example:
        >>> all(isinstance(c, Check) for c in readiness(report()))
        True
    """
    py_ok = sys.version_info >= (3, 10)
    checks = [
        Check("Python >= 3.10", py_ok, True, rep.python, "" if py_ok else "Install Python 3.10 or newer."),
    ]
    tf_ok = rep.tensorflow.startswith("2.")
    tf_detail = rep.tensorflow + ("" if not pinned_tf or pinned_tf == rep.tensorflow
                                  else f" (course pins {pinned_tf}; other 2.x versions usually work)")
    checks.append(Check("TensorFlow 2.x", tf_ok, True, tf_detail, "" if tf_ok else "Run `make install`."))
    keras_ok = rep.keras.startswith("3.")
    checks.append(Check("Keras 3", keras_ok, True, rep.keras, "" if keras_ok else "Run `make install`."))
    if data_ok is not None:
        checks.append(Check("Course data (sha256)", data_ok, True, "verified" if data_ok else "mismatch",
                            "" if data_ok else "Restore data/ from the repository (git checkout data/)."))
    build = rep.build
    build_detail = (f"CUDA {build.get('cuda_version')}, cuDNN {build.get('cudnn_version')}"
                    if build.get("is_cuda_build") else "CPU-only build (no CUDA)")
    checks.append(Check("TensorFlow build", None, False, build_detail))
    if rep.gpus:
        checks.append(Check("GPU visible to TensorFlow", True, False,
                            "; ".join(g.describe() for g in rep.gpus)))
        ccs = [g.compute_capability for g in rep.gpus if g.compute_capability]
        # GeForce GTX 16xx cards are compute capability 7.5 but were built without Tensor Cores.
        gtx = any("GTX" in g.name.upper() for g in rep.gpus)
        tc = bool(ccs) and min(ccs) >= (7, 0) and not gtx
        detail = ", ".join(f"{a}.{b}" for a, b in ccs) or "unknown"
        checks.append(Check("Tensor Cores (compute capability >= 7.0)", tc, False,
                            detail + (" (GeForce GTX: no Tensor Cores)" if gtx else ""),
                            "" if tc else "Mixed precision (notebook 06) will run but not speed up here."))
    else:
        checks.append(Check("GPU visible to TensorFlow", False, False, "none", no_gpu_advice(rep)))
    cores_ok = rep.cpu_logical_cores >= 2
    checks.append(Check("CPU cores >= 2", cores_ok, False,
                        f"{rep.cpu_logical_cores} logical, {rep.cpu_physical_cores or '?'} physical",
                        "" if cores_ok else "Expect the default runs to take about twice as long."))
    checks.append(Check("GPU readings (NVML)", None, False, rep.nvml))
    checks.append(Check("Google Colab", None, False, "yes" if rep.on_colab else "no"))
    return checks


def is_ready(checks: list[Check]) -> bool:
    """True when every required check passed."""
    return all(c.ok for c in checks if c.required)


def readiness_table(checks: list[Check]) -> str:
    """Format checks as a plain-text table (works in a terminal and in a notebook).

    Example:
        >>> print(readiness_table([Check("Python >= 3.10", True, True, "3.11.7")]))  # doctest: +NORMALIZE_WHITESPACE
        status  needed    check           detail
        ok      required  Python >= 3.10  3.11.7
    """
    def status(c: Check) -> str:
        if c.ok is None:
            return "info"
        if c.ok:
            return "ok"
        return "MISSING" if c.required else "no"

    rows = [("status", "needed", "check", "detail")] + [
        (status(c), "required" if c.required else "optional", c.name, c.detail) for c in checks]
    lines = [text_table(rows)]
    advice = [f"- {c.name}: {c.advice}" for c in checks if c.advice]
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
