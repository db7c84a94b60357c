"""What the CPU can do: its model, instruction-set flags, cores, clocks and peak FLOP/s.

Used by notebooks 03 (the CPU's peak GFLOP/s, a true upper bound for the roofline) and 06 (whether
this CPU has bfloat16 or float16 instructions, which decides how mixed precision runs here). Every
function takes the text of ``/proc/cpuinfo`` (and the cpufreq readings of ``/sys``) as optional
arguments, so tests feed made-up CPUs.

The peak is ``cores x clock x FP32 FLOPs per cycle per core``:

* **cores**: physical cores (hyper-threads share one core's vector units, so they add no FLOPs);
  without /proc/cpuinfo, ``os.cpu_count()``, which counts logical CPUs (efficiency cores and
  hyper-threads included), so the peak stays an upper bound.
* **clock**: the highest the OS reports (cpufreq's ``cpuinfo_max_freq``; else the ``cpu MHz`` of
  ``/proc/cpuinfo``, which is often the base clock in a virtual machine), or a measured clock when
  that is higher: cores boost above their base clock, and a VM often hides the boost from the OS.
  :func:`measure_clock_ghz` measures it with a loop of dependent integer additions (one per cycle
  on every current x86-64 and ARM64 core), compiled by the system's C compiler if there is one.
* **FLOPs per cycle**: vector lanes x FMA pipes x 2 (a fused multiply-add is 2 FLOPs), from the
  flags and, where the width of the vector units differs within one instruction set, the CPU
  family (:func:`fp32_flops_per_cycle` documents every assumption). Where the hardware could be
  either, the larger figure is taken, so the peak stays an upper bound.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

CPUINFO = Path("/proc/cpuinfo")
SYS_CPU = Path("/sys/devices/system/cpu")


def _cpuinfo(text: str | None) -> str:
    if text is not None:
        return text
    try:
        return CPUINFO.read_text()
    except OSError:  # macOS, Windows: no /proc
        return ""


def _field(text: str, name: str) -> str | None:
    values = _fields(text, name)
    return values[0] if values else None


def _fields(text: str, name: str) -> list[str]:
    """Every value of field `name` (one per processor block)."""
    out = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == name:
            out.append(value.strip())
    return out


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value, 0) if value.lower().startswith("0x") else int(value)
    except ValueError:
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


def physical_cores(cpuinfo: str | None = None) -> int:
    """Physical cores: distinct (``physical id``, ``core id``) pairs, else processors, else ``os.cpu_count()``.

    Hyper-threads (two logical CPUs on one core) share that core's vector units, so the peak counts
    cores, not logical CPUs.

    Example:
        >>> two_threads_one_core = "processor: 0\\ncore id: 0\\n\\nprocessor: 1\\ncore id: 0\\n"
        >>> physical_cores(two_threads_one_core)
        1
    """
    text = _cpuinfo(cpuinfo)
    blocks = [b for b in text.split("\n\n") if _field(b, "processor") is not None]
    pairs = {(_field(b, "physical id") or "0", _field(b, "core id")) for b in blocks}
    if blocks and all(core is not None for _, core in pairs):
        return len(pairs)
    if blocks:
        return len(blocks)
    return os.cpu_count() or 1


def _cores_how(text: str) -> str:
    """How :func:`physical_cores` counted, for the peak's source."""
    blocks = [b for b in text.split("\n\n") if _field(b, "processor") is not None]
    if blocks and all(_field(b, "core id") is not None for b in blocks):
        return "distinct core ids in /proc/cpuinfo, as hyper-threads share a core's vector units"
    if blocks:
        return "one core per processor in /proc/cpuinfo (it lists no core ids)"
    return ("os.cpu_count(), as there is no /proc/cpuinfo: it counts logical CPUs, efficiency cores and "
            "hyper-threads included, so the peak is an upper bound")


def cpufreq_max_khz(root: Path = SYS_CPU) -> list[int]:
    """Each CPU's maximum clock in kHz from cpufreq (``cpuinfo_max_freq``); empty where there is none.

    Virtual machines often have no cpufreq at all.

    Example:
        >>> cpufreq_max_khz(Path("/nonexistent"))
        []
    """
    out = []
    for path in sorted(root.glob("cpu[0-9]*/cpufreq/cpuinfo_max_freq")):
        try:
            out.append(int(path.read_text().strip()))
        except (OSError, ValueError):
            continue
    return out


class Reading(NamedTuple):
    """A number and how it was obtained (``value`` is None when it could not be)."""

    value: float | None
    how: str


