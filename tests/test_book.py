"""make book: executed notebooks rendered to HTML, with a front page from the README."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_book  # noqa: E402


def test_links_to_notebooks_point_at_their_pages():
    text = '<a href="notebooks/03_cpu_vs_gpu_timing.ipynb">03</a> <a href="04_input_pipelines.ipynb">04</a>'
    expected = '<a href="03_cpu_vs_gpu_timing.html">03</a> <a href="04_input_pipelines.html">04</a>'
    assert build_book.relink(text) == expected
    assert build_book.relink('<a href="https://x/y.ipynb">') == '<a href="https://x/y.ipynb">'


@pytest.mark.notebook
def test_the_book_renders_an_executed_notebook_with_outputs_and_a_front_page(tmp_path):
    times = build_book.build(tmp_path, ["00_environment_check.ipynb"], smoke=True)
    page = (tmp_path / "00_environment_check.html").read_text()
    assert "Verdict: ready" in page, "the page must show the executed outputs"
    assert 'href="01_deep_learning_basics.html"' in page and 'href="index.html"' in page
    index = (tmp_path / "index.html").read_text()
    assert "GPU Deep Learning Notebooks" in index and times["00_environment_check.ipynb"] > 0
    for target in re.findall(r'href="(\d\d_\w+\.html)"', index):
        assert target in build_book.relink(index)
    assert 'href="00_environment_check.html"' in index
