"""Sphinx configuration of the course site (`make book`, tools/build_book.py).

Sphinx with MyST-NB renders the notebooks that tools/build_book.py executed with papermill (MyST-NB's
own execution is off: nothing runs twice) in sphinx-book-theme. tools/build_book.py passes this folder
as the configuration folder (`sphinx-build -c book`) and a temporary source folder holding `index.md`
(the README) and the executed notebooks. Nothing is fetched at build time or at view time: MathJax is
served from the site itself (the jupyter-server-mathjax package's copy of MathJax 2), no intersphinx,
no require.js or widget scripts from a CDN, no badge images from other hosts.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers import colab  # noqa: E402  (the same launch URLs as the notebooks' badges)

project = "GPU Deep Learning Notebooks"
author = "the course's authors"
copyright = "the course's authors, Apache-2.0"
extensions = ["myst_nb"]
exclude_patterns = ["_build", "jupyter_execute", ".jupyter_cache", "**.ipynb_checkpoints"]
templates_path = []
html_static_path = ["static"]
html_css_files = ["course.css"]
html_title = project
html_theme = "sphinx_book_theme"
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
language = "en"
# The README's Colab cell block is IPython (`!git`, `%cd`) in a ```python fence: Pygments falls back to
# plain text for it, which is right; everything else Sphinx warns about stops the build (-W).
suppress_warnings = ["misc.highlighting_failure"]

# MyST-NB: show the outputs of our papermill run, never execute again.
nb_execution_mode = "off"
nb_ipywidgets_js = {}  # no require.js or widget manager from a CDN
nb_merge_streams = True
myst_enable_extensions = ["dollarmath"]
# MyST marks sections tex2jax_ignore and re-enables math through a MathJax 3 option, which MathJax 2 ignores:
# off, so MathJax 2 typesets the \( \) and \[ \] that dollarmath writes, and nothing else.
myst_update_mathjax = False
myst_heading_anchors = 3  # "#what-you-will-learn" anchors, as GitHub and JupyterLab make them

# MathJax 2 from the site itself (copied into _static/mathjax at the end of the build), never a CDN.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
# That copy ships the STIX-Web fonts only (as Jupyter's classic notebook configured it): no TeX font, no image fonts.
mathjax2_config = {"messageStyle": "none",
                   "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                               "processEscapes": True},
                   "HTML-CSS": {"availableFonts": [], "preferredFont": None, "webFont": "STIX-Web", "imageFont": None}}

html_theme_options = {
    "repository_url": f"https://github.com/{colab.REPO}",
    "repository_branch": colab.BRANCH,
    "use_repository_button": True,
    "use_download_button": False,
    "show_prev_next": True,
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "navigation_with_keys": False,
}


def launch_buttons(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Colab and Kaggle buttons on every notebook page, from helpers.colab (the badges' own URLs)."""
    notebook = f"{pagename}.ipynb"
    if not (app.srcdir / notebook).exists() or "header_buttons" not in context:
        return
    buttons = [
        {"type": "link", "text": "Colab", "tooltip": "Open in Colab", "icon": "_static/images/logo_colab.png",
         "url": colab.colab_url(notebook), "label": "launch-colab"},
        {"type": "link", "text": "Kaggle", "tooltip": "Open in Kaggle", "icon": "fab fa-kaggle",
         "url": colab.kaggle_url(notebook), "label": "launch-kaggle"},
    ]
    context["header_buttons"].insert(0, {"type": "group", "tooltip": "Launch this notebook", "icon": "fas fa-rocket",
                                         "buttons": buttons, "label": "launch-buttons"})


def bundle_mathjax(app, exception) -> None:
    """Copy MathJax 2 (jupyter-server-mathjax's static files) into the site."""
    if exception is None and app.builder.format == "html":
        import jupyter_server_mathjax

        source = Path(jupyter_server_mathjax.__file__).parent / "static"
        shutil.copytree(source, Path(app.outdir) / "_static" / "mathjax", dirs_exist_ok=True)


def setup(app):
    app.connect("html-page-context", launch_buttons, priority=502)  # after the theme made header_buttons
    app.connect("build-finished", bundle_mathjax)
