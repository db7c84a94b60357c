"""What the CPU can do: its model, instruction-set flags and clocks.

Used by notebooks 03 (the CPU's peak GFLOP/s, a true upper bound for the roofline) and 06 (whether
this CPU has bfloat16 or float16 instructions, which decides how mixed precision runs here). Every
function takes the text of ``/proc/cpuinfo`` as an optional argument, so tests feed made-up CPUs.
"""

from __future__ import annotations

import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def _cpuinfo(text: str | None) -> str:
    if text is not None:
        return text
    try:
        return CPUINFO.read_text()
    except OSError:  # macOS, Windows: no /proc
        return ""


def _field(text: str, name: str) -> str | None:
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return None


def model_name(cpuinfo: str | None = None) -> str:
    """The CPU's model name, or the platform's processor string where there is no /proc/cpuinfo.

    Example:
        >>> model_name("model name\\t: AMD EPYC 9B14\\n")
        'AMD EPYC 9B14'
    """
    return _field(_cpuinfo(cpuinfo), "model name") or platform.processor() or "unknown CPU"


def flags(cpuinfo: str | None = None) -> set[str]:
    """The instruction-set flags the OS reports (``avx2``, ``fma``, ``avx512_bf16``, ``amx_bf16``, ...).

    Empty where the OS does not say (no /proc/cpuinfo).

    Example:
        >>> sorted(flags("flags\\t: fpu avx2 fma\\n"))
        ['avx2', 'fma', 'fpu']
    """
    value = _field(_cpuinfo(cpuinfo), "flags") or _field(_cpuinfo(cpuinfo), "Features") or ""
    return set(value.split())
