"""Claims of notebook 03 · CPU vs GPU timing, asserted on its results JSON, on any hardware.

Timings are compared within one run (the naive timer against the synchronised one, measurements
against the recorded peak), never against absolute numbers.
"""

import re

from claims import common
from helpers.timing import MODES, _duration, payoff_steps

common_fall = 0.8  # a larger size below this share of a smaller size's rate: the curve falls (helpers.timing.FALL)

SYNCED = "sync_devices()"  # the row of the asynchronous demo that waits for the device itself
HOST_ONLY = "(host queue only)"  # how a row that waits only for TensorFlow's host-side queue is labelled

KEYS = ("gpu_count", "tf32_state", "dispatch_only_s", "synced_s", "async_waits_s", "async_returned_s", "wait_s",
        "matmul_gflops", "numpy_gflops", "peak_gflops", "peak_source", "cpu_peak_at_os_clock", "conv_gflops",
        "text_epoch_s", "first_call_s", "steady_call_s", "copy_s", "elementwise_gb_s", "resnet50_images_per_s",
        "exercises_solved", "matmul_spread", "numpy_spread", "noise_limit", "cache_bytes", "working_set_arrays",
        "async_spread", "compile_first_s", "compile_steady_s", "compile_spread", "xla_payoff_steps", "spe_step_s",
        "spe_spread", "trace_counts", "retrace_calls", "jit_auto_resolved", "device_types", "launch_s", "launch_spread",
        "launch_ops")
LEFTOVERS = ("design brief", "the seed", "grew from", "quoted from a blog post")


def check(run) -> None:
    common.dispatch(run, __name__)


def _gflops_figures(r):
    """(device, what, GFLOP/s) of every recorded GFLOP/s, with the device whose peak bounds it."""
    for device, by_size in r["matmul_gflops"].items():
        for n, g in by_size.items():
            yield device, f"matmul n={n}", g
    for n, g in r["numpy_gflops"].items():
        yield "CPU", f"NumPy matmul n={n}", g
    for device, conv in r["conv_gflops"].items():
        for what, g in conv.items():
            yield device, f"conv {what}", g


