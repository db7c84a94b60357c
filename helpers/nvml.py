"""NVML, the library behind ``nvidia-smi``: GPU utilisation, memory, power and temperature.

Used by notebooks 02 (readings, the utilisation sampler) and 09 (live power), by
:mod:`helpers.env` (total memory of each GPU), :mod:`helpers.session` (free memory when one GPU is
split) and :mod:`helpers.monitor`. Every function takes the ``pynvml`` module as an optional
argument (``nvml=...``), so tests feed a fake and check the GPU branches on a machine without one.
Without a driver every function answers plainly (an empty list, a sentence) instead of raising.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from helpers import colab


def module() -> Any | None:
    """Return the ``pynvml`` module from nvidia-ml-py, or None when it is not installed.

    On Colab and Kaggle a missing nvidia-ml-py is installed once, the first time it is asked for
    (:func:`helpers.colab.ensure`).
    """
    global _ensured
    if not _ensured:
        _ensured = True
        colab.ensure("pynvml")
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


_ensured = False


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


def status(nvml: Any | None = None) -> str:
    """One sentence on NVML: the driver version and GPU count, or why there are no readings.

    Example:
        >>> status().startswith(("NVIDIA driver", "no NVIDIA driver", "NVML is not installed"))
        True
    """
    nvml = nvml if nvml is not None else module()
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


def gpu_count(nvml: Any | None = None, smi: str | None = None) -> int | None:
    """How many GPUs the NVIDIA driver sees: NVML's count, else the lines of ``nvidia-smi -L``; None if neither answers.

    ``smi`` is the text of ``nvidia-smi -L`` (one ``GPU 0: Tesla T4 (UUID: GPU-...)`` line per GPU), for tests.

    Example:
        >>> gpu_count(smi="GPU 0: Tesla T4 (UUID: GPU-1)\\nGPU 1: Tesla T4 (UUID: GPU-2)")
        2
    """
    nvml = nvml if nvml is not None else module()
    if nvml is not None and smi is None:
        try:
            nvml.nvmlInit()
        except Exception:
            nvml = None
        else:
            try:
                return int(_nvml_call(nvml.nvmlDeviceGetCount) or 0)
            finally:
                _nvml_call(nvml.nvmlShutdown)
    if smi is None:
        import shutil
        import subprocess

        exe = shutil.which("nvidia-smi")
        if exe is None:
            return None
        try:
            done = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode:
            return None
        smi = done.stdout
    return sum(1 for line in smi.splitlines() if re.match(r"^GPU \d+:", line.strip()))


@contextlib.contextmanager
def _session(nvml: Any | None) -> Iterator[Any | None]:
    """NVML initialised for the block and shut down after it; yields None without NVML or a driver."""
    if nvml is None:
        yield None
        return
    try:
        nvml.nvmlInit()
    except Exception:
        yield None
        return
    try:
        yield nvml
    finally:
        _nvml_call(nvml.nvmlShutdown)


def readings(nvml: Any | None = None) -> list[NvmlReading]:
    """Read utilisation, memory, power and temperature of every GPU; [] when there is no driver.

    Example:
        >>> isinstance(readings(), list)
        True
    """
    with _session(nvml if nvml is not None else module()) as nvml:
        if nvml is None:
            return []
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



# --------------------------------------------------------------------------- compute mode
# nvmlComputeMode_t in NVIDIA's nvml.h (and pynvml's NVML_COMPUTEMODE_* constants): 0 DEFAULT (many contexts
# per device), 1 EXCLUSIVE_THREAD (deprecated), 2 PROHIBITED (no context), 3 EXCLUSIVE_PROCESS (one context,
# from one process: a second process that touches the GPU fails while the first holds its context).
COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}


def compute_modes(environ: dict[str, str] | None = None, nvml: Any | None = None,
                  bus_ids: list[str | None] | None = None) -> list[str]:
    """The compute mode of each GPU this process can use, in TensorFlow's order (``nvmlDeviceGetComputeMode``).

    Each entry is ``"default"``, ``"exclusive_process"``, ``"prohibited"``, ``"exclusive_thread"`` (a
    deprecated mode) or ``"unknown"`` (NVML cannot tell, or the GPU cannot be matched, see :func:`locate`).
    Under ``exclusive_process`` only one process may hold a context on the GPU: a child process started
    while the notebook's kernel holds one fails to create its own. ``bus_ids`` are TensorFlow's PCI bus
    ids of its GPUs, when known; the GPUs are those ``CUDA_VISIBLE_DEVICES`` shows (every GPU NVML sees
    when it is unset). ``[]`` without NVML or a driver.

    Example:
        >>> isinstance(compute_modes(), list)
        True
    """
    environ = os.environ if environ is None else environ
    nvml = nvml if nvml is not None else module()
    with _session(nvml) as opened:
        if opened is None:
            return []
        count = _nvml_call(nvml.nvmlDeviceGetCount) or 0
        modes = {}
        for index in range(count):
            handle = _nvml_call(nvml.nvmlDeviceGetHandleByIndex, index)
            mode = None if handle is None else _nvml_call(nvml.nvmlDeviceGetComputeMode, handle)
            modes[index] = COMPUTE_MODES.get(mode, "unknown") if mode is not None else "unknown"
    entries = visible_entries(environ.get("CUDA_VISIBLE_DEVICES"))
    n_visible = len(bus_ids) if bus_ids is not None else count if entries is None else len(entries)
    out = []
    for tf_index in range(n_visible):
        bus = bus_ids[tf_index] if bus_ids is not None else None
        where = locate(tf_index, environ, nvml, bus_id=bus)
        out.append(modes.get(where.index, "unknown") if where.index is not None else "unknown")
    return out


# --------------------------------------------------------------------------- PCI bus ids
_BUS_ID = re.compile(r"^(?:([0-9a-f]{1,8}):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$")


def normalize_bus_id(value: str | bytes | None) -> str | None:
    """A PCI bus id in one spelling, ``dddd:bb:dd.f`` in lower case; None when it is not one.

    NVML writes an 8-digit domain in upper case (``nvmlPciInfo_t.busId``: ``00000000:3B:00.0``);
    TensorFlow writes CUDA's 4-digit one (``pci bus id: 0000:3b:00.0`` in its device description,
    ``GetShortDeviceDescription`` in tensorflow/core/common_runtime/gpu/gpu_device.cc).

    Example:
        >>> normalize_bus_id("00000000:3B:00.0") == normalize_bus_id("0000:3b:00.0") == "0000:3b:00.0"
        True
    """
    if value is None:
        return None
    match = _BUS_ID.match(_decode(value).strip().lower())
    if not match:
        return None
    domain, bus, dev, fn = match.groups()
    return f"{int(domain or '0', 16):04x}:{int(bus, 16):02x}:{int(dev, 16):02x}.{fn}"


def bus_id_from_description(description: str) -> str | None:
    """The PCI bus id inside TensorFlow's device description, normalised (:func:`normalize_bus_id`).

    TensorFlow describes a GPU as ``device: 0, name: Tesla T4, pci bus id: 0000:00:04.0, compute
    capability: 7.5`` (``GetShortDeviceDescription`` in tensorflow/core/common_runtime/gpu/gpu_device.cc,
    parsed the same way by tensorflow/python/framework/gpu_util.py).

    Example:
        >>> bus_id_from_description("device: 0, name: Tesla T4, pci bus id: 0000:00:04.0, compute capability: 7.5")
        '0000:00:04.0'
    """
    match = re.search(r"pci bus id:\s*([0-9A-Fa-f:.]+)", description)
    return normalize_bus_id(match.group(1).rstrip(".,")) if match else None


def tensorflow_bus_ids() -> list[str | None] | None:
    """The PCI bus ids of TensorFlow's GPUs, in its order, once its runtime runs; None before, or without it.

    Read from ``physical_device_desc`` of ``device_lib.list_local_devices()`` (the description above),
    only when TensorFlow is already imported and its eager context initialised, so asking never starts
    the GPU runtime (and never fixes memory settings before :func:`helpers.setup` applies them).

    Example:
        >>> tensorflow_bus_ids() is None or isinstance(tensorflow_bus_ids(), list)
        True
    """
    import sys

    global _tf_bus_ids
    if _tf_bus_ids is not None:
        return _tf_bus_ids  # a process's GPUs do not change once TensorFlow's runtime runs
    if "tensorflow" not in sys.modules:
        return None
    try:
        from tensorflow.python.client import device_lib
        from tensorflow.python.eager import context

        if not context.context()._initialized:  # noqa: SLF001 - asking must not initialise the runtime
            return None
        _tf_bus_ids = [bus_id_from_description(d.physical_device_desc) for d in device_lib.list_local_devices()
                       if d.device_type == "GPU"]
        return _tf_bus_ids
    except Exception:  # private API moved, or no GPU runtime: the caller falls back to CUDA_VISIBLE_DEVICES
        return None


_tf_bus_ids: list[str | None] | None = None


def _bus_table(nvml: Any) -> dict[str, int] | None:
    """``{normalised PCI bus id: NVML index}`` of every GPU; None when NVML cannot start."""
    try:
        nvml.nvmlInit()
    except Exception:
        return None
    try:
        table = {}
        for index in range(_nvml_call(nvml.nvmlDeviceGetCount) or 0):
            handle = _nvml_call(nvml.nvmlDeviceGetHandleByIndex, index)
            info = None if handle is None else _nvml_call(nvml.nvmlDeviceGetPciInfo, handle)
            bus = None if info is None else normalize_bus_id(getattr(info, "busId", None))
            if bus is not None:
                table[bus] = index
        return table
    finally:
        _nvml_call(nvml.nvmlShutdown)


# --------------------------------------------------------------------------- TensorFlow's GPU:i -> NVML's GPU
@dataclass(frozen=True)
class Located:
    """Where NVML reads TensorFlow's ``GPU:i``: NVML's ``index`` of that card, or None and ``why`` not.

    ``mig_parent`` is NVML's index of the physical GPU when ``CUDA_VISIBLE_DEVICES`` names a MIG slice of it.
    """

    index: int | None
    why: str = ""
    mig_parent: int | None = None


def _uuid_table(nvml: Any) -> list[tuple[int, str, list[str]]] | None:
    """``[(NVML index, GPU UUID, [MIG slice UUIDs])]`` of every GPU; None when NVML cannot start."""
    try:
        nvml.nvmlInit()
    except Exception:
        return None
    try:
        table = []
        for index in range(_nvml_call(nvml.nvmlDeviceGetCount) or 0):
            handle = _nvml_call(nvml.nvmlDeviceGetHandleByIndex, index)
            uuid = None if handle is None else _nvml_call(nvml.nvmlDeviceGetUUID, handle)
            if uuid is None:
                continue
            slices = []
            mode = _nvml_call(getattr(nvml, "nvmlDeviceGetMigMode", lambda h: None), handle)
            if mode and mode[0]:  # [current, pending]: MIG is on
                for k in range(_nvml_call(nvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0):
                    mig = _nvml_call(nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, k)
                    mig_uuid = None if mig is None else _nvml_call(nvml.nvmlDeviceGetUUID, mig)
                    if mig_uuid is not None:
                        slices.append(_decode(mig_uuid))
            table.append((index, _decode(uuid), slices))
        return table
    finally:
        _nvml_call(nvml.nvmlShutdown)


def visible_entries(value: str | None) -> list[str] | None:
    """The entries of a ``CUDA_VISIBLE_DEVICES`` value as CUDA reads them; None when it is unset.

    CUDA takes the comma-separated entries in order and stops at the first invalid one, so ``"-1"``
    and ``""`` hide every GPU and ``"2,-1,3"`` shows only ``2``. Entries are indices, GPU UUIDs (or
    unique prefixes) or MIG names, kept as written. One reading for every caller: NVML lookups
    (:func:`locate`), child processes (``helpers.children.gpu_env``), workers (``helpers.cluster``) and
    replica counts (``helpers.distribute``).

    Example:
        >>> visible_entries("2, 3"), visible_entries("2,-1,3"), visible_entries(""), visible_entries(None)
        (['2', '3'], ['2'], [], None)
    """
    if value is None:
        return None
    entries = []
    for entry in value.split(","):
        entry = entry.strip()
        if not entry or entry.startswith("-"):
            break  # CUDA stops at the first invalid entry
        entries.append(entry)
    return entries


def _by_bus_id(tf_index: int, bus_id: str, nvml: Any | None) -> Located | None:
    """Match TensorFlow's PCI bus id to NVML's; None when NVML cannot be asked (the caller falls back)."""
    wanted = normalize_bus_id(bus_id)
    nvml = nvml if nvml is not None else module()
    table = None if nvml is None or wanted is None else _bus_table(nvml)
    if not table:
        return None
    if wanted in table:
        return Located(table[wanted])
    return Located(None, f"TensorFlow's GPU:{tf_index} (PCI bus {wanted}) is none of the {len(table)} GPU(s) NVML "
                         "reads, so no NVML reading is shown for it.")


def _bare_index(entry: int, entries: list[str], environ: dict[str, str] | Any, nvml: Any | None) -> Located:
    """A bare index of ``CUDA_VISIBLE_DEVICES``, unless something says it is not NVML's number of the card."""
    slurm = visible_entries(environ.get("SLURM_STEP_GPUS") or environ.get("SLURM_JOB_GPUS"))
    nvml = nvml if nvml is not None else module()
    table = None if nvml is None else _uuid_table(nvml)
    # Where the job's device cgroup hides the node's other GPUs, NVML numbers only the job's, from 0, and a
    # job-relative index is NVML's own: that holds when NVML counts exactly as many GPUs as the job has.
    hidden = table is not None and len(table) == len(slurm or [])
    if slurm and all(e.isdigit() for e in slurm) and slurm != entries and not hidden:
        return Located(None, f"CUDA_VISIBLE_DEVICES={','.join(entries)!r} holds indices relative to this SLURM job "
                             f"(its GPUs are {','.join(slurm)} of the node), so NVML's GPU {entry} may be another "
                             "job's card; without TensorFlow's PCI bus id no NVML reading is shown.")
    if table is not None and len(table) and entry >= len(table):
        return Located(None, f"CUDA_VISIBLE_DEVICES entry {entry} is beyond the {len(table)} GPU(s) NVML reads.")
    return Located(entry)