def largest_cache(root: Path = SYS_CPU) -> Reading:
    """The largest data cache of CPU 0 in bytes, as the OS reports it in sysfs (None where it does not).

    Arrays larger than this come from main memory, so their bandwidth is the memory's, not a cache's.

    Example:
        >>> largest_cache(Path("/nonexistent")).value is None
        True
    """
    best: tuple[int, int, str] | None = None  # (bytes, level, shared by)
    for folder in sorted(root.glob("cpu0/cache/index[0-9]*")):
        try:
            kind = (folder / "type").read_text().strip()
            level = int((folder / "level").read_text().strip())
            size = (folder / "size").read_text().strip().upper()
        except (OSError, ValueError):
            continue
        units = {"K": 2**10, "M": 2**20, "G": 2**30}
        try:
            count = int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
        except (ValueError, IndexError):
            continue
        if kind != "Instruction" and (best is None or count > best[0]):
            best = (count, level, kind)
    if best is None:
        return Reading(None, "the OS reports no cache size here")
    return Reading(best[0], f"L{best[1]} cache of {best[0] / 2**20:,.4g} MiB, as the OS reports it "
                            "(/sys/devices/system/cpu/cpu0/cache)")


def os_clock_ghz(cpuinfo: str | None = None, cpufreq_khz: Sequence[int] | None = None) -> Reading:
    """The highest clock the OS reports, in GHz: cpufreq's maximum if present, else /proc/cpuinfo's ``cpu MHz``.

    Args:
        cpuinfo: the text of /proc/cpuinfo (default: read it).
        cpufreq_khz: the cpufreq maxima in kHz (default: read /sys; pass ``[]`` for "no cpufreq").

    Example:
        >>> os_clock_ghz("cpu MHz\\t: 2596.1\\n", cpufreq_khz=[]).value
        2.5961
        >>> os_clock_ghz("cpu MHz\\t: 2596.1\\n", cpufreq_khz=[3700000]).value
        3.7
    """
    khz = cpufreq_max_khz() if cpufreq_khz is None else list(cpufreq_khz)
    if khz:
        return Reading(max(khz) / 1e6, "cpufreq's maximum, cpuinfo_max_freq")
    mhz = []
    for value in _fields(_cpuinfo(cpuinfo), "cpu MHz"):
        try:
            mhz.append(float(value))
        except ValueError:
            continue
    if mhz:
        return Reading(max(mhz) / 1000, "'cpu MHz' in /proc/cpuinfo; no cpufreq maximum here")
    return Reading(None, "the OS reports no clock here")


