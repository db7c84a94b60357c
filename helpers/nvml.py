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




def index_for(tf_index: int, environ: dict[str, str] | None = None) -> int | None:
    """NVML's index of TensorFlow's ``GPU:tf_index``, or None when it cannot be told.

    NVML numbers every GPU by PCI bus and ignores ``CUDA_VISIBLE_DEVICES``; ``helpers`` sets
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so CUDA numbers them the same way. With
    ``CUDA_VISIBLE_DEVICES=2,3``, TensorFlow's GPU:0 is NVML's GPU 2. Entries given as UUIDs or MIG
    names cannot be mapped this way: None, so no reading of another card is shown by mistake.

    Example:
        >>> index_for(0, {"CUDA_VISIBLE_DEVICES": "2,3"})
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
