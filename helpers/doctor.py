"""`make doctor`: the readiness table of notebook 00, in a terminal.

For instructors checking a room of machines: prints what this machine has, what the course needs,
and what to do about anything missing. Exits 0 when every required check passes, 1 otherwise.
"""

from __future__ import annotations

import sys


def main() -> int:
    from helpers import data, env

    try:
        tf = env.tensorflow()
    except ImportError as exc:
        print(f"TensorFlow cannot be imported ({exc}). Run `make install` (or `make lab`) first.")
        return 1
    report = env.report(tf)
    checks = env.readiness(report, data_ok=data.verify_all(), pinned_tf=env.pinned_tensorflow_version())
    print(f"Machine: {report.platform}, Python {report.python}")
    print(env.readiness_table(checks))
    ready = env.is_ready(checks)
    mode = "with a GPU" if report.gpu_count else "on the CPU (smaller sizes)"
    print(f"\nVerdict: {'READY' if ready else 'NOT READY'}" + (f", the course runs {mode}." if ready else "."))
    return 0 if ready else 1


if __name__ == "__main__":
    sys.exit(main())
