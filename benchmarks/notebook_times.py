"""Speed targets of the course: each notebook's learner run within 120 s on a 2-core CPU.

Runs every notebook under papermill at smoke and at learner sizes, one at a time (so runs do not
compete for the cores), prints a table and exits 1 if a learner run misses its target::

    .venv/bin/python benchmarks/notebook_times.py [00_environment_check.ipynb ...]

It needs the test tools (papermill): run `make install-test` (or `make test`) once first.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import nbrun  # noqa: E402

try:
    import papermill  # noqa: F401
except ImportError:
    print("papermill is missing: this benchmark needs the test tools. Run `make install-test` first.")
    sys.exit(2)

LEARNER_TARGET_S = 120.0  # CONTRIBUTING.md: a learner run takes at most 120 s on 2 CPU cores


def time_notebooks(names: list[str]) -> list[tuple[str, float, float]]:
    """(name, smoke seconds, learner seconds) of each notebook under papermill, one at a time."""
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            smoke = nbrun.run_notebook(name, Path(tmp) / "smoke", smoke=True).seconds
            learner = nbrun.run_notebook(name, Path(tmp) / "learner", smoke=False, timeout=1800).seconds
        rows.append((name, smoke, learner))
        print(f"{name:<40} smoke {smoke:6.1f} s   learner {learner:6.1f} s", flush=True)
    return rows


def main(argv: list[str]) -> int:
    names = argv or nbrun.present()
    unknown = sorted(set(names) - set(nbrun.present()))
    if unknown:
        print(f"Unknown notebook(s) {unknown}: use names from {nbrun.present()}")
        return 2
    missed = [name for name, _, learner in time_notebooks(names) if learner > LEARNER_TARGET_S]
    print(f"\nTarget: learner run <= {LEARNER_TARGET_S:.0f} s (measured on this machine's CPU).")
    print("Missed: " + (", ".join(missed) if missed else "none"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
