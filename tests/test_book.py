"""make book: the pieces of tools/build_book.py and book/conf.py, without building the site (that is
tests/test_browser_site.py, under make test-browser): relinking, badges, the alt-text map, the launch
buttons' URLs, and the refusal of an `--executed` folder that is missing a notebook or ran other code."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_book  # noqa: E402
import nbrun  # noqa: E402

from helpers import colab  # noqa: E402

GITHUB = f"https://github.com/{colab.REPO}/blob/{colab.BRANCH}"


def notebook(name: str) -> dict:
    return json.loads((nbrun.NOTEBOOKS / name).read_text())


def test_readme_links_to_notebooks_point_at_their_pages_and_other_files_at_github():
    text = ("[03](notebooks/03_cpu_vs_gpu_timing.ipynb) [06](notebooks/06_mixed_precision.ipynb#setup) "
            "[times](benchmarks/times.json) [guide](CONTRIBUTING.md) [web](https://example.org/a.ipynb) [top](#layout)")
    assert build_book.relink(text, "readme") == (
        "[03](03_cpu_vs_gpu_timing.ipynb) [06](06_mixed_precision.ipynb#setup) "
        f"[times]({GITHUB}/benchmarks/times.json) [guide]({GITHUB}/CONTRIBUTING.md) "
        "[web](https://example.org/a.ipynb) [top](#layout)")


def test_notebook_links_to_notebooks_stay_pages_and_the_readme_is_the_front_page():
    text = "[Next](04_input_pipelines.ipynb) [README](../README.md#two-commands) [data](../data/README.md)"
    assert build_book.relink(text, "notebooks") == (
        f"[Next](04_input_pipelines.ipynb) [README](index.md#two-commands) [data]({GITHUB}/data/README.md)")
    # a notebook name outside the course is a file of the repository, not a page
    assert build_book.relink("[x](notebooks/99_unknown.ipynb)", "readme") == f"[x]({GITHUB}/notebooks/99_unknown.ipynb)"
    with pytest.raises(ValueError, match="where='site'.*'readme' or 'notebooks'"):
        build_book.relink("", "site")


def test_page_names_and_repository_paths_are_checked():
    assert build_book.page_name("06_mixed_precision.ipynb") == "06_mixed_precision.html"
    with pytest.raises(ValueError, match="notebook='notes.txt'"):
        build_book.page_name("notes.txt")
    with pytest.raises(ValueError, match="path='../x'"):
        build_book.repo_url("../x")


def test_badge_images_become_plain_links_so_no_page_loads_an_image_from_another_host():
    line = colab.badges("06_mixed_precision.ipynb")
    plain = build_book.unbadge(line)
    assert "![" not in plain and ".svg" not in plain
    assert f"[Open in Colab]({colab.colab_url('06_mixed_precision.ipynb')})" in plain
    assert f"[Open in Kaggle]({colab.kaggle_url('06_mixed_precision.ipynb')})" in plain
    readme = build_book.unbadge((ROOT / "README.md").read_text())
    assert "](https://colab.research.google.com/assets/" not in readme and "img.shields.io" not in readme


def test_every_figure_in_the_course_has_alt_text_and_no_entry_is_stale():
    names = nbrun.present()
    alt = build_book.load_alt_text()
    assert build_book.alt_text_problems({n: notebook(n) for n in names}, alt) == []
    drawn = sum(len(build_book.figure_cells(notebook(n))) for n in names)
    assert drawn >= 20 and drawn == sum(len(v) for v in alt.values())


def test_the_alt_text_check_finds_missing_stale_short_and_unknown_entries():
    nb = {"cells": [{"cell_type": "code", "id": "a", "source": "plt.show()"},
                    {"cell_type": "code", "id": "b", "source": "helpers.plots.bars(v)"},
                    {"cell_type": "code", "id": "c", "source": "display(x)",
                     "outputs": [{"output_type": "display_data", "data": {"image/png": "iVBOR"}}]},
                    {"cell_type": "code", "id": "d", "source": "print('plt.show is how you draw')"},
                    {"cell_type": "markdown", "id": "e", "source": "plt.show()"}]}
    assert build_book.figure_cells(nb) == ["a", "b", "c"]
    long = "A line plot of loss against epoch, one line per optimizer."
    problems = build_book.alt_text_problems({"01_deep_learning_basics.ipynb": nb},
                                            {"01_deep_learning_basics.ipynb": {"a": long, "b": "a plot", "d": long},
                                             "99_gone.ipynb": {"x": long}})
    assert problems == [
        "01_deep_learning_basics.ipynb, cell c: draws a figure and has no alt text in book/alt_text.json",
        "01_deep_learning_basics.ipynb, cell d: has alt text in book/alt_text.json but draws no figure (stale entry)",
        "01_deep_learning_basics.ipynb, cell b: alt text 'a plot' is too short to say what the figure shows",
        "99_gone.ipynb: in book/alt_text.json but not a notebook of the course (stale entry)",
    ]


def test_a_live_tensorboard_view_becomes_a_note_and_other_outputs_stay():
    iframe = {"output_type": "display_data", "data": {"text/html": ['<iframe id="tensorboard-frame-6baa" width="100%">',
                                                                    "</iframe><script>url.port = 34711;</script>"],
                                                      "text/plain": "<IPython.core.display.HTML object>"}}
    table = {"output_type": "display_data", "data": {"text/html": "<table><tr><td>1</td></tr></table>"}}
    text = {"output_type": "stream", "name": "stdout", "text": "TensorBoard listens on 127.0.0.1:34711 only.\n"}
    note, kept_table, kept_text = build_book.without_live_views([iframe, table, text])
    assert "34711" not in json.dumps(note) and "<iframe" not in json.dumps(note)
    assert note["data"]["text/markdown"] == build_book.LIVE_VIEW_NOTE and note["output_type"] == "display_data"
    assert kept_table == table and kept_text == text


def test_launch_urls_are_the_urls_of_each_notebooks_own_badges():
    for name in nbrun.present():
        title = "".join(notebook(name)["cells"][0]["source"])
        urls = build_book.launch_urls(name)
        assert f"]({urls['colab']})" in title and f"]({urls['kaggle']})" in title, name
        assert urls["kaggle"] == f"https://kaggle.com/kernels/welcome?src={GITHUB}/notebooks/{name}"


def test_every_notebook_page_gets_colab_and_kaggle_buttons_and_other_pages_none(tmp_path):
    spec = importlib.util.spec_from_file_location("book_conf", ROOT / "book" / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    assert conf.nb_execution_mode == "off" and "://" not in conf.mathjax_path
    (tmp_path / "06_mixed_precision.ipynb").write_text("{}")
    app = SimpleNamespace(srcdir=tmp_path)
    context = {"header_buttons": [{"label": "fullscreen"}]}
    conf.launch_buttons(app, "06_mixed_precision", "page.html", context, None)
    group = context["header_buttons"][0]
    urls = {b["label"]: b["url"] for b in group["buttons"]}
    assert urls == {"launch-colab": colab.colab_url("06_mixed_precision.ipynb"),
                    "launch-kaggle": colab.kaggle_url("06_mixed_precision.ipynb")}
    front = {"header_buttons": []}
    conf.launch_buttons(app, "index", "page.html", front, None)
    assert front["header_buttons"] == []


def executed_copies(folder: Path, names: list[str]) -> None:
    """Copies of the notebooks as papermill leaves them: an injected parameters cell and outputs."""
    folder.mkdir(exist_ok=True)
    for name in names:
        nb = notebook(name)
        injected = {"cell_type": "code", "id": "injected", "metadata": {"tags": ["injected-parameters"]},
                    "source": "SMOKE = True\n", "outputs": [], "execution_count": 1}
        nb["cells"].insert(2, injected)
        for cell in nb["cells"]:
            if cell["cell_type"] == "code" and cell is not injected:
                cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "ran\n"}]
        (folder / name).write_text(json.dumps(nb))


def test_an_executed_folder_is_taken_when_it_runs_the_current_code(tmp_path):
    names = nbrun.present()
    executed_copies(tmp_path / "ran", names)
    found = build_book.check_executed(tmp_path / "ran", names)
    assert list(found) == names and found[names[0]] == tmp_path / "ran" / names[0]


def test_an_executed_folder_missing_a_notebook_or_with_other_code_is_refused_before_the_build(tmp_path):
    names = nbrun.present()
    executed_copies(tmp_path / "ran", names)
    (tmp_path / "ran" / names[3]).unlink()
    stale = json.loads((tmp_path / "ran" / names[5]).read_text())
    code = [c for c in stale["cells"] if c["cell_type"] == "code" and c["id"] != "injected"]
    code[4]["source"] = "print('an older version of this cell')\n"
    (tmp_path / "ran" / names[5]).write_text(json.dumps(stale))
    out = tmp_path / "book"
    out.mkdir()
    (out / "index.html").write_text("the site built before")
    with pytest.raises(ValueError) as error:
        build_book.build(out, executed_dir=tmp_path / "ran")
    message = str(error.value)
    assert f"{names[3]} is missing" in message
    assert f"{names[5]} ran other code than notebooks/{names[5]} (code cell 5:" in message
    assert (out / "index.html").read_text() == "the site built before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book", "ran"]  # no temporary folder left
    with pytest.raises(ValueError, match="not a folder"):
        build_book.check_executed(tmp_path / "nowhere", names)


def test_bad_arguments_fail_at_once_with_the_allowed_values(tmp_path, capsys):
    with pytest.raises(ValueError, match="jobs=0: use 1 or more"):
        build_book.build(tmp_path / "book", jobs=0)
    with pytest.raises(SystemExit):
        build_book.main(["--smoke", "--executed", str(tmp_path)])
    assert "--smoke and --executed: give one" in capsys.readouterr().err
    assert not (tmp_path / "book").exists()


def test_the_source_folder_has_the_readme_as_front_page_the_course_in_order_and_alt_text_on_figures(tmp_path):
    names = nbrun.present()
    executed_copies(tmp_path / "ran", names)
    (tmp_path / "src").mkdir()
    alt = build_book.load_alt_text()
    build_book.prepare_source(tmp_path / "src", {n: tmp_path / "ran" / n for n in names}, alt)
    index = (tmp_path / "src" / "index.md").read_text()
    assert index.startswith("# GPU Deep Learning Notebooks")
    toc = index.split("```{toctree}")[1].split("```")[0].split()
    assert toc[-len(names):] == [n[: -len(".ipynb")] for n in names] and "](notebooks/" not in index
    page = json.loads((tmp_path / "src" / "06_mixed_precision.ipynb").read_text())
    images = {c["id"]: c["metadata"]["mystnb"]["image"]["alt"] for c in page["cells"]
              if "mystnb" in c.get("metadata", {})}
    assert images == alt["06_mixed_precision.ipynb"]
    title = "".join(page["cells"][0]["source"])
    assert "![" not in title and colab.colab_url("06_mixed_precision.ipynb") in title
    shutil.rmtree(tmp_path / "src")


def test_a_page_never_shows_papermills_parameters_and_says_when_it_ran_at_smoke_size():
    """An instructor's review: pages built from test runs showed RESULTS_PATH = "/tmp/pytest-..." and tiny runs'
    numbers with nothing saying so."""
    def executed(smoke: bool) -> dict:
        return {"metadata": {}, "cells": [
            {"cell_type": "markdown", "source": "# 03 · CPU vs GPU timing\n\nIntro.", "metadata": {}},
            {"cell_type": "code", "source": "SMOKE = False", "metadata": {"tags": ["parameters"]}},
            {"cell_type": "code", "source": f"SMOKE = {smoke}\nRESULTS_PATH = \"/tmp/pytest-of-root/r.json\"\n",
             "metadata": {"tags": ["injected-parameters"]}}]}

    smoke = build_book.for_the_page(executed(True))
    assert "/tmp/pytest-of-root" not in json.dumps(smoke) and len(smoke["cells"]) == 2
    title = smoke["cells"][0]["source"]
    assert title.startswith("# 03 · CPU vs GPU timing\n\n> **Executed at the quick test sizes**") and "Intro." in title
    learner = build_book.for_the_page(executed(False))
    assert "Executed at the quick" not in json.dumps(learner) and "/tmp/pytest-of-root" not in json.dumps(learner)
    recorded = {"metadata": {"papermill": {"parameters": {"SMOKE": True}}}, "cells": []}
    assert build_book.ran_at_smoke_size(recorded) and not build_book.ran_at_smoke_size(executed(False))
