"""`make bench`: measure the course on this machine and write benchmarks/RESULTS.md (and a plot).

    .venv/bin/python benchmarks/run.py [--skip-make-test] [--notebooks 00_environment_check.ipynb ...]

1. each notebook's wall time under papermill at learner sizes on both of TensorFlow's CPU paths, one at
   a time (benchmarks/notebook_times.py: written to times.json, which the README and the notebooks
   quote), and at smoke size for where `make test`'s time goes;
2. `make test`'s wall time, and where it goes: the installer's check, a Jupyter kernel start, the
   TensorFlow import, and the notebook executions;
3. `helpers.bench` against a synchronised reference under asynchronous execution (and a naive timer);
4. matmul GFLOP/s as notebook 03 measures it, against the CPU's peak and NumPy's BLAS in the same run;
5. `make test` and the CI script, each from a fresh clone, against their targets (benchmarks/suites.py).

Timings are reported, never asserted as absolute numbers; the learner target (<= 120 s per notebook
on 2 cores) is reported as met or missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import nbrun  # noqa: E402
import notebook_times  # noqa: E402
import suites  # noqa: E402


def _seconds(cmd: list[str], **kwargs) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, **kwargs)
    return time.perf_counter() - start


def kernel_start_s(repeats: int = 3) -> float:
    from jupyter_client.manager import start_new_kernel

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        manager, client = start_new_kernel(kernel_name="python3")
        times.append(time.perf_counter() - start)
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return statistics.median(times)


def where_make_test_goes(run_make_test: bool) -> dict[str, float]:
    py = sys.executable
    out = {
        "installer check (all pinned packages present)": _seconds([py, str(ROOT / "tools" / "install.py"), "--test"]),
        "one Jupyter kernel start (median of 3)": kernel_start_s(),
        "one `import tensorflow` (median of 3)": statistics.median(
            _seconds([py, "-c", "import helpers.env as e; e.tensorflow()"]) for _ in range(3)),
    }
    if run_make_test:
        out["`make test`, whole (warm .venv)"] = _seconds(["make", "-s", "test"], cwd=ROOT)
    return out


def async_timer() -> dict[str, float]:
    from test_bench import ASYNC_EXPERIMENT

    out = subprocess.run([sys.executable, "-c", ASYNC_EXPERIMENT], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def matmul_rates(sizes: list[int]) -> dict[str, object]:
    import numpy as np

    from helpers import bench, cpu, env
    from helpers.flops import matmul_flops

    tf = env.tensorflow()
    tf_rates, np_rates = {}, {}
    for n in sizes:
        a = tf.random.normal((n, n))
        b = tf.random.normal((n, n))
        an, bn = a.numpy(), b.numpy()
        repeats = 10 if n <= 1024 else 5
        t_tf = bench.benchmark(tf.matmul, a, b, warmup=2, repeats=repeats).median
        t_np = bench.benchmark(np.matmul, an, bn, warmup=2, repeats=repeats, sync=None).median
        tf_rates[n] = bench.gflops(matmul_flops(n, n, n), t_tf)
        np_rates[n] = bench.gflops(matmul_flops(n, n, n), t_np)
    peak = cpu.peak(measured_ghz=cpu.measure_clock_ghz().value)
    return {"tf": tf_rates, "numpy": np_rates, "peak": peak.gflops, "peak_source": peak.peak_source,
            "peak_at_os_clock": peak.at_os_clock}


def plot(rates: dict[str, object], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, key in (("TensorFlow matmul", "tf"), ("NumPy matmul (BLAS)", "numpy")):
        sizes = sorted(rates[key])
        ax.plot(sizes, [rates[key][n] for n in sizes], "o-", label=label)
    if rates["peak"]:
        ax.axhline(rates["peak"], color="k", ls="--", label=f"CPU FP32 peak ({rates['peak']:.0f} GFLOP/s)")
    ax.set(xscale="log", yscale="log", xlabel="matrix size n (n x n)", ylabel="GFLOP/s",
           title="float32 matmul on this CPU, one run")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def smoke_seconds(names: list[str]) -> dict[str, float]:
    """Each notebook's wall time at smoke size (what `make test` runs), one at a time."""
    import tempfile

    seconds = {}
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            seconds[name] = nbrun.run_notebook(name, Path(tmp), smoke=True).seconds
    return seconds


