"""Build the hosted-runtime venvs for `make test-colab` and `make test-kaggle`, each as its runtime is today.

    python3 tools/colab_env.py --runtime colab  [--python python3.13] [--venv .venv-colab]
    python3 tools/colab_env.py --runtime kaggle [--python python3.12] [--venv .venv-kaggle]

**Colab** (since 2026-08-25, googlecolab/colabtools#6081): Python 3.13 with `requirements-colab.txt`
(TensorFlow 2.20.0, Keras 3.13.2, numpy 2.1.3, IPython 7.34.0, ipykernel 6.17.1, ...). Its kernel is
started as Colab starts it: the kernelspec runs ``python3 -m colab_kernel_launcher``, which imports
``google.colab`` and launches a kernel class whose shell, ``google.colab._shell.Shell``, is a *subclass*
of ipykernel's ``ZMQInteractiveShell`` (Colab's ``_shell.py`` defines ``class Shell(zmqshell.ZMQInteractiveShell)``
and its ``_kernel.py`` subclasses ipykernel's kernel). So ``google.colab`` is imported before the first cell,
by the kernel only, as on Colab; a child process the notebook starts does not import it.

**Kaggle** (Kaggle/docker-python: Colab's image of 2026-05 plus JupyterLab and papermill): Python 3.12 with
`requirements-kaggle.txt` (TensorFlow 2.20.0, Keras 3.13.2, numpy 2.0.2, ipykernel 6.17.1, ...), ipykernel's
own launcher as JupyterLab starts it, no ``google.colab``; `make test-kaggle` sets ``KAGGLE_KERNEL_RUN_TYPE``.

Each venv gets a ``python3`` kernelspec of its own (``<venv>/share/jupyter/kernels/python3``). The course's
`helpers` are deliberately not installed: each notebook's first cell must fetch them.

Where the Python comes from (`find_python`): the interpreter named by ``--python`` when it runs as the right
version, then pyenv's, the system's and ``/usr/local``'s, then one this tool built before under
``~/.cache/gpu-dl-course/``. Debian 12's python3 is 3.11 and neither PyPI nor Debian 12 ships a 3.13
interpreter, so on such a machine Colab's Python is built from CPython's source as Debian packages it for
Debian 13 (`python3.13_3.13.5.orig.tar.xz` from Debian's archive, checked against its sha256), with the
compiler and libraries of Debian 12's own packages (installed with apt-get when missing and we are root).
It takes a few minutes on 2 cores, once per machine. Without a compiler and no way to install one, the
tool stops with one sentence saying what to install.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMP = ".installed-hosted"
# What each runtime is: its Python version, its pins, and how its kernel starts.
RUNTIMES = {
    "colab": {"python": "3.13", "requirements": "requirements-colab.txt", "venv": ".venv-colab"},
    "kaggle": {"python": "3.12", "requirements": "requirements-kaggle.txt", "venv": ".venv-kaggle"},
}
# CPython 3.13 as Debian 13 ("trixie") packages it: the upstream release tarball, unchanged, in Debian's archive
# (dists/trixie/main/source/Sources lists it with this sha256).
CPYTHON_SOURCE = {
    "version": "3.13.5",
    "url": "http://deb.debian.org/debian/pool/main/p/python3.13/python3.13_3.13.5.orig.tar.xz",
    "sha256": "93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640",
}
# Debian 12 packages CPython's build needs for the modules the course uses (ssl for pip, sqlite3, lzma, ctypes ...).
BUILD_PACKAGES = ("gcc", "make", "libssl-dev", "zlib1g-dev", "libffi-dev", "libsqlite3-dev", "libbz2-dev",
                  "liblzma-dev", "libreadline-dev", "uuid-dev", "libncurses-dev", "xz-utils")
CACHE = Path(os.environ.get("COURSE_PYTHON_CACHE", Path.home() / ".cache" / "gpu-dl-course"))

# Colab's kernel, reproduced: google/colab/_shell.py, _kernel.py and the launcher its kernelspec runs.
FAKE_COLAB = {
    "google/colab/__init__.py": '"""A stand-in for Colab\'s google.colab package (make test-colab)."""\n',
    "google/colab/_shell.py": (
        '"""As Colab\'s: the kernel\'s shell is a subclass of ipykernel\'s ZMQInteractiveShell."""\n'
        "from ipykernel import zmqshell\n\n\n"
        "class Shell(zmqshell.ZMQInteractiveShell):\n"
        '    """Colab\'s shell class (google.colab._shell.Shell)."""\n'),
    "google/colab/_kernel.py": (
        '"""As Colab\'s: an IPython kernel whose shell is google.colab._shell.Shell."""\n'
        "from ipykernel import ipkernel\n"
        "from traitlets import Type\n\n"
        "from google.colab import _shell\n\n\n"
        "class Kernel(ipkernel.IPythonKernel):\n"
        "    shell_class = Type(_shell.Shell)\n"),
    "colab_kernel_launcher.py": (
        '"""The module Colab\'s kernelspec runs (python3 -m colab_kernel_launcher -f {connection_file})."""\n'
        "from ipykernel import kernelapp as app\n\n"
        "from google.colab import _kernel\n\n"
        'if __name__ == "__main__":\n'
        "    app.launch_new_instance(kernel_class=_kernel.Kernel)\n"),
}


