"""Build the hosted-runtime venv for `make test-colab` and `make test-kaggle`: Python 3.12, Colab's older versions.

    python3 tools/colab_env.py [--python python3.12] [--venv .venv-colab]

The venv gets `requirements-colab.txt` (TensorFlow 2.20, Keras 3.13, ...) and a fake `google.colab`:
an empty `google/colab/__init__.py` in site-packages, without a `google/__init__.py` (so
`google.protobuf` still imports), loaded at start-up by a `.pth` line as Colab's kernel loads it,
unless ``COURSE_FAKE_RUNTIME=kaggle``: then nothing Colab's is loaded and `make test-kaggle` sets
Kaggle's ``KAGGLE_KERNEL_RUN_TYPE`` instead (Kaggle's images ship a similar TensorFlow and Keras 3).
The course's `helpers` are deliberately not installed: each notebook's first cell must fetch them.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMP = ".installed-colab"
STAMP_VERSION = "# fake runtimes: colab, or kaggle with COURSE_FAKE_RUNTIME=kaggle\n"
PTH_LINE = ('import os, importlib; os.environ.get("COURSE_FAKE_RUNTIME", "colab") == "colab" '
            'and importlib.import_module("google.colab")\n')


def site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _version(interpreter: str) -> str | None:
    out = subprocess.run([interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def find_python(python: str) -> str:
    """`python` if it runs as Python 3.12; else a pyenv or system python3.12 (a pyenv shim may not run)."""
    candidates = [shutil.which(python) or python]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))
    candidates += ["/usr/bin/python3.12", "/usr/local/bin/python3.12"]
    for candidate in candidates:
        if Path(candidate).exists() and _version(candidate) == "3.12":
            return candidate
    raise SystemExit(f"No Python 3.12 found (tried {python}, pyenv's and the system's): make test-colab needs the "
                     "Python version Colab runs. Install it, or pass COLAB_PYTHON=/path/to/python3.12.")


def build(python: str, venv: Path) -> Path:
    interpreter = find_python(python)
    venv = venv.resolve()
    venv_python = venv / "bin" / "python"
    requirements = ROOT / "requirements-colab.txt"
    stamp = venv / STAMP
    if stamp.exists() and stamp.read_text() == STAMP_VERSION + requirements.read_text():
        return venv_python
    if not venv_python.exists():
        subprocess.run([interpreter, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv_python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "-r", str(requirements)], check=True)
    fake = site_packages(venv_python) / "google" / "colab"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text('"""A stand-in for Colab\'s google.colab module (make test-colab)."""\n')
    (fake.parent.parent / "course_fake_colab.pth").write_text(PTH_LINE)
    probe = ("import sys, google.protobuf; assert 'google.colab' in sys.modules; "
             "import importlib.util as u; assert u.find_spec('helpers') is None")
    check = subprocess.run([str(venv_python), "-c", probe],
                           capture_output=True, text=True, cwd=venv)  # not the course's folder: helpers is there
    if check.returncode:
        raise SystemExit(f"the Colab-like venv is not right: {check.stderr.strip().splitlines()[-1]}")
    stamp.write_text(STAMP_VERSION + requirements.read_text())
    return venv_python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="python3.12")
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv-colab")
    args = parser.parse_args(argv)
    print(build(args.python, args.venv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
