"""Property tests of helpers.cpu's sentences: the peak's source agrees with the clocks and counts it was given."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from helpers import cpu

FLAGS = st.sampled_from(["avx avx2 fma avx512f", "avx avx2 fma", "avx", "sse2", "asimd", ""])
VENDOR = st.sampled_from(["GenuineIntel", "AuthenticAMD"])


def _cpuinfo(cores: int, mhz: float | None, flags: str, vendor: str, family: int) -> str:
    blocks = []
    for core in range(cores):
        lines = [f"processor: {core}", f"vendor_id: {vendor}", f"cpu family: {family}", "model: 1",
                 f"flags: {flags}", f"core id: {core}"]
        if mhz is not None:
            lines.append(f"cpu MHz: {mhz}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


@given(cores=st.integers(1, 64), mhz=st.one_of(st.none(), st.floats(400, 6000)), flags=FLAGS, vendor=VENDOR,
       family=st.sampled_from([6, 23, 25, 26]), measured=st.one_of(st.none(), st.floats(0.4, 6.5)),
       cpufreq=st.one_of(st.just([]), st.lists(st.integers(400_000, 6_000_000), min_size=1, max_size=4)))
def test_peak_source_agrees_with_the_clocks_and_cores_it_multiplies(cores, mhz, flags, vendor, family, measured,
                                                                    cpufreq):
    text = _cpuinfo(cores, mhz, flags, vendor, family)
    p = cpu.peak(text, cpufreq_khz=cpufreq, measured_ghz=measured, machine="x86_64")
    os_clock = max(cpufreq) / 1e6 if cpufreq else (mhz / 1000 if mhz is not None else None)
    word = "core" if p.cores == 1 else "cores"
    assert p.peak_source.startswith(f"{p.cores} {word} x ")
    assert f"x {p.flops_per_cycle} FP32 FLOP/cycle" in p.peak_source
    if measured is not None and (os_clock is None or measured > os_clock):
        assert p.clock_ghz == measured and "runs above that clock (boost)" in p.peak_source
    else:
        assert "boost" not in p.peak_source
        if measured is not None:
            assert f"the measured {measured:.4g} GHz is not higher" in p.peak_source
    if p.clock_ghz is None:
        assert p.gflops is None and "unknown clock" in p.peak_source
    else:
        shown = float(re.search(r"x ([\d.]+) GHz x", p.peak_source).group(1))
        assert shown == float(f"{p.clock_ghz:.4g}")
        assert p.gflops == p.cores * p.clock_ghz * p.flops_per_cycle
        if p.at_os_clock is not None:
            assert p.at_os_clock <= p.gflops * (1 + 1e-12), "the peak at the OS clock never exceeds the peak"


@given(flags=FLAGS, vendor=VENDOR, family=st.sampled_from([6, 23, 25, 26]))
def test_flops_per_cycle_reading_names_the_lanes_it_multiplies(flags, vendor, family):
    reading = cpu.fp32_flops_per_cycle(_cpuinfo(1, 2000.0, flags, vendor, family), machine="x86_64")
    factors = re.search(r"(\d+) FMA pipes? x (\d+) lanes x 2", reading.how)
    if factors:
        assert int(factors.group(1)) * int(factors.group(2)) * 2 == reading.value, reading