def shared(run):
    r = run.results
    common.require(r, KEYS)
    text = run.outputs_text()

    # Asynchronous execution: the same work timed without waiting reads shorter than with waiting. The
    # reference is the row that waits for the device (sync_devices); context.async_wait() empties only the
    # host-side queue (on a GPU the kernels may still run), so its row is labelled and claims nothing.
    waits, returned = r["async_waits_s"], r["async_returned_s"]
    assert (r["dispatch_only_s"], r["synced_s"]) == (returned[SYNCED], waits[SYNCED]), (r["synced_s"], waits)
    assert 0 < r["dispatch_only_s"] < r["synced_s"], (r["dispatch_only_s"], r["synced_s"])
    assert all(HOST_ONLY in wait for wait in waits if "async_wait" in wait), list(waits)
    assert all(waits[wait] > returned[wait] for wait in waits if HOST_ONLY not in wait), (waits, returned)
    assert "too short" in text and "host-side queue" in text
    assert "its own naive reading" in text, "each wait is compared with its own naive reading"
    assert 0 < r["wait_s"] and "One wait for every device" in text

    # TF32 is off for the whole notebook, and the state is printed beside every section's GPU rates:
    # peaks, matmul sweep, roofline, convolution, text model, ResNet-50.
    assert r["tf32_state"].startswith("TF32 off"), r["tf32_state"]
    assert text.count(r["tf32_state"]) >= 6, f"the TF32 state is printed {text.count(r['tf32_state'])} times"

    # Noise: a reading line on the spreads; a sweep curve that falls at a larger size is flagged as a busy machine.
    assert "Noise: " in text, "no reading line on the spread of the measurements"
    for device, by_size in (*r["matmul_gflops"].items(), ("NumPy (CPU)", r["numpy_gflops"])):
        rates = [by_size[n] for n in sorted(by_size, key=int)]
        if any(g < common_fall * max(rates[:i]) for i, g in enumerate(rates) if i):
            assert "rerun the cell" in text, f"the {device} curve falls at a larger size and the page says nothing"

    # Headlines come from steady rows only: the fastest row whose spread is within the limit the page shows.
    limit = r["noise_limit"]
    steady = {(device, int(n)): g for device, by_size in r["matmul_gflops"].items() for n, g in by_size.items()
              if r["matmul_spread"][device][n] <= limit}
    for device in r["matmul_gflops"]:
        mine = {n: g for (d, n), g in steady.items() if d == device}
        if len(mine) == 1:  # a single steady row is no peak: the page says so instead of "at best" (helpers.timing)
            ((n, g),) = mine.items()
            assert f"Matmul on {device} (TensorFlow): only n = {n} was steady, {g:,.0f} GFLOP/s" in text, (device, mine)
        elif mine:
            n, g = max(mine.items(), key=lambda kv: kv[1])
            assert f"Matmul on {device} (TensorFlow): at best {g:,.0f} GFLOP/s (n = {n})" in text, (device, mine)
        else:
            assert f"Matmul on {device} (TensorFlow): no size was steady enough" in text
    cpu_steady = {("TensorFlow", n): g for (d, n), g in steady.items() if d == "CPU"}
    cpu_steady |= {("NumPy", int(n)): g for n, g in r["numpy_gflops"].items() if r["numpy_spread"][n] <= limit}
    if cpu_steady:  # the headline names the library that ran it (TensorFlow or NumPy)
        (library, n), g = max(cpu_steady.items(), key=lambda kv: kv[1])
        assert f"CPU: fastest steady row {g:,.0f} GFLOP/s ({library}, n = {n})" in text, cpu_steady

    # The asynchronous demo's rows are repeated; a noisy row is flagged, and a host-queue row is not compared with it.
    host_rows = [wait for wait in r["async_spread"] if HOST_ONLY in wait]
    if any(not r["async_spread"][w] <= limit for w in [*host_rows, SYNCED]):
        assert "too noisy to compare" in text
    if not r["async_spread"][SYNCED] <= limit:
        assert "read these times as rough" in text
    # A sweep line with one steady row never calls it a peak (NumPy's line once did, after four noisy rows were
    # dropped): it says there are too few steady rows. Holds on any device, as it follows the recorded spreads.
    sweeps = {f"TensorFlow on the {d}": (by_size, r["matmul_spread"][d]) for d, by_size in r["matmul_gflops"].items()}
    sweeps["NumPy on the CPU"] = (r["numpy_gflops"], r["numpy_spread"])
    for label, (by_size, spreads) in sweeps.items():
        line = next(x for x in text.splitlines() if x.startswith(f"Reading: {label}"))
        if sum(spreads[n] <= limit for n in by_size) == 1:
            assert "peaks at" not in line and "too few steady rows to read a peak" in line, line
    cpu_line = next(line for line in text.splitlines() if line.startswith("Reading: TensorFlow on the CPU"))
    for n, spread in r["matmul_spread"]["CPU"].items():
        if not spread <= limit:  # a noisy size is named as left out, never headlined
            assert f"n = {n}" in cpu_line.split(" left out")[0].split("(")[-1] or "no size was steady" in cpu_line, n

    # The cache rule: a size named as fitting the cache has its whole working set (3 arrays) within it.
    arrays, cache = r["working_set_arrays"], r["cache_bytes"]
    assert arrays == 3 and f"working set, {arrays} arrays x 4 bytes" in text
    for named in re.findall(r"as the ([\d., and]+) MiB ones did here", text):
        for mib in re.findall(r"[\d.]+", named):
            assert cache and arrays * float(mib) * 2**20 <= cache, (mib, cache)

    # No authoring leftovers; the published figures carry their sources and 804 % reads as 9.04x.
    assert not [w for w in LEFTOVERS if w in text.lower()], [w for w in LEFTOVERS if w in text.lower()]
    assert "804 % faster = 9.04x" in text and "8.04x" not in text and "azure.microsoft.com" in text

    # First call (tracing) costs more than a warm call; a NumPy input costs a copy on every call.
    assert r["first_call_s"] > r["steady_call_s"] > 0, (r["first_call_s"], r["steady_call_s"])
    assert r["copy_s"]["numpy_input"] > r["copy_s"]["device_input"] > 0, r["copy_s"]

    # Every measured GFLOP/s is positive and at most the recorded peak of its device; each peak says how.
    devices = set(r["matmul_gflops"])
    assert "CPU" in devices and set(r["peak_gflops"]) == devices == set(r["peak_source"]), (
        devices, r["peak_gflops"], r["peak_source"])
    for device in devices:
        assert r["peak_gflops"][device] and r["peak_gflops"][device] > 0, r["peak_gflops"]
        assert r["peak_source"][device].strip(), f"no peak_source for {device}"
    for device, what, g in _gflops_figures(r):
        assert g > 0, f"{what} on {device}: {g} GFLOP/s"
        # A convolution counted with direct-convolution FLOPs may beat the peak only through a faster algorithm
        # (Winograd, FFT), and the page must then say so; every other figure stays at most the peak.
        explained = what.startswith("conv") and "fewer multiplications than the direct count" in text
        assert g <= r["peak_gflops"][device] or explained, (
            f"{what} on {device}: {g} GFLOP/s, peak {r['peak_gflops'][device]}")
    sizes = {tuple(sorted(by_size, key=int)) for by_size in (*r["matmul_gflops"].values(), r["numpy_gflops"])}
    assert len(sizes) == 1 and len(next(iter(sizes))) >= 2, f"every device timed the same >= 2 sizes: {sizes}"
    assert "FLOP/cycle" in r["peak_source"]["CPU"] or "stands in" in r["peak_source"]["CPU"], r["peak_source"]["CPU"]
    # A steady CPU matmul above the peak at the clock the OS reports is explained as boost, on the page.
    cpu_best = max(cpu_steady.values(), default=0)
    if r["cpu_peak_at_os_clock"] and cpu_best > r["cpu_peak_at_os_clock"]:
        assert "boost" in text, "a measurement beat the peak at the OS clock, and the page does not explain boost"

    # Memory-bound op: far below the peak in GFLOP/s (1 FLOP per 12 bytes); each device's reading names the rate
    # of its smallest and largest arrays (the CPU's slope is drawn through the largest, beyond the caches).
    for device, by_size in r["elementwise_gb_s"].items():
        for gbs in by_size.values():
            assert 0 < gbs / 12 < 0.25 * r["peak_gflops"][device], (device, gbs)
        largest = max(by_size, key=int)
        assert f"Reading ({device}): a + b reached" in text, f"no roofline reading for {device}"
        assert f"{by_size[largest]:,.1f} GB/s on {4 * int(largest) ** 2 / 2**20:,.4g} MiB ones" in text, (
            f"the {device} roofline reading does not give the rate of its largest arrays")

    # Text model: an epoch time per device present, beside the published ratios.
    assert set(r["text_epoch_s"]) == devices and all(s > 0 for s in r["text_epoch_s"].values()), r["text_epoch_s"]
    for published in ("198.2 s", "13.76x", "804 %", "23.2x", "blog post"):
        assert published in text, f"the published figure {published!r} is not on the page"
    assert r["resnet50_images_per_s"] > 0 and "measured by NVIDIA" in text

    compilation(run)

    assert r["exercises_solved"] is True
    assert run.stderr_text() == "", f"stderr on the learner's page:\n{run.stderr_text()[:2000]}"
    assert "Traceback" not in text


