"""helpers.cpu: cores, clocks, FLOPs per cycle and the peak, on made-up CPUs (and this one)."""

from __future__ import annotations

import os
import shutil

import pytest

from helpers import cpu


def cpuinfo(*, vendor="GenuineIntel", family=6, model=85, flags="fpu sse sse2 avx avx2 fma avx512f", mhz=2200.0,
            cores=(0, 1), name="Test CPU") -> str:
    """/proc/cpuinfo text: one block per logical CPU, each with its core id."""
    blocks = []
    for i, core in enumerate(cores):
        blocks.append(f"processor\t: {i}\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
                      f"model name\t: {name}\ncpu MHz\t\t: {mhz}\nphysical id\t: 0\ncore id\t\t: {core}\n"
                      f"flags\t\t: {flags}\n")
    return "\n".join(blocks)


ZEN5_VM = cpuinfo(vendor="AuthenticAMD", family=26, model=2, mhz=2596.12, name="AMD EPYC",
                  flags="fpu sse2 avx avx2 fma avx512f avx512_bf16 avx512_vp2intersect")
COLAB_XEON = cpuinfo(mhz=2199.998, cores=(0, 0), name="Intel(R) Xeon(R) CPU @ 2.20GHz")
ARM = "processor\t: 0\nFeatures\t: fp asimd evtstrm\n\nprocessor\t: 1\nFeatures\t: fp asimd evtstrm\n"


# ---------------------------------------------------------------- model, flags, cores
def test_model_name_and_flags_keep_working():
    assert cpu.model_name(ZEN5_VM) == "AMD EPYC"
    assert {"avx512f", "avx512_bf16", "fma"} <= cpu.flags(ZEN5_VM)
    assert cpu.flags(ARM) == {"fp", "asimd", "evtstrm"}
    assert cpu.flags("") == set()
    assert isinstance(cpu.flags(), set) and cpu.model_name()


def test_physical_cores_count_cores_not_hyperthreads():
    assert cpu.physical_cores(ZEN5_VM) == 2
    assert cpu.physical_cores(COLAB_XEON) == 1  # two threads on core 0
    assert cpu.physical_cores(cpuinfo(cores=(0, 1, 0, 1))) == 2
    assert cpu.physical_cores(ARM) == 2  # no core ids: one per processor
    assert cpu.physical_cores("") == (os.cpu_count() or 1)  # no /proc/cpuinfo


# ---------------------------------------------------------------- clocks
def test_os_clock_prefers_cpufreq_max_then_cpu_mhz():
    assert cpu.os_clock_ghz(ZEN5_VM, cpufreq_khz=[]).value == pytest.approx(2.59612)
    assert "no cpufreq" in cpu.os_clock_ghz(ZEN5_VM, cpufreq_khz=[]).how
    reading = cpu.os_clock_ghz(ZEN5_VM, cpufreq_khz=[3_500_000, 3_700_000])
    assert reading.value == pytest.approx(3.7) and "cpuinfo_max_freq" in reading.how
    assert cpu.os_clock_ghz(ARM, cpufreq_khz=[]).value is None


def test_cpufreq_max_reads_a_sysfs_tree(tmp_path):
    for i, khz in enumerate((3_400_000, 3_900_000)):
        folder = tmp_path / f"cpu{i}" / "cpufreq"
        folder.mkdir(parents=True)
        (folder / "cpuinfo_max_freq").write_text(f"{khz}\n")
    (tmp_path / "cpufreq").mkdir()  # not a cpuN folder: ignored
    assert cpu.cpufreq_max_khz(tmp_path) == [3_400_000, 3_900_000]
    assert cpu.cpufreq_max_khz(tmp_path / "missing") == []


def test_measure_clock_without_a_compiler_says_why():
    reading = cpu.measure_clock_ghz(compiler="no-such-cc")
    assert reading.value is None and "no C compiler" in reading.how


def test_measure_clock_with_a_compiler_that_fails(tmp_path):
    if not shutil.which("false"):
        pytest.skip("no `false` command")
    reading = cpu.measure_clock_ghz(tmp_path, compiler="false")
    assert reading.value is None and "could not build" in reading.how


@pytest.mark.skipif(not any(shutil.which(c) for c in ("cc", "gcc", "clang")), reason="no C compiler here")
def test_measure_clock_on_this_machine(tmp_path):
    reading = cpu.measure_clock_ghz(tmp_path)
    assert reading.value is not None, reading.how
    assert 0.3 < reading.value < 7.0, reading  # a loaded machine reads lower, never far higher
    assert (tmp_path / "clock.c").exists() and (tmp_path / "clock").exists()


