"""How long the test suites take from a fresh clone: `make test`, and the CI script (`.ci/run`).

    .venv/bin/python benchmarks/suites.py [--skip-ci]      (or `make bench`, which calls measure())

Each suite runs in a new `git clone` of this repository's HEAD (no .venv: it installs what it needs from
pip's cache, as CI does), one after the other, on an otherwise quiet machine. Written to
benchmarks/suites.json and to the "Test suites" section of benchmarks/RESULTS.md. The targets (make test
within 6 minutes, the CI script within 12, on 2 cores) are reported as met or missed, never asserted by a test.

Each suite's CPU work is measured too: the core-seconds the whole machine was busy while it ran (/proc/stat, so
every process counts: kernels, their children, Chromium, SLURM's daemons). Divided by the cores it is the least
wall time the same work can take on this machine, however it is spread over processes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITES_JSON = ROOT / "benchmarks" / "suites.json"
RESULTS_MD = ROOT / "benchmarks" / "RESULTS.md"
TARGETS_S = {"make test": 6 * 60, "CI script (.ci/run)": 12 * 60}
HEADING = "## Test suites from a fresh clone"


def _counts(text: str) -> dict[str, int]:
    """pytest's summary counts summed over every session in `text` (passed, skipped, failed, ...).

    Example:
        >>> _counts("== 3 passed, 1 skipped in 2.0s ==\\n== 2 passed in 1.0s ==")
        {'passed': 5, 'skipped': 1}
    """
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if re.search(r"\d+ (passed|failed|error)", line) and " in " in line:
            for number, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed)", line):
                counts[word] = counts.get(word, 0) + int(number)
    return counts


def busy_core_seconds(stat: str | None = None) -> float:
    """Core-seconds the machine has been busy since boot: user, nice, system, irq and softirq time in /proc/stat.

    Idle, iowait and steal (time the hypervisor gave to another machine) are not work done here.

    Example:
        >>> round(busy_core_seconds("cpu  100 0 50 900 7 0 50 3 0 0") * os.sysconf("SC_CLK_TCK"))  # jiffies
        200
    """
    if stat is None:
        stat = Path("/proc/stat").read_text()
    fields = [int(v) for v in stat.splitlines()[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _fresh_clone_run(command: list[str]) -> tuple[float, float, str, int]:
    """Seconds, busy core-seconds of the machine, output and exit code of `command` in a new clone of HEAD."""
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "c"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        start, cpu = time.perf_counter(), busy_core_seconds()
        done = subprocess.run(command, cwd=clone, capture_output=True, text=True)
        seconds, cpu = time.perf_counter() - start, busy_core_seconds() - cpu
    text = done.stdout + done.stderr
    if done.returncode:  # the clone is gone: keep what the failing run printed
        log = ROOT / "build" / f"suites-{'-'.join(command).replace('/', '_')}.log"
        log.parent.mkdir(exist_ok=True)
        log.write_text(text)
        print(f"{' '.join(command)} failed (exit {done.returncode}): its output is in {log}", file=sys.stderr)
    return seconds, cpu, text, done.returncode


def measure(ci: bool = True) -> dict:
    """Run `make test`, then (if `ci`) the CI script, each from a fresh clone; return the figures."""
    from helpers import cpu

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    out: dict = {"measured": time.strftime("%Y-%m-%d", time.gmtime()), "commit": commit,
                 "machine": f"{cpu.model_name()}, {os.cpu_count()} logical cores", "cores": os.cpu_count(),
                 "suites": {}}
    seconds, core_s, text, code = _fresh_clone_run(["make", "test"])
    out["suites"]["make test"] = {"seconds": round(seconds, 1), "core_seconds": round(core_s), "ok": code == 0,
                                  "counts": _counts(text)}
    if ci:
        seconds, core_s, text, code = _fresh_clone_run(["bash", ".ci/run"])
        targets = {f"make {name}": int(s) for name, s in re.findall(r"^make (\S+) took (\d+) s$", text, re.M)}
        target_cpu = {f"make {name}": int(s) for name, s in
                      re.findall(r"^make (\S+) ran while the machine used (\d+) core-s of CPU$", text, re.M)}
        out["suites"]["CI script (.ci/run)"] = {"seconds": round(seconds, 1), "core_seconds": round(core_s),
                                                "ok": code == 0, "counts": _counts(text), "targets_s": targets,
                                                "targets_core_s": target_cpu}
    return out


def section(data: dict) -> list[str]:
    """The RESULTS.md lines of the suites' figures, each against its target, and its CPU work against the cores."""
    cores = data.get("cores") or 2
    lines = [HEADING, "", f"Measured {data['measured']} at commit {data['commit']} on {data['machine']}: each suite in "
             "a new `git clone` (pip's cache warm, no .venv yet), one at a time, nothing else running. CPU work: the "
             "core-seconds the whole machine was busy while the suite ran (/proc/stat: every process counts). The rule "
             f"for the last column: a suite cannot take less wall time than its CPU work divided by the {cores} cores, "
             "however its work is spread; a target below that floor needs less work, not more parallelism.", "",
             "| suite | wall time | target | tests | result | CPU work | floor on this machine |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, suite in data["suites"].items():
        target = TARGETS_S.get(name)
        verdict = ("met" if suite["seconds"] <= target else "MISSED") if target else ""
        counts = ", ".join(f"{v} {k}" for k, v in suite["counts"].items()) or "n/a"
        work, floor = "n/a", "n/a"
        if suite.get("core_seconds") is not None:
            least, busy = suite["core_seconds"] / cores, suite["core_seconds"] / suite["seconds"] / cores
            work = f"{suite['core_seconds']} core-s ({busy:.0%} of the cores)"
            floor = f"{least / 60:.1f} min ({least:.0f} s)" + (
                f", {'above' if least > target else 'below'} the target" if target else "")
        lines.append(f"| {name} | {suite['seconds'] / 60:.1f} min ({suite['seconds']:.0f} s) | "
                     f"{target // 60 if target else '-'} min | {counts} | "
                     f"{'passed' if suite['ok'] else 'FAILED'}, target {verdict} | {work} | {floor} |")
    for name, suite in data["suites"].items():
        if suite.get("targets_s"):
            cpu = suite.get("targets_core_s", {})
            parts = ", ".join(f"`{t}` {s} s" + (f" ({cpu[t]} core-s)" if t in cpu else "")
                              for t, s in suite["targets_s"].items())
            lines += ["", f"{name}, by target (core-s: the whole machine while the target ran, so a target run "
                          f"beside another shares its figure): {parts}."]
    return lines + [""]


def splice(results_md: str, lines: list[str]) -> str:
    """`results_md` with its suites section replaced by `lines` (appended if it has none).

    Example:
        >>> old = "# B\\n\\n" + HEADING + "\\n\\nold\\n\\n## Next\\nx\\n"
        >>> splice(old, [HEADING, "new", ""]) == "# B\\n\\n" + HEADING + "\\nnew\\n\\n## Next\\nx\\n"
        True
    """
    text = "\n".join(lines)
    start = results_md.find(HEADING)
    if start < 0:
        return results_md.rstrip("\n") + "\n\n" + text + "\n"
    end = results_md.find("\n## ", start + len(HEADING))
    return results_md[:start] + text + (results_md[end:] if end >= 0 else "\n")


def record(data: dict) -> bool:
    """Write `data` to suites.json if every suite passed; else say so and keep the last figures (return False).

    A run cut short by a failing test is not the suite's time: a CI script stopped after `make test` would read
    as far inside its target.
    """
    if not all(s["ok"] for s in data["suites"].values()):
        print(f"A suite failed: {SUITES_JSON.name} and {RESULTS_MD.name} keep their last figures.", file=sys.stderr)
        return False
    SUITES_JSON.write_text(json.dumps(data, indent=1) + "\n")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-ci", action="store_true", help="time `make test` only")
    args = parser.parse_args(argv)
    data = measure(ci=not args.skip_ci)
    print("\n".join(section(data)))
    if not record(data):
        return 1
    RESULTS_MD.write_text(splice(RESULTS_MD.read_text(), section(data)))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