def fp32_flops_per_cycle(cpuinfo: str | None = None, machine: str | None = None) -> Reading:
    """FP32 FLOPs one core can do per cycle: vector lanes x FMA pipes x 2, from flags and CPU family.

    The assumptions, by instruction set (upper bounds where parts differ):

    * AVX-512 (``avx512f``): 16 FP32 lanes, 2 FMA pipes -> 64 (Intel Xeon Scalable, AMD Zen 5
      desktop and server). Exception: AMD family 25 (Zen 4) runs AVX-512 on 256-bit units -> 32.
      Some parts have one 512-bit FMA unit (32); 64 is the bound.
    * AVX2 with FMA (``avx2``, ``fma``): 8 lanes, 2 FMA pipes -> 32 (Intel since Haswell, AMD since
      Zen 2). Exception: AMD family 23 models below 0x30 (Zen, Zen+) have 128-bit units -> 16.
    * AVX without FMA: one 8-lane add and one 8-lane multiply per cycle -> 16 (Sandy/Ivy Bridge).
    * SSE2 only: one 4-lane add and one multiply -> 8.
    * ARM64 (``asimd``): 4 lanes, up to 4 FMA pipes -> 32 (Apple M-series, Neoverse V1/V2; N1 has 2).
    * No flags (macOS, Windows): 64 on x86-64, 32 on ARM64: the most such cores' vector units do.
      A matrix unit outside the vector units (Apple's AMX, used by Accelerate) is not counted, so a
      matmul through it can beat this peak; the notebook then raises the peak to the measurement.

    Example:
        >>> fp32_flops_per_cycle("vendor_id: GenuineIntel\\nflags: avx avx2 fma avx512f\\n").value
        64
        >>> fp32_flops_per_cycle("vendor_id: AuthenticAMD\\ncpu family: 25\\nflags: avx2 fma avx512f\\n").value
        32
    """
    text = _cpuinfo(cpuinfo)
    have = flags(text)
    machine = (machine if machine is not None else platform.machine()).lower()
    vendor = _field(text, "vendor_id") or ""
    family = _int(_field(text, "cpu family"))
    model = _int(_field(text, "model"))
    amd = vendor == "AuthenticAMD" and family is not None
    if "avx512f" in have:
        if amd and family == 25:
            return Reading(32, "AVX-512 + FMA on AMD family 25 (Zen 4), which runs 512-bit vectors on 256-bit "
                               "units: 2 FMA pipes x 8 lanes x 2")
        where = ("2 AVX-512 FMA units, as on Xeon Scalable" if not amd else "AMD family 26 (Zen 5), 512-bit units"
                 if family == 26 else f"AMD family {family}, assumed like Zen 5")
        return Reading(64, f"AVX-512 + FMA: 2 FMA pipes x 16 lanes x 2, {where}; parts with one 512-bit FMA unit "
                           "do half, so this is an upper bound")
    if "fma" in have and ("avx2" in have or "avx" in have):
        if amd and family == 23 and model is not None and model < 0x30:
            return Reading(16, "AVX2 + FMA on AMD family 23 below model 0x30 (Zen, Zen+), with 128-bit units: "
                               "2 FMA pipes x 4 lanes x 2")
        return Reading(32, "AVX2 + FMA: 2 FMA pipes x 8 lanes x 2")
    if "avx" in have:
        return Reading(16, "AVX without FMA: one 8-lane add + one 8-lane multiply per cycle")
    if "asimd" in have:
        return Reading(32, "ARM64 NEON: up to 4 FMA pipes x 4 lanes x 2; some cores have 2 pipes, so this is an "
                           "upper bound")
    if not have and machine in ("arm64", "aarch64"):
        return Reading(32, "ARM64 NEON: up to 4 FMA pipes x 4 lanes x 2 (no flags reported, as on macOS). Apple's "
                           "M-series chips also have an AMX matrix unit, which Apple's Accelerate library (NumPy's "
                           "BLAS on macOS 14 and later) uses for matmuls and this peak does not count")
    if "sse2" in have:
        return Reading(8, "SSE2: one 4-lane add + one 4-lane multiply per cycle")
    if machine in ("x86_64", "amd64"):
        return Reading(64, "no flags reported: assumed AVX-512 with 2 FMA pipes, the most an x86-64 core does")
    return Reading(32, f"no flags reported for machine {machine or 'unknown'!r}: assumed 32")


_CLOCK_C = r"""
/* A loop of dependent integer additions: each waits for the one before, so one runs per cycle. The added value
   comes from a register, not an immediate: Intel's Golden Cove and later cores (Sapphire and Emerald Rapids Xeons)
   fold small immediate additions at register renaming, and a chain of "add $1" then runs several per cycle. */
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
#if defined(__x86_64__)
#define ADD4 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
#elif defined(__aarch64__)
#define ADD4 "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
#else
#error "no dependent-add loop for this architecture"
#endif
int main(void) {
    long x = 0, one = 1, n = 4000000;
    double best = 0;
    for (int r = 0; r < 25; r++) {
        double t0 = now();
        for (long i = 0; i < n; i++) __asm__ volatile(ADD4 ADD4 : "+r"(x) : "r"(one));
        double hz = 8.0 * n / (now() - t0);
        if (hz > best) best = hz;
    }
    printf("%.6f\n", best / 1e9);
    return x == 1;
}
"""


def measure_clock_ghz(workdir: str | os.PathLike[str] | None = None, compiler: str | None = None,
                      timeout: float = 60.0) -> Reading:
    """Measure the core's clock: the best of 25 short runs of a compiled dependent-addition loop.

    Each addition needs the result of the one before, and an integer addition takes one cycle on
    every current x86-64 and ARM64 core, so additions per second is cycles per second. Another
    process taking the core only makes a run slower, and the best run counts, so a busy machine
    gives a lower figure, never a higher one; the loop runs on one core, which boosts highest.

    Args:
        workdir: where to write the C file and the program (default: a temporary folder).
        compiler: the C compiler (default: the first of cc, gcc, clang found on PATH).

    Returns:
        ``Reading(ghz, how)``; ``ghz`` is None, with the reason, when there is no compiler or the
        architecture is neither x86-64 nor ARM64.

    Example:
        >>> reading = measure_clock_ghz(compiler="no-such-compiler")
        >>> reading.value is None, reading.how
        (True, "no C compiler 'no-such-compiler' found: the clock was not measured")
    """
    cc = compiler or next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if cc is None or shutil.which(cc) is None:
        name = f"{cc!r}" if cc else "(cc, gcc or clang)"
        return Reading(None, f"no C compiler {name} found: the clock was not measured")
    with contextlib.nullcontext(workdir) if workdir is not None else tempfile.TemporaryDirectory() as where:
        folder = Path(where)
        folder.mkdir(parents=True, exist_ok=True)
        source, program = folder / "clock.c", folder / "clock"
        source.write_text(_CLOCK_C)
        try:
            build = subprocess.run([cc, "-O1", "-o", str(program), str(source)], capture_output=True, text=True,
                                   timeout=timeout)
            if build.returncode:
                tail = (build.stderr.strip().splitlines() or ["no message"])[-1]
                return Reading(None, f"{cc} could not build the clock loop ({tail}): the clock was not measured")
            run = subprocess.run([str(program)], capture_output=True, text=True, timeout=timeout)
            ghz = float(run.stdout.strip())
        except (OSError, subprocess.SubprocessError, ValueError) as err:
            return Reading(None, f"the clock loop did not run ({type(err).__name__}): the clock was not measured")
    return Reading(ghz, "a loop of dependent integer additions, one per cycle, best of 25 runs")


