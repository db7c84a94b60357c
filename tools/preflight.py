"""Checks that need nothing installed, run by `make doctor` before it installs anything.

An instructor checking a room of machines learns here, in one second, about the failures that would
otherwise end in a pip traceback: a Python that is too old, no venv module, too little disk space.
Exit 0 when the machine can install the course, 1 otherwise (with what to do).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NEED_FREE_GB = 3.0  # .venv measured at 1.9 GB with the CPU flavour, plus pip's download cache


def problems(version: tuple[int, int] = sys.version_info[:2], free_bytes: int | None = None) -> list[str]:
    """What stops the course from installing here ([] when nothing does).

    Example:
        >>> problems((3, 8), free_bytes=10**12)
        ['Python 3.8 is too old: install Python 3.10 or newer (3.11 is tested).']
    """
    found = []
    if version < (3, 10):
        found.append(f"Python {version[0]}.{version[1]} is too old: install Python 3.10 or newer (3.11 is tested).")
    try:
        import ensurepip  # noqa: F401
        import venv  # noqa: F401
    except ImportError:
        found.append("Python's venv/ensurepip modules are missing: on Debian/Ubuntu, apt-get install python3-venv.")
    free = shutil.disk_usage(ROOT).free if free_bytes is None else free_bytes
    if free < NEED_FREE_GB * 1e9:
        found.append(f"Only {free / 1e9:.1f} GB free on this disk: the course needs about {NEED_FREE_GB:.0f} GB.")
    return found


def main() -> int:
    found = problems()
    for p in found:
        print(f"NOT READY: {p}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