def site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _version(interpreter: str) -> str | None:
    try:
        out = subprocess.run([interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def candidates(python: str, version: str, home: Path | None = None, cache: Path | None = None) -> list[str]:
    """Interpreters to try for Python `version`, in order: `python`, pyenv's, the system's, this tool's build.

    Example:
        >>> candidates("python3.13", "3.13", Path("/h"), Path("/c"))[-1]
        '/c/python-3.13/bin/python3.13'
    """
    home = Path.home() if home is None else home
    cache = CACHE if cache is None else cache
    found = [shutil.which(python) or python]
    found += sorted((str(p) for p in home.glob(f".pyenv/versions/{version}*/bin/python{version}")), reverse=True)
    found += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}",
              str(cache / f"python-{version}" / "bin" / f"python{version}")]
    return found


def find_python(python: str, version: str) -> str | None:
    """The first of `candidates` that runs as Python `version`, or None."""
    for candidate in candidates(python, version):
        if Path(candidate).exists() and _version(candidate) == version:
            return candidate
    return None


def _missing_build_packages() -> list[str]:
    if not shutil.which("dpkg-query"):
        return []
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *BUILD_PACKAGES],
                         capture_output=True, text=True)
    installed = {line.split()[0] for line in out.stdout.splitlines() if line.endswith(" installed")}
    return [p for p in BUILD_PACKAGES if p not in installed]


def build_cpython(version: str) -> str:
    """Build CPython `version` from Debian's source archive into the cache; return its interpreter's path."""
    if version != CPYTHON_SOURCE["version"].rsplit(".", 1)[0]:
        raise SystemExit(f"No Python {version} found, and this tool builds only "
                         f"{CPYTHON_SOURCE['version']}: install Python {version}, or pass its path with --python.")
    missing = _missing_build_packages()
    if missing and os.geteuid() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        missing = _missing_build_packages()
    if missing or not shutil.which("gcc") or not shutil.which("make"):
        raise SystemExit(f"No Python {version} found, and building it needs a C compiler, make and these Debian "
                         f"packages: {' '.join(missing or BUILD_PACKAGES)} (as root: apt-get install them), or "
                         f"pass a Python {version} with --python "
                         f"(make test-colab COLAB_PYTHON=/path/to/python{version}).")
    prefix = CACHE / f"python-{version}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE, prefix="build-") as work:
        tarball = Path(work) / "source.tar.xz"
        print(f"Building Python {CPYTHON_SOURCE['version']} from Debian's source archive into {prefix} "
              "(once per machine: about 8 minutes on 2 cores)", file=sys.stderr)
        with urllib.request.urlopen(CPYTHON_SOURCE["url"], timeout=120) as response, tarball.open("wb") as out:
            shutil.copyfileobj(response, out)
        digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
        if digest != CPYTHON_SOURCE["sha256"]:
            raise SystemExit(f"{CPYTHON_SOURCE['url']} has sha256 {digest}, not {CPYTHON_SOURCE['sha256']}: refused")
        with tarfile.open(tarball) as archive:
            archive.extractall(work, filter="data")
        source = Path(work) / f"Python-{CPYTHON_SOURCE['version']}"
        staged = Path(work) / "prefix"  # installed here first, moved into place whole: never a half-built cache
        jobs = str(os.cpu_count() or 1)
        log = Path(work) / "build.log"  # the compiler's warnings: shown only when a step fails
        for step in (["./configure", f"--prefix={prefix}", "--with-ensurepip=install", "-q"],
                     ["make", f"-j{jobs}", "-s"], ["make", "-s", "altinstall", f"DESTDIR={staged}"]):
            with log.open("a") as out:
                done = subprocess.run(step, stdout=subprocess.DEVNULL, stderr=out, cwd=source)
            if done.returncode:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
                raise SystemExit(f"building Python {CPYTHON_SOURCE['version']} failed at `{' '.join(step)}` "
                                 f"(exit {done.returncode}); its last lines:\n{tail}")
        shutil.rmtree(prefix, ignore_errors=True)
        shutil.move(str(staged / prefix.relative_to(prefix.anchor)), str(prefix))
    interpreter = prefix / "bin" / f"python{version}"
    if _version(str(interpreter)) != version:
        raise SystemExit(f"the Python built into {prefix} does not run: remove that folder and try again")
    return str(interpreter)


