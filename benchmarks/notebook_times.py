"""Notebook times: measured once here, kept in benchmarks/times.json, quoted everywhere else.

Every notebook runs under papermill at learner sizes, one at a time (so runs do not compete for the
cores), on both of TensorFlow's CPU paths:

- ``onednn``: as TensorFlow runs on this CPU. It turns oneDNN on by default on x86 Linux CPUs with
  AVX-512 VNNI/BF16 or AMX (TensorFlow 2.9 release notes), and oneDNN computes bfloat16 only where
  AVX-512 exists (tensorflow/core/util/util.cc, ``IsDataTypeSupportedByOneDNNOnThisCPU``);
- ``eigen``: ``TF_ENABLE_ONEDNN_OPTS=0``, the path TensorFlow takes by default on CPUs without those
  features (most AVX2 laptops): Eigen's kernels, with 16-bit arithmetic emulated.

The README's table, each notebook's "Time" line under "Runs on" and benchmarks/RESULTS.md quote
times.json; ``--sync`` rewrites them from it and tests/test_times.py checks that they agree::

    .venv/bin/python benchmarks/notebook_times.py --measure [--only 05_batch_size_and_learning_rate.ipynb ...]
    .venv/bin/python benchmarks/notebook_times.py --sync

``--measure`` exits 1 if a learner run misses its target (120 s on a quiet 2-core CPU). It needs the
test tools (papermill): run `make install-test` (or `make test`) once first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMES = ROOT / "benchmarks" / "times.json"
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
LEARNER_TARGET_S = 120.0  # CONTRIBUTING.md: a learner run takes at most 120 s on a quiet 2-core CPU
PATHS = {"onednn": {}, "eigen": {"TF_ENABLE_ONEDNN_OPTS": "0"}}  # environment of each of TensorFlow's CPU paths

sys.path.insert(0, str(ROOT / "tests"))


def load(path: Path = TIMES) -> dict:
    """times.json: ``{"measured": date, "machine": text, "learner_s": {notebook: {"onednn": s, "eigen": s}}}``."""
    return json.loads(path.read_text())


def time_line(name: str, times: dict) -> str:
    """The "Time" bullet of a notebook's "Runs on" section, from times.json.

    >>> t = {"measured": "2026-11-24", "learner_s": {"05_x.ipynb": {"onednn": 41.26, "eigen": 63.9}}}
    >>> print(time_line("05_x.ipynb", t)[:92])
    - **Time**: a learner run took 41 s on a quiet 2-core CPU with AVX-512, and 64 s on the same
    """
    s = times["learner_s"][name]
    return (f"- **Time**: a learner run took {s['onednn']:.0f} s on a quiet 2-core CPU with AVX-512, and "
            f"{s['eigen']:.0f} s on the same CPU with oneDNN off, the path TensorFlow takes on CPUs without "
            f"AVX-512 such as most AVX2 laptops; a slower CPU takes longer (measured {times['measured']}; "
            "`benchmarks/times.json`).")


def readme_cell(name: str, times: dict) -> str:
    """The README table's time cell: ``"41 s / 64 s"`` (AVX-512, oneDNN on / off)."""
    s = times["learner_s"][name]
    return f"{s['onednn']:.0f} s / {s['eigen']:.0f} s"


def results_table(times: dict) -> list[str]:
    """The notebook-times table of benchmarks/RESULTS.md."""
    rows = ["## Notebook wall times (papermill, learner sizes, one at a time)", "",
            f"From `benchmarks/times.json` (measured {times['measured']} on {times['machine']}). \"Eigen path\": "
            "`TF_ENABLE_ONEDNN_OPTS=0`, TensorFlow's path on CPUs without AVX-512 VNNI/BF16 or AMX.", "",
            f"| notebook | AVX-512, oneDNN (s) | Eigen path (s) | target {LEARNER_TARGET_S:.0f} s |",
            "| --- | --- | --- | --- |"]
    for name, s in times["learner_s"].items():
        verdict = "met" if max(s.values()) <= LEARNER_TARGET_S else "MISSED"
        rows.append(f"| {name} | {s['onednn']:.1f} | {s['eigen']:.1f} | {verdict} |")
    total = {path: sum(s[path] for s in times["learner_s"].values()) for path in PATHS}
    rows += [f"| all | {total['onednn']:.0f} | {total['eigen']:.0f} | |", ""]
    return rows