@dataclass
class CpuPeak:
    """The CPU's FP32 peak and the numbers it is made of (``gflops`` is None when no clock is known)."""

    gflops: float | None
    cores: int
    clock_ghz: float | None
    os_clock_ghz: float | None
    flops_per_cycle: int
    peak_source: str

    @property
    def at_os_clock(self) -> float | None:
        """The peak at the clock the OS reports (lower than :attr:`gflops` when the core boosts above it)."""
        return None if self.os_clock_ghz is None else self.cores * self.os_clock_ghz * self.flops_per_cycle


def peak(cpuinfo: str | None = None, cpufreq_khz: Sequence[int] | None = None, measured_ghz: float | None = None,
         machine: str | None = None) -> CpuPeak:
    """This CPU's FP32 peak in GFLOP/s: physical cores x clock x FLOPs per cycle, with its ``peak_source``.

    The clock is the highest of the clock the OS reports (:func:`os_clock_ghz`) and `measured_ghz`
    (from :func:`measure_clock_ghz`). The peak is what the vector units can do at that clock: no
    program runs faster, so a measurement above it means one of the factors is wrong (most often a
    clock the OS under-reports).

    Example:
        >>> zen5 = ("processor: 0\\nvendor_id: AuthenticAMD\\ncpu family: 26\\nflags: avx2 fma avx512f\\n"
        ...         "cpu MHz: 2600.0\\ncore id: 0\\n")
        >>> p = peak(zen5, cpufreq_khz=[], measured_ghz=3.7)
        >>> round(p.gflops), round(p.at_os_clock)  # 1 core x 3.7 GHz x 64, and at the OS's 2.6 GHz
        (237, 166)
        >>> p.peak_source.split(". ")[0]
        '1 core x 3.7 GHz x 64 FP32 FLOP/cycle'
    """
    if measured_ghz is not None and (isinstance(measured_ghz, bool) or not isinstance(measured_ghz, (int, float))
                                     or measured_ghz <= 0):
        raise ValueError(f"measured_ghz={measured_ghz!r}: use a positive number of GHz, or None.")
    text = _cpuinfo(cpuinfo)
    cores = physical_cores(text)
    fpc = fp32_flops_per_cycle(text, machine)
    os_clock = os_clock_ghz(text, cpufreq_khz)
    os_said = f"{os_clock.value:.4g} GHz ({os_clock.how})" if os_clock.value is not None else "no clock"
    if measured_ghz is not None and (os_clock.value is None or measured_ghz > os_clock.value):
        clock = Reading(float(measured_ghz), f"measured by a loop of dependent integer additions; the OS "
                                             f"reports {os_said}, so the core runs above that clock (boost)")
    elif measured_ghz is not None:
        clock = Reading(os_clock.value, f"the OS reports {os_said}; the measured {measured_ghz:.4g} GHz is not higher")
    else:
        clock = Reading(os_clock.value, f"the OS reports {os_said}" if os_clock.value is not None else os_clock.how)
    core_word = "core" if cores == 1 else "cores"
    ghz = "unknown clock" if clock.value is None else f"{clock.value:.4g} GHz"
    source = (f"{cores} {core_word} x {ghz} x {fpc.value} FP32 FLOP/cycle. Cores: {_cores_how(text)}. "
              f"Clock: {clock.how}. FLOP/cycle: {fpc.how}.")
    if clock.value is None:
        return CpuPeak(None, cores, None, None, int(fpc.value), source)
    return CpuPeak(cores * clock.value * fpc.value, cores, clock.value, os_clock.value, int(fpc.value), source)
