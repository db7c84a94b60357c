"""Where the course lives, and the cell that fetches it on Google Colab.

Colab opens a notebook alone, without the repository around it. The first code cell of every
notebook (:data:`BOOTSTRAP_CELL`) clones the course once per runtime and puts it on ``sys.path``,
so ``import helpers`` and ``data/`` work; it installs nothing, so Colab's own TensorFlow stays.
Elsewhere (``make lab``, tests) ``helpers`` is already importable and the cell does nothing.

The repository is named in one place, :data:`REPO`; the hygiene tests check that every notebook's
bootstrap cell and badges agree with it. ``COURSE_REPO_URL`` overrides the clone URL (a fork, a
mirror, or a local clone in tests) and ``COURSE_DIR`` the folder it is cloned into.
"""

from __future__ import annotations

REPO = "gpu-dl-notebooks/gpu-deep-learning-notebooks"
BRANCH = "main"
REPO_URL = f"https://github.com/{REPO}.git"

BOOTSTRAP_CELL = f'''\
# Colab only: fetch the course (helpers + data) once per runtime. Elsewhere this does nothing.
import importlib.util
import os
import subprocess
import sys

on_colab = importlib.util.find_spec("google") is not None and importlib.util.find_spec("google.colab") is not None
if on_colab and importlib.util.find_spec("helpers") is None:
    course = os.environ.get("COURSE_DIR", "/content/gpu-deep-learning-notebooks")
    if not os.path.isdir(course):
        url = os.environ.get("COURSE_REPO_URL", "{REPO_URL}")
        subprocess.run(["git", "clone", "--depth=1", "--quiet", url, course], check=True)
    sys.path.insert(0, course)'''


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
