"""Every relative link in the README, CONTRIBUTING and the notebooks leads somewhere that exists."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import nbrun
import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")
MENTION = re.compile(r"\bnotebooks? (\d\d)\b")


def relative_links(text: str) -> list[str]:
    """Markdown link targets that are files in the repository (not web addresses, not anchors, not code)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [t.split("#")[0] for t in LINK.findall(text)
            if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def documents():
    yield ROOT / "README.md", (ROOT / "README.md").read_text()
    yield ROOT / "CONTRIBUTING.md", (ROOT / "CONTRIBUTING.md").read_text()
    for name in nbrun.present():
        nb = nbformat.read(nbrun.NOTEBOOKS / name, as_version=4)
        yield nbrun.NOTEBOOKS / name, "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("path,text", list(documents()), ids=lambda v: v.name if isinstance(v, Path) else "")
def test_relative_links_resolve(path, text):
    broken = [t for t in relative_links(text) if t and not (path.parent / t).exists()]
    assert not broken, f"{path.name}: broken links {broken}"


@pytest.mark.parametrize("name", nbrun.present())
def test_notebooks_mention_only_notebooks_that_exist(name):
    nb = nbformat.read(nbrun.NOTEBOOKS / name, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    present = {n[:2] for n in nbrun.present()}
    missing = sorted({m for m in MENTION.findall(text) if m not in present})
    assert not missing, f"{name} refers to notebook(s) {missing}, which do not exist yet"


def test_the_readme_links_every_notebook():
    readme = (ROOT / "README.md").read_text()
    missing = [n for n in nbrun.present() if f"(notebooks/{n})" not in readme]
    assert not missing, f"README.md does not link {missing}"


def test_a_broken_link_is_caught():
    text = "see [x](nowhere.ipynb) and [y](https://example.org) and [z](#top) and `[c](code.ipynb)`"
    assert relative_links(text) == ["nowhere.ipynb"]


@pytest.mark.parametrize("path,text", list(documents()), ids=lambda v: v.name if isinstance(v, Path) else "")
def test_no_link_calls_an_existing_notebook_unwritten(path, text):
    stale = re.findall(r"\]\(([^)\s]+\.ipynb)\)[^\n]{0,3}\((?:coming|not written|to be written)[^)]*\)", text)
    assert not stale, f"{path.name} calls {stale} not written yet, but they exist: drop the remark"
