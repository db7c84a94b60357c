"""Where the course lives, and the cell that fetches it on Google Colab and Kaggle.

Used by every notebook. Colab and Kaggle open a notebook alone, without the repository around it.
The collapsed cell after the parameters (:data:`BOOTSTRAP_CELL`) clones the course once per runtime
and puts it on ``sys.path``, so ``import helpers`` and ``data/`` work. It installs nothing: a notebook
that needs a package these runtimes lack asks for it when it needs it, through :func:`ensure`
(NVML readings in 00, 02 and 09, the profiler reader in 04, the manifest validator in 08), and
never TensorFlow: the runtime's own stays. When the clone fails, the learner reads one sentence
saying what to do, not a traceback (on Kaggle: the notebook's Internet setting, off by default).
Elsewhere (``make lab``, tests) the cell does nothing.

The repository is named in one place, :data:`REPO`; the hygiene tests check that every notebook's
bootstrap cell and badges agree with it. ``COURSE_REPO_URL`` overrides the clone URL (a fork, a
mirror, or a local clone in tests) and ``COURSE_DIR`` the folder it is cloned into.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPO = "gpu-dl-notebooks/gpu-deep-learning-notebooks"
BRANCH = "main"
REPO_URL = f"https://github.com/{REPO}.git"

BOOTSTRAP_TITLE = ("#@title Colab and Kaggle only: fetch the course's helpers and data "
                   "(elsewhere this cell does nothing)")

# Kaggle sets KAGGLE_KERNEL_RUN_TYPE in every kernel; /kaggle/temp is its scratch space (not saved with
# the notebook's output, unlike /kaggle/working).
BOOTSTRAP_CELL = f'''\
{BOOTSTRAP_TITLE}
import os
import sys

on_kaggle = "KAGGLE_KERNEL_RUN_TYPE" in os.environ
if "google.colab" in sys.modules or on_kaggle:
    import subprocess

    home = "/kaggle/temp" if on_kaggle else "/content"
    course = os.environ.get("COURSE_DIR") or f"{{home}}/gpu-deep-learning-notebooks"
    if not os.path.isdir(course):
        url = os.environ.get("COURSE_REPO_URL", "{REPO_URL}")
        clone = subprocess.run(["git", "clone", "--depth=1", "--quiet", url, course], capture_output=True, text=True)
        if clone.returncode:
            class CourseNotFetched(Exception):
                def _render_traceback_(self):  # IPython shows this one line instead of a traceback
                    return [str(self)]
            todo = ("turn on Internet in the notebook's Settings (Kaggle leaves it off; it needs a verified account)"
                    if on_kaggle else "check that this runtime has internet access")
            raise CourseNotFetched(f"Could not fetch the course from {{url}}: {{todo}}, or set COURSE_REPO_URL to "
                                   "a copy you can reach, then run this cell again.")
    sys.path.insert(0, course)'''

# Colab and JupyterLab show the cell collapsed: Colab through the #@title form, JupyterLab through this.
BOOTSTRAP_METADATA = {"cellView": "form", "jupyter": {"source_hidden": True}}

# The packages a hosted runtime may lack, by the module a notebook imports: what pip installs for it.
PACKAGES = {"pynvml": "nvidia-ml-py", "xprof": "xprof", "kubernetes_validate": "kubernetes-validate"}


def hosted(environ: Mapping[str, str] | None = None, modules: Mapping[str, object] | None = None) -> str | None:
    """``"colab"`` or ``"kaggle"`` when this kernel runs on one of those hosted runtimes, else None.

    Colab's kernel has imported ``google.colab``; Kaggle sets ``KAGGLE_KERNEL_RUN_TYPE`` in every kernel.

    Example:
        >>> hosted({"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}, {})
        'kaggle'
        >>> hosted({}, {})
    """
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    if "google.colab" in modules:
        return "colab"
    if "KAGGLE_KERNEL_RUN_TYPE" in environ:
        return "kaggle"
    return None


def _pins(requirements: Path) -> dict[str, str]:
    pins = {}
    if requirements.exists():
        for line in requirements.read_text().splitlines():
            name, _, version = line.partition("==")
            if version:
                pins[name.strip()] = version.split("#")[0].strip()
    return pins


def ensure(module: str, requirements: Path = ROOT / "requirements.txt", runtime: str | None = None) -> bool:
    """Make `module` importable; on Colab or Kaggle install its pinned package first if it is missing.

    Elsewhere nothing is installed (``make lab`` installed everything). pip's output is captured; a
    failed install prints one plain sentence and returns False, as a missing package does.

    Args:
        module: one of :data:`PACKAGES` (``"pynvml"``, ``"xprof"``, ``"kubernetes_validate"``).
        requirements: where the pinned versions are read.
        runtime: ``"colab"``, ``"kaggle"`` or None; default :func:`hosted`.

    Returns:
        True when the module can be imported now.

    Example:
        >>> ensure("pynvml", runtime=None) in (True, False)  # off Colab and Kaggle: only looks
        True
    """
    if module not in PACKAGES:
        raise ValueError(f"module={module!r}: use one of {', '.join(PACKAGES)}.")
    if importlib.util.find_spec(module) is not None:
        return True
    runtime = hosted() if runtime is None else runtime
    if runtime not in ("colab", "kaggle"):
        return False
    package = PACKAGES[module]
    pin = _pins(requirements).get(package)
    spec = f"{package}=={pin}" if pin else package
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", spec],
                          capture_output=True, text=True)
    importlib.invalidate_caches()
    if done.returncode or importlib.util.find_spec(module) is None:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"Could not install {spec} on {runtime.capitalize()} ({last}); the cells that need {module} say "
              "what they skip. On Kaggle, turn on Internet in the notebook's Settings.")
        return False
    return True


def colab_url(notebook: str) -> str:
    """The 'Open in Colab' address of a notebook file name.

    Example:
        >>> colab_url("00_environment_check.ipynb").endswith("/notebooks/00_environment_check.ipynb")
        True
    """
    if not notebook.endswith(".ipynb") or "/" in notebook:
        raise ValueError(f"notebook={notebook!r}: use a file name such as '00_environment_check.ipynb'.")
    return f"https://colab.research.google.com/github/{REPO}/blob/{BRANCH}/notebooks/{notebook}"


def source_url(notebook: str) -> str:
    """The address of a notebook's source file in the repository."""
    colab_url(notebook)  # the same check of the name
    return f"https://github.com/{REPO}/blob/{BRANCH}/notebooks/{notebook}"


def kaggle_url(notebook: str) -> str:
    """The 'Open in Kaggle' address of a notebook file name (Kaggle imports it from the repository).

    Example:
        >>> kaggle_url("00_environment_check.ipynb").startswith("https://kaggle.com/kernels/welcome?src=")
        True
    """
    return f"https://kaggle.com/kernels/welcome?src={source_url(notebook)}"


def badges(notebook: str) -> str:
    """The Markdown badge line for the top of a notebook: Colab, Kaggle, the source file."""
    return (f"[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab_url(notebook)}) "
            f"[![Open in Kaggle](https://kaggle.com/static/images/open-in-kaggle.svg)]({kaggle_url(notebook)}) "
            f"[![View source](https://img.shields.io/badge/view-source-blue)]({source_url(notebook)})")
