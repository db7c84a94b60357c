"""Where the course lives, and the cell that fetches it on Google Colab.

Used by every notebook. Colab opens a notebook alone, without the repository around it. The
collapsed cell after the parameters (:data:`BOOTSTRAP_CELL`) clones the course once per runtime and
puts it on ``sys.path``, so ``import helpers`` and ``data/`` work, then :func:`prepare` installs the
small packages Colab lacks (never TensorFlow: Colab's own stays). When the clone fails, the learner
reads one sentence saying what to do, not a traceback. Elsewhere (``make lab``, tests) the cell does
nothing.

The repository is named in one place, :data:`REPO`; the hygiene tests check that every notebook's
bootstrap cell and badges agree with it. ``COURSE_REPO_URL`` overrides the clone URL (a fork, a
mirror, or a local clone in tests) and ``COURSE_DIR`` the folder it is cloned into.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPO = "gpu-dl-notebooks/gpu-deep-learning-notebooks"
BRANCH = "main"
REPO_URL = f"https://github.com/{REPO}.git"

BOOTSTRAP_TITLE = "#@title Colab only: fetch the course's helpers and data (elsewhere this cell does nothing)"

BOOTSTRAP_CELL = f'''\
{BOOTSTRAP_TITLE}
import sys

if "google.colab" in sys.modules:
    import os
    import subprocess

    course = os.environ.get("COURSE_DIR", "/content/gpu-deep-learning-notebooks")
    if not os.path.isdir(course):
        url = os.environ.get("COURSE_REPO_URL", "{REPO_URL}")
        clone = subprocess.run(["git", "clone", "--depth=1", "--quiet", url, course], capture_output=True, text=True)
        if clone.returncode:
            class CourseNotFetched(Exception):
                def _render_traceback_(self):  # IPython shows this one line instead of a traceback
                    return [str(self)]
            raise CourseNotFetched(f"Could not fetch the course from {{url}}. Check that this runtime has internet "
                                   "access, or set COURSE_REPO_URL to a copy you can reach, then run this cell again.")
    sys.path.insert(0, course)
    import helpers.colab
    helpers.colab.prepare()'''

# Colab and JupyterLab show the cell collapsed: Colab through the #@title form, JupyterLab through this.
BOOTSTRAP_METADATA = {"cellView": "form", "jupyter": {"source_hidden": True}}


def prepare(requirements: Path = ROOT / "requirements.txt") -> list[str]:
    """On Colab, install the packages the course needs that Colab lacks; never TensorFlow.

    ``nvidia-ml-py`` (NVML readings on Colab's GPUs, notebooks 02 and 09) and
    ``tensorboard-plugin-profile`` (it brings ``xprof``, which reads notebook 04's profiler trace),
    and ``kubernetes-validate`` (notebook 08's manifest check), each at the version ``requirements.txt``
    pins and only when missing. Returns what it installed.

    Example:
        >>> prepare() if importlib.util.find_spec("pynvml") else []  # installed here: nothing to do
        []
    """
    wanted = {"pynvml": "nvidia-ml-py", "xprof": "tensorboard-plugin-profile",
              "kubernetes_validate": "kubernetes-validate"}
    pins = {}
    if requirements.exists():
        for line in requirements.read_text().splitlines():
            name, _, version = line.partition("==")
            if version:
                pins[name.strip()] = version.strip()
    missing = [pkg for module, pkg in wanted.items() if importlib.util.find_spec(module) is None]
    specs = [f"{pkg}=={pins[pkg]}" if pkg in pins else pkg for pkg in missing]
    if specs:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *specs], check=False)
    return specs


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
    return f"https://github.com/{REPO}/blob/{BRANCH}/notebooks/{notebook}"


def badges(notebook: str) -> str:
    """The Markdown badge line for the top of a notebook."""
    return (f"[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab_url(notebook)}) "
            f"[![View source](https://img.shields.io/badge/view-source-blue)]({source_url(notebook)})")
