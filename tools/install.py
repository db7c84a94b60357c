"""Install the course's pinned dependencies into the current Python, with the right TensorFlow.

`requirements.txt` is the one place versions live. Its `tensorflow==X` line names the version;
this script turns it into the flavour that fits the machine:

* ``cpu``: ``tensorflow-cpu==X`` (Linux or Windows without an NVIDIA driver). Half the size of the
  full wheel and silent at import on a CPU machine.
* ``cuda``: ``tensorflow[and-cuda]==X`` (Linux with an NVIDIA driver: ``nvidia-smi`` on PATH,
  ``/proc/driver/nvidia``, or WSL2's ``/usr/lib/wsl/lib/libcuda.so.1``). Pulls CUDA and cuDNN from PyPI.
* ``plain``: ``tensorflow==X`` (macOS, where there is no ``-cpu`` wheel).

Set ``COURSE_TF_FLAVOUR=cpu|cuda|plain`` to choose by hand. Usage (the Makefile calls it)::

    .venv/bin/python tools/install.py            # runtime dependencies + helpers (editable)
    .venv/bin/python tools/install.py --test     # also requirements-test.txt
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAVOURS = ("cpu", "cuda", "plain")
TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tensorflow-macos")


def detect_flavour(env: dict[str, str] | None = None, system: str | None = None) -> str:
    """Return the TensorFlow flavour for this machine.

    Example:
        >>> detect_flavour({"COURSE_TF_FLAVOUR": "cpu"})
        'cpu'
    """
    env = os.environ if env is None else env
    chosen = env.get("COURSE_TF_FLAVOUR", "").strip().lower()
    if chosen:
        if chosen not in FLAVOURS:
            raise ValueError(f"COURSE_TF_FLAVOUR={chosen!r}: allowed values are {', '.join(FLAVOURS)}")
        return chosen
    system = system or platform.system()
    if system == "Darwin":
        return "plain"
    if system == "Linux" and nvidia_driver_present():
        return "cuda"
    return "cpu"


# Where a Linux machine shows an NVIDIA driver. WSL2 has no /proc/driver/nvidia and its nvidia-smi is
# often not on PATH: the Windows driver exposes CUDA inside WSL2 through /usr/lib/wsl/lib.
DRIVER_MARKERS = ("/proc/driver/nvidia", "/usr/lib/wsl/lib/libcuda.so.1", "/usr/lib/wsl/lib/nvidia-smi")


def nvidia_driver_present(markers: tuple[str, ...] = DRIVER_MARKERS) -> bool:
    """True when an NVIDIA driver is visible: `nvidia-smi` on PATH or one of `markers` exists.

    Example:
        >>> nvidia_driver_present(markers=()) in (True, False)
        True
    """
    return bool(shutil.which("nvidia-smi")) or any(Path(m).exists() for m in markers)


def tensorflow_requirement(requirements: str, flavour: str) -> tuple[str, str]:
    """Split requirements text into (TensorFlow requirement for `flavour`, the other lines).

    Example:
        >>> tensorflow_requirement("tensorflow==2.21.0\\nnumpy==2\\n", "cpu")
        ('tensorflow-cpu==2.21.0', 'numpy==2\\n')
    """
    match = re.search(r"^tensorflow==(\S+)\s*$", requirements, flags=re.M)
    if not match:
        raise ValueError("requirements.txt needs a line 'tensorflow==<version>'")
    version = match.group(1)
    name = {"cpu": "tensorflow-cpu", "cuda": "tensorflow[and-cuda]", "plain": "tensorflow"}[flavour]
    rest = requirements[: match.start()] + requirements[match.end() + 1 :]
    return f"{name}=={version}", rest


def installed_distributions() -> set[str]:
    """Names of the TensorFlow distributions installed in this Python."""
    from importlib import metadata

    found = set()
    for dist in TF_DISTRIBUTIONS:
        try:
            metadata.version(dist)
            found.add(dist)
        except metadata.PackageNotFoundError:
            pass
    return found


def pip(*args: str) -> None:
    """Run pip in this interpreter, failing loudly."""
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    print("+", " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", action="store_true", help="also install requirements-test.txt")
    args = parser.parse_args(argv)

    flavour = detect_flavour()
    tf_req, rest = tensorflow_requirement((ROOT / "requirements.txt").read_text(), flavour)
    wanted = tf_req.split("[")[0].split("==")[0]
    print(f"TensorFlow flavour for this machine: {flavour} -> {tf_req}", flush=True)
    # The flavours share one import package; two of them installed at once corrupt each other.
    stale = sorted(installed_distributions() - {wanted})
    if stale:
        pip("uninstall", "-y", *stale)
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(f"{tf_req}\n{rest}")
        extra = ["-r", str(ROOT / "requirements-test.txt")] if args.test else []
        pip("install", "-q", "-r", str(req), *extra)
    pip("install", "-q", "--no-deps", "-e", str(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