def install_fake_colab(venv_python: Path) -> None:
    """Colab's google.colab package (shell, kernel, launcher) and a kernelspec that starts Colab's way."""
    site = site_packages(venv_python)
    for relative, text in FAKE_COLAB.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    # Not a google/__init__.py: google.protobuf stays importable as a namespace package.


def install_kernelspec(venv_python: Path, runtime: str) -> Path:
    """The venv's own `python3` kernelspec: Colab's launcher on Colab, ipykernel's on Kaggle (as JupyterLab)."""
    module = "colab_kernel_launcher" if runtime == "colab" else "ipykernel_launcher"
    spec = venv_python.parent.parent / "share" / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(venv_python), "-m", module, "-f", "{connection_file}"],
        "display_name": f"Python 3 ({runtime}-like)", "language": "python"}, indent=1) + "\n")
    return spec


def build(runtime: str, python: str | None = None, venv: Path | None = None) -> Path:
    """Create or update `runtime`'s venv; return its python. A no-op when it is up to date."""
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime={runtime!r}: use one of {sorted(RUNTIMES)}")
    spec = RUNTIMES[runtime]
    version = spec["python"]
    venv = (venv or ROOT / spec["venv"]).resolve()
    venv_python = venv / "bin" / "python"
    requirements = (ROOT / spec["requirements"]).read_text()
    recipe = f"# {runtime}: Python {version}\n" + requirements
    recipe += "".join(FAKE_COLAB.values()) if runtime == "colab" else ""
    stamp = venv / STAMP
    if stamp.exists() and stamp.read_text() == recipe and _version(str(venv_python)) == version:
        return venv_python
    if venv.exists() and _version(str(venv_python)) != version:
        shutil.rmtree(venv)  # an older venv on another Python (this tool used to build Colab's on 3.12)
    if not venv_python.exists():
        interpreter = find_python(python or f"python{version}", version) or build_cpython(version)
        subprocess.run([interpreter, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv_python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "-r", str(ROOT / spec["requirements"])], check=True)
    if runtime == "colab":
        install_fake_colab(venv_python)
    install_kernelspec(venv_python, runtime)
    probe = ("import sys, google.protobuf, importlib.util as u; assert 'google.colab' not in sys.modules; "
             f"assert u.find_spec('google.colab') is {'not None' if runtime == 'colab' else 'None'}; "
             "assert u.find_spec('helpers') is None")
    check = subprocess.run([str(venv_python), "-c", probe],
                           capture_output=True, text=True, cwd=venv)  # not the course's folder: helpers is there
    if check.returncode:
        raise SystemExit(f"the {runtime}-like venv is not right: {check.stderr.strip().splitlines()[-1]}")
    stamp.write_text(recipe)
    return venv_python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", choices=sorted(RUNTIMES), default="colab")
    parser.add_argument("--python", default=None, help="an interpreter of the runtime's Python version")
    parser.add_argument("--venv", type=Path, default=None)
    args = parser.parse_args(argv)
    print(build(args.runtime, args.python or None, args.venv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