# ---------------------------------------------------------------- FLOPs per cycle
@pytest.mark.parametrize("text, expected, says", [
    (ZEN5_VM, 64, "Zen 5"),
    (cpuinfo(vendor="AuthenticAMD", family=25, model=17, flags="avx2 fma avx512f"), 32, "Zen 4"),
    (cpuinfo(vendor="AuthenticAMD", family=25, model=1, flags="avx avx2 fma"), 32, "AVX2 + FMA"),
    (cpuinfo(vendor="AuthenticAMD", family=23, model=1, flags="avx avx2 fma"), 16, "Zen, Zen+"),
    (cpuinfo(vendor="AuthenticAMD", family=23, model=0x31, flags="avx avx2 fma"), 32, "AVX2 + FMA"),
    (COLAB_XEON, 64, "Xeon Scalable"),
    (cpuinfo(flags="sse2 avx avx2 fma"), 32, "2 FMA pipes x 8 lanes"),
    (cpuinfo(flags="sse2 avx"), 16, "without FMA"),
    (cpuinfo(flags="sse sse2"), 8, "SSE2"),
    (ARM, 32, "NEON"),
])
def test_flops_per_cycle_from_flags_and_family(text, expected, says):
    reading = cpu.fp32_flops_per_cycle(text)
    assert reading.value == expected and says in reading.how, reading


def test_flops_per_cycle_without_flags_assumes_the_most_for_the_machine():
    assert cpu.fp32_flops_per_cycle("", machine="x86_64").value == 64
    assert cpu.fp32_flops_per_cycle("", machine="arm64").value == 32
    assert "assumed" in cpu.fp32_flops_per_cycle("", machine="riscv64").how


# ---------------------------------------------------------------- the peak
def test_peak_of_this_machine_type_at_the_os_clock():
    p = cpu.peak(ZEN5_VM, cpufreq_khz=[])
    assert p.cores == 2 and p.flops_per_cycle == 64
    assert p.gflops == pytest.approx(2 * 2.59612 * 64) == pytest.approx(p.at_os_clock)
    assert p.peak_source.startswith("2 cores x 2.596 GHz x 64 FP32 FLOP/cycle.")
    assert "the OS reports" in p.peak_source and "Zen 5" in p.peak_source


def test_a_measured_boost_clock_raises_the_peak_and_says_so():
    p = cpu.peak(ZEN5_VM, cpufreq_khz=[], measured_ghz=3.7)
    assert p.gflops == pytest.approx(2 * 3.7 * 64)
    assert p.at_os_clock == pytest.approx(2 * 2.59612 * 64) and p.at_os_clock < p.gflops
    assert "measured" in p.peak_source and "boost" in p.peak_source


def test_a_measured_clock_below_the_os_clock_is_not_used():
    p = cpu.peak(ZEN5_VM, cpufreq_khz=[4_000_000], measured_ghz=3.0)  # a busy machine reads low
    assert p.clock_ghz == pytest.approx(4.0) and "not higher" in p.peak_source


def test_colab_like_xeon_counts_one_core():
    p = cpu.peak(COLAB_XEON, cpufreq_khz=[])
    assert p.cores == 1 and p.gflops == pytest.approx(2.199998 * 64)
    assert p.peak_source.startswith("1 core x")


def test_no_clock_at_all_gives_no_peak_but_a_source():
    p = cpu.peak(ARM, cpufreq_khz=[])
    assert p.gflops is None and p.at_os_clock is None and "unknown clock" in p.peak_source
    assert cpu.peak(ARM, cpufreq_khz=[], measured_ghz=3.2).gflops == pytest.approx(2 * 3.2 * 32)


@pytest.mark.parametrize("bad", [0, -1.0, "3.5", True])
def test_peak_refuses_a_bad_measured_clock(bad):
    with pytest.raises(ValueError, match="measured_ghz"):
        cpu.peak(ZEN5_VM, cpufreq_khz=[], measured_ghz=bad)


def test_peak_on_this_machine_is_positive():
    p = cpu.peak()
    assert p.cores >= 1 and p.flops_per_cycle in (8, 16, 32, 64)
    assert p.gflops is None or p.gflops > 0