TIME_BULLET = re.compile(r"^- \*\*Time\*\*: .*$", re.MULTILINE)
RESULTS_SECTION = re.compile(r"## Notebook wall times.*?\n\n(?=## )", re.DOTALL)


def readme_row(text: str, number: str) -> str:
    """The README's table row of notebook `number` ("05")."""
    found = re.search(rf"^\| {number} \|.*$", text, re.MULTILINE)
    if not found:
        raise ValueError(f"README.md has no table row for notebook {number}")
    return found.group(0)


def sync(times: dict) -> list[str]:
    """Rewrite the README's time cells, the notebooks' "Time" bullets and RESULTS.md's table from `times`."""
    import nbrun

    changed = []
    readme_before = readme = README.read_text()
    for name in times["learner_s"]:
        row = readme_row(readme, name[:2])
        cells = row.split(" | ")
        cells[-2] = readme_cell(name, times)
        readme = readme.replace(row, " | ".join(cells))
        path = nbrun.NOTEBOOKS / name
        nb = json.loads(path.read_text())
        first = nb["cells"][0]
        source = "".join(first["source"])
        if not TIME_BULLET.search(source):
            raise ValueError(f"{name}: its first cell has no '- **Time**: ...' bullet under 'Runs on'")
        new = TIME_BULLET.sub(time_line(name, times).replace("\\", "\\\\"), source)
        if new != source:
            first["source"] = new.splitlines(keepends=True)
            path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
            changed.append(name)
    if readme != readme_before:
        README.write_text(readme)
        changed.append("README.md")
    results = RESULTS.read_text()
    new_results = RESULTS_SECTION.sub(lambda _: "\n".join(results_table(times)) + "\n", results, count=1)
    if new_results != results:
        RESULTS.write_text(new_results)
        changed.append("benchmarks/RESULTS.md")
    return changed


def measure(names: list[str]) -> dict[str, dict[str, float]]:
    """Learner seconds of each notebook on each CPU path, one run at a time."""
    import nbrun

    measured = {}
    for name in names:
        measured[name] = {}
        for path, env in PATHS.items():
            before = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    seconds = nbrun.run_notebook(name, Path(tmp), smoke=False, timeout=1800).seconds
            finally:
                for k, v in before.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            measured[name][path] = round(seconds, 1)
            print(f"{name:<40} {path:<7} {seconds:6.1f} s", flush=True)
    return measured


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", action="store_true", help="run the notebooks and write times.json")
    parser.add_argument("--only", nargs="+", default=None, metavar="NOTEBOOK", help="with --measure: these only")
    parser.add_argument("--sync", action="store_true", help="rewrite README, notebooks and RESULTS.md from it")
    args = parser.parse_args(argv)
    import nbrun

    if not (args.measure or args.sync):
        parser.error("say --measure, --sync or both")
    if args.only and not args.measure:
        parser.error("--only goes with --measure")
    unknown = sorted(set(args.only or []) - set(nbrun.present()))
    if unknown:
        parser.error(f"--only: unknown notebook(s) {unknown}; allowed: {nbrun.present()}")
    times = load() if TIMES.exists() else {"learner_s": {}}
    missed = []
    if args.measure:
        try:
            import papermill  # noqa: F401
        except ImportError:
            print("papermill is missing: this benchmark needs the test tools. Run `make install-test` first.")
            return 2
        from helpers import cpu

        measured = measure(args.only or nbrun.present())
        flags = cpu.flags()
        kind = "AVX-512 BF16" if "avx512_bf16" in flags else "AVX-512" if "avx512f" in flags else "no AVX-512"
        times = {"measured": time.strftime("%Y-%m-%d", time.gmtime()),
                 "machine": f"{cpu.model_name()}, {os.cpu_count()} logical cores, {kind}, quiet (nothing else running)",
                 "learner_s": {name: measured.get(name, times["learner_s"].get(name)) for name in nbrun.present()
                               if name in measured or name in times["learner_s"]}}
        tmp = TIMES.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(times, indent=1) + "\n")
        tmp.replace(TIMES)  # never a half-written file
        missed = [name for name, s in measured.items() if max(s.values()) > LEARNER_TARGET_S]
        print(f"Target: learner run <= {LEARNER_TARGET_S:.0f} s. Missed: {', '.join(missed) or 'none'}")
    if args.sync:
        print("Rewrote: " + (", ".join(sync(times)) or "nothing (all agree)"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