def compilation(run):
    """The compilation section's claims, on any device.

    Why each holds on a CPU and on a GPU: a first call traces (tf.function) or traces and compiles (XLA), which
    takes tens to hundreds of milliseconds wherever it runs, while a warm step of this 784-128-10 model takes well
    under a millisecond on a 2-core CPU and less on a GPU; eager dispatch from Python costs each of 200 chained
    adds more than the same adds inside one graph, on a CPU (no Python between ops) and on a GPU (one host call
    instead of 200). The trace counts are TensorFlow's signature rules, the same on every device. Nothing compares
    XLA with the graph by sign: the page's reading decides that by the noise rule, and the claims check that the
    sentence printed is the one the recorded numbers call for.
    """
    r, text = run.results, run.outputs_text()
    first, steady = r["compile_first_s"], r["compile_steady_s"]
    # XLA's row may be missing only where the page recorded and printed why (a GPU XLA cannot compile for).
    reason = (r.get("xla_skipped") or {}).get("reason")
    modes = MODES[:2] if reason else MODES
    assert set(first) == set(steady) == set(r["compile_spread"]) == set(modes), (sorted(first), reason)
    assert set(r["launch_s"]) == set(modes), (sorted(r["launch_s"]), reason)
    if reason:
        assert isinstance(reason, str) and reason.startswith(("XLA cannot compile", "XLA could not compile")), reason
        assert reason in text and "XLA's row is skipped" in text and r["xla_payoff_steps"] is None
    for mode in modes[1:]:
        assert first[mode] > steady[mode] > 0, (mode, first[mode], steady[mode])
    for mode in modes:  # each first call is read in warm steps of its own mode, unless those were noisy
        counted = f"{mode}: first call {_duration(first[mode])} = {first[mode] / steady[mode]:,.0f} steady steps"
        assert (counted in text) == (r["compile_spread"][mode] <= r["noise_limit"]), (mode, r["compile_spread"])
    if not reason:
        payoff = payoff_steps(first["tf.function"], steady["tf.function"], first["tf.function + XLA"],
                              steady["tf.function + XLA"])
        assert r["xla_payoff_steps"] == payoff, (r["xla_payoff_steps"], payoff)
        if "earned back after" in text:
            assert f"earned back after {payoff:,} steps" in text

    # steps_per_execution: 1 and larger values timed; one reading line, decided by the page's noise rule.
    spe = r["spe_step_s"]
    assert "1" in spe and len(spe) >= 2 and all(s > 0 for s in spe.values()), spe
    assert sum(line.startswith("Reading: steps_per_execution=") for line in text.splitlines()) == 1

    # Retracing: a changing Python float traces on every call; a tensor or an input_signature traces once.
    calls, counts = r["retrace_calls"], r["trace_counts"]
    assert counts["Python float"] == calls >= 2 and counts["tensor"] == 1, counts
    assert counts["Python float, input_signature"] == 1 and 1 <= counts["Python float, reduce_retracing=True"] <= calls
    assert f"Python float: {calls} trace(s) in {calls} calls" in text

    # jit_compile="auto": the page states what this kernel's Keras chose and squares it with the devices listed.
    resolved, cpu_only = r["jit_auto_resolved"], set(r["device_types"]) == {"CPU"}
    assert f'jit_compile="auto" resolved to {resolved}' in text
    assert ("does not follow its stock rule" in text) == (cpu_only and resolved)

    # Launch overhead: 200 eager dispatches cost more than the same adds in one graph; the GPU figure is cited.
    launch, ops = r["launch_s"], r["launch_ops"]
    assert launch["eager"] > launch["tf.function"] > 0, launch
    if r["launch_spread"]["eager"] <= r["noise_limit"]:  # a noisy row's per-add cost is not read
        assert f"{launch['eager'] / ops * 1e6:,.3g} µs eager" in text
    assert "Published, not measured here" in text and "developer.nvidia.com/blog/cuda-graphs" in text


