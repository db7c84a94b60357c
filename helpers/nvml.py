"""NVML, the library behind ``nvidia-smi``: GPU utilisation, memory, power and temperature.

Used by notebooks 02 (readings, the utilisation sampler) and 09 (live power), by
:mod:`helpers.env` (total memory of each GPU), :mod:`helpers.session` (free memory when one GPU is
split) and :mod:`helpers.monitor`. Every function takes the ``pynvml`` module as an optional
argument (``nvml=...``), so tests feed a fake and check the GPU branches on a machine without one.
Without a driver every function answers plainly (an empty list, a sentence) instead of raising.
"""

from __future__ import annotations

import importlib
import os
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


def readings(nvml: Any | None = None) -> list[NvmlReading]:
    """Read utilisation, memory, power and temperature of every GPU; [] when there is no driver.

    Example:
        >>> isinstance(readings(), list)
        True
    """
    nvml = nvml if nvml is not None else module()
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


def locate(tf_index: int, environ: dict[str, str] | None = None, nvml: Any | None = None) -> Located:
    """Find NVML's GPU behind TensorFlow's ``GPU:tf_index``, following ``CUDA_VISIBLE_DEVICES`` as CUDA reads it.

    NVML numbers every GPU by PCI bus and ignores ``CUDA_VISIBLE_DEVICES``; ``helpers`` sets
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so CUDA numbers them the same way. CUDA takes the variable's
    entries in order, up to the first invalid one, and each entry is an index (``2,3`` from SLURM:
    TensorFlow's GPU:0 is NVML's GPU 2), a GPU UUID or a unique prefix of one (``GPU-8932f937``, as
    Kubernetes' device plugin sets it), or a MIG slice (``MIG-<uuid>``, or ``MIG-GPU-<uuid>/<gi>/<ci>``
    on older drivers); see "CUDA Environment Variables" in NVIDIA's CUDA C++ Programming Guide.
    UUIDs are matched against ``nvmlDeviceGetUUID`` of every GPU and every MIG slice.

    A MIG slice gives ``index=None``: NVML reads no utilisation on a MIG-enabled GPU (documented
    under ``nvmlDeviceGetUtilizationRates``), and the card's memory is not the slice's, so no
    reading of the whole card is shown as the slice's; ``why`` says so and ``mig_parent`` names the card.

    Example:
        >>> locate(0, {"CUDA_VISIBLE_DEVICES": "2,3"})
        Located(index=2, why='', mig_parent=None)
    """
    environ = os.environ if environ is None else environ
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    entries = visible_entries(visible)
    if entries is None:
        return Located(tf_index)
    if tf_index >= len(entries):
        return Located(None, f"CUDA_VISIBLE_DEVICES={visible!r} shows no GPU:{tf_index} to TensorFlow.")
    entry = entries[tf_index]
    if entry.isdigit():
        return Located(int(entry))
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