def report(times, smoke, make_test, timer, rates) -> str:
    import tensorflow as tf

    from helpers import cpu

    lines = [f"# Benchmarks: measured on {time.strftime('%Y-%m-%d', time.gmtime())}", "",
             f"Machine: {cpu.model_name()}, {os.cpu_count()} logical cores, {platform.system()} "
             f"{platform.machine()}, Python {platform.python_version()}, TensorFlow {tf.__version__} "
             "(CPU only). Written by `make bench` (benchmarks/run.py); figures are one run's, not targets.", ""]
    lines += notebook_times.results_table(times)
    lines += ["## Where `make test`'s time goes", "", "| part | seconds |", "| --- | --- |"]
    lines += [f"| {k} | {v:.1f} |" for k, v in make_test.items()]
    if smoke:
        lines.append(f"| one smoke-size execution of every notebook, summed (make test runs each twice in one kernel: "
                     f"the claims pass, then nbval's cells; on 2 workers) | {sum(smoke.values()):.0f} |")
    if suites.SUITES_JSON.exists():
        lines += ["", *suites.section(json.loads(suites.SUITES_JSON.read_text()))]
    lines += ["", "## `helpers.bench` under asynchronous execution", "",
              "Ten independent 1024x1024 matmuls, TensorFlow's asynchronous eager mode, 1 thread, 5 interleaved "
              "repeats (the experiment of tests/test_bench.py):", "",
              "| timer | median (ms) | vs synchronised reference |", "| --- | --- | --- |"]
    for key, label in (("reference", "synchronised reference (.numpy() on every result)"),
                       ("helper", "helpers.bench.benchmark"), ("naive", "naive timer (stops at return)")):
        lines.append(f"| {label} | {timer[key] * 1e3:.2f} | {timer[key] / timer['reference']:.2f}x |")
    lines += ["", "## Matmul GFLOP/s against the CPU's peak and NumPy's BLAS (float32, same run)", "",
              "![matmul GFLOP/s](matmul.png)", "", "| n | TensorFlow | NumPy | TensorFlow / peak |",
              "| --- | --- | --- | --- |"]
    for n in sorted(rates["tf"]):
        share = f"{rates['tf'][n] / rates['peak']:.0%}" if rates["peak"] else "n/a"
        lines.append(f"| {n} | {rates['tf'][n]:.0f} | {rates['numpy'][n]:.0f} | {share} |")
    lines += ["", f"Peak: {rates['peak']:.0f} GFLOP/s ({rates['peak_source']})" if rates["peak"] else "Peak: unknown",
              f"At the clock the OS reports it would be {rates['peak_at_os_clock']:.0f} GFLOP/s."
              if rates["peak_at_os_clock"] else "", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", nargs="*", default=None, help="default: every notebook")
    parser.add_argument("--skip-make-test", action="store_true", help="do not time a whole `make test`")
    parser.add_argument("--skip-suites", action="store_true",
                        help="do not time `make test` and the CI script from fresh clones (benchmarks/suites.py)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 512, 1024, 2048])
    args = parser.parse_args(argv)
    names = nbrun.present() if args.notebooks is None else args.notebooks
    notebook_times.main(["--measure", "--only", *names])
    times = notebook_times.load()
    smoke = smoke_seconds(names)
    make_test = where_make_test_goes(not args.skip_make_test)
    if not args.skip_suites:
        suites.record(suites.measure())  # a failed suite keeps the last figures
    timer = async_timer()
    rates = matmul_rates(args.sizes)
    plot(rates, ROOT / "benchmarks" / "matmul.png")
    (ROOT / "benchmarks" / "RESULTS.md").write_text(report(times, smoke, make_test, timer, rates))
    print(f"Wrote {ROOT / 'benchmarks' / 'RESULTS.md'}")
    notebook_times.main(["--sync"])  # the README and the notebooks quote the new times
    return 0


if __name__ == "__main__":
    sys.exit(main())