def on_cpu(run):
    r = run.results
    assert set(r["matmul_gflops"]) == {"CPU"} and set(r["text_epoch_s"]) == {"CPU"}, r["matmul_gflops"].keys()
    assert r["resnet50_device"] == "CPU"
    text = run.outputs_text()
    assert "not measured here" in text, "the GPU column must say it was not measured here"
    assert "no ratio to measure here" in text
    assert "For scale, a Tesla T4" in text and "not measured here" in text
    assert set(r["device_types"]) == {"CPU"} and "measured on this CPU" in text, r["device_types"]
    if not r["jit_auto_resolved"]:  # Keras' stock rule on a CPU-only machine (the claims run may patch it)
        assert "Keras turns XLA off on a CPU-only machine" in text


def on_gpu(run):
    r = run.results
    assert set(r["matmul_gflops"]) == {"CPU", "GPU"}, r["matmul_gflops"].keys()
    assert set(r["text_epoch_s"]) == {"CPU", "GPU"}, r["text_epoch_s"]
    assert r["resnet50_device"] == "GPU"
    source = r["peak_source"]["GPU"]
    assert "datasheet peak" in source or "not in the course's table" in source, source
    assert "crossover_n" in r and (r["crossover_n"] is None or str(r["crossover_n"]) in r["matmul_gflops"]["GPU"])
    text = run.outputs_text()
    assert "the GPU ran the epoch" in text, "a GPU run states its own CPU-vs-GPU ratio"
    assert "For scale, a Tesla T4" not in text
    assert "of the datasheet bandwidth" in text, "the GPU's roof slope is its datasheet bandwidth, on the page"
    assert "GPU" in r["device_types"] and "measured on this GPU" in text