def locate(tf_index: int, environ: dict[str, str] | None = None, nvml: Any | None = None,
           bus_id: str | None = None) -> Located:
    """Find NVML's GPU behind TensorFlow's ``GPU:tf_index``, following ``CUDA_VISIBLE_DEVICES`` as CUDA reads it.

    NVML numbers every GPU by PCI bus and ignores ``CUDA_VISIBLE_DEVICES``; ``helpers`` sets
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so CUDA numbers them the same way. CUDA takes the variable's
    entries in order, up to the first invalid one, and each entry is an index (``2,3`` from SLURM:
    TensorFlow's GPU:0 is NVML's GPU 2), a GPU UUID or a unique prefix of one (``GPU-8932f937``, as
    Kubernetes' device plugin sets it), or a MIG slice (``MIG-<uuid>``, or ``MIG-GPU-<uuid>/<gi>/<ci>``
    on older drivers); see "CUDA Environment Variables" in NVIDIA's CUDA C++ Programming Guide.
    UUIDs are matched against ``nvmlDeviceGetUUID`` of every GPU and every MIG slice.

    The PCI bus id decides first: ``bus_id`` (TensorFlow's, from its device description; by default
    :func:`tensorflow_bus_ids` once TensorFlow runs) is matched to ``nvmlDeviceGetPciInfo(...).busId``,
    whatever ``CUDA_VISIBLE_DEVICES`` says. That matters under SLURM with cgroup ``ConstrainDevices``:
    the variable holds job-relative indices (``0,1``); where NVML still lists every GPU of the node, a
    bare index would read another job's card (where the cgroup hides the other cards from NVML too, it
    numbers only the job's, and the bare index is right). Without a bus id a bare index is used only when
    nothing says it is relative: it gives None when it is beyond NVML's count, or when SLURM's absolute
    list (``SLURM_STEP_GPUS``/``SLURM_JOB_GPUS``) names other GPUs than ``CUDA_VISIBLE_DEVICES`` while
    NVML counts more GPUs than the job has.

    A MIG slice gives ``index=None``: NVML reads no utilisation on a MIG-enabled GPU (documented
    under ``nvmlDeviceGetUtilizationRates``), and the card's memory is not the slice's, so no
    reading of the whole card is shown as the slice's; ``why`` says so and ``mig_parent`` names the card.

    Example:
        >>> locate(0, {"CUDA_VISIBLE_DEVICES": "2,3"})
        Located(index=2, why='', mig_parent=None)
    """
    environ = os.environ if environ is None else environ
    if bus_id is None and environ is os.environ:
        running = tensorflow_bus_ids()
        bus_id = running[tf_index] if running and tf_index < len(running) else None
    if bus_id is not None:
        where = _by_bus_id(tf_index, bus_id, nvml)
        if where is not None:
            return where
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    entries = visible_entries(visible)
    if entries is None:
        return Located(tf_index)
    if tf_index >= len(entries):
        return Located(None, f"CUDA_VISIBLE_DEVICES={visible!r} shows no GPU:{tf_index} to TensorFlow.")
    entry = entries[tf_index]
    if entry.isdigit():
        return _bare_index(int(entry), entries, environ, nvml)
    if not entry.upper().startswith(("GPU-", "MIG-")):
        return Located(None, f"CUDA_VISIBLE_DEVICES entry {entry!r} is neither an index, a GPU UUID nor a MIG name.")
    nvml = nvml if nvml is not None else module()
    table = None if nvml is None else _uuid_table(nvml)
    if table is None:
        return Located(None, f"CUDA_VISIBLE_DEVICES names {entry!r}, and without NVML that UUID cannot be matched "
                             "to a GPU.")
    wanted = entry.lower()
    if wanted.startswith("mig-gpu-"):  # MIG-GPU-<uuid>/<gpu instance>/<compute instance>: the card's UUID inside
        parents = [i for i, uuid, _ in table if uuid.lower().startswith(wanted[4:].split("/")[0])]
    elif wanted.startswith("mig-"):
        parents = [i for i, _, slices in table if any(m.lower().startswith(wanted) for m in slices)]
    else:
        matches = [i for i, uuid, _ in table if uuid.lower().startswith(wanted)]
        if len(matches) == 1:
            return Located(matches[0])
        return Located(None, f"CUDA_VISIBLE_DEVICES entry {entry!r} matches "
                             f"{'no GPU' if not matches else f'{len(matches)} GPUs'} by UUID in NVML.")
    if len(parents) != 1:
        return Located(None, f"CUDA_VISIBLE_DEVICES entry {entry!r} matches "
                             f"{'no MIG slice' if not parents else 'slices of several GPUs'} in NVML.")
    return Located(None, f"TensorFlow's GPU:{tf_index} is a MIG slice of NVML's GPU {parents[0]} ({entry}): NVML "
                         "reads no utilisation of a MIG slice, and the card's memory is not the slice's.",
                   mig_parent=parents[0])


def index_for(tf_index: int, environ: dict[str, str] | None = None, nvml: Any | None = None) -> int | None:
    """NVML's index of TensorFlow's ``GPU:tf_index``, or None when it cannot be told (see :func:`locate`).

    Indices, GPU UUIDs and unique UUID prefixes in ``CUDA_VISIBLE_DEVICES`` are resolved (UUIDs
    through NVML); a MIG slice, or a UUID that matches no GPU, gives None, so no reading of another
    card, or of the whole card for a slice, is shown by mistake.

    Example:
        >>> index_for(0, {"CUDA_VISIBLE_DEVICES": "2,3"})
        2
    """
    return locate(tf_index, environ, nvml).index
