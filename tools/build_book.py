"""Build the course site (`make book`): the executed notebooks rendered by Sphinx, MyST-NB and sphinx-book-theme.

    .venv/bin/python tools/build_book.py [--smoke] [--executed DIR] [--jobs 2] [--out build/book]

1. Every notebook of the course (tests/nbrun.py COURSE) is executed with papermill, two at a time by
   default (`--jobs`), at learner sizes (`--smoke`: the quick sizes), each in a temporary folder with its
   own scratch folder. `--executed DIR` skips this step and takes the notebooks executed elsewhere (by a
   test run, or on a GPU machine); a folder missing a notebook, or holding one whose code differs from
   the current notebook's, is refused before anything is built.
2. A temporary source folder gets `index.md` (the README) and the executed notebooks, with links to
   notebooks pointing at their pages, links to other files of the repository pointing at GitHub, badge
   images turned into plain links (no image from another host) and the alt text of every figure from
   `book/alt_text.json`, keyed by notebook and cell id (a figure without alt text stops the build).
3. Sphinx builds it with the configuration in `book/conf.py` (MyST-NB's execution off: nothing runs
   twice), into a temporary folder that replaces `--out` only once the build succeeded.

Nothing is fetched: `make book` runs this under tools/offline.py, and the pages load nothing from
another host (MathJax is bundled; tests/test_browser_site.py blocks and counts outside requests).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
ALT_TEXT = BOOK / "alt_text.json"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import nbrun  # noqa: E402

from helpers import colab  # noqa: E402

IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
# A code cell draws a figure when it shows one with matplotlib or through helpers.plots.
DRAWS = re.compile(r"\bplt\.show\(|\bhelpers\.plots\.|\bplots\.(?:bars|CurvePlotter)\(")
BADGE = re.compile(r"\[!\[([^\]]*)\]\([^)]*\)\]\(([^)]*)\)")
MD_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def page_name(notebook: str) -> str:
    """The page of a notebook file in the site.

    Example:
        >>> page_name("03_cpu_vs_gpu_timing.ipynb")
        '03_cpu_vs_gpu_timing.html'
    """
    if not re.fullmatch(r"\d\d_\w+\.ipynb", notebook):
        raise ValueError(f"notebook={notebook!r}: use a course file name such as '00_environment_check.ipynb'.")
    return notebook[: -len(".ipynb")] + ".html"


def repo_url(path: str) -> str:
    """The GitHub address of a file or folder of the repository (a path relative to its root).

    Example:
        >>> repo_url("benchmarks/times.json").endswith("/blob/main/benchmarks/times.json")
        True
    """
    path = path.strip("/")
    if not path or path.startswith(".."):
        raise ValueError(f"path={path!r}: give a path inside the repository, such as 'data/README.md'.")
    return f"https://github.com/{colab.REPO}/blob/{colab.BRANCH}/{path}"


def relink(text: str, where: str) -> str:
    """Rewrite the Markdown links of the README (`where="readme"`) or a notebook (`where="notebooks"`) for the site.

    A link to a course notebook (``notebooks/NN_x.ipynb`` from the README, ``NN_x.ipynb`` from a notebook)
    points at the notebook in the source folder, so Sphinx links its page; a link to the README points at
    the front page; a link to any other file of the repository points at that file on GitHub, since the
    site holds only pages. Web links and anchors stay as they are.

    Example:
        >>> relink("[03](notebooks/03_cpu_vs_gpu_timing.ipynb#setup) [t](benchmarks/times.json)", "readme")
        '[03](03_cpu_vs_gpu_timing.ipynb#setup) [t](https://github.com/gpu-dl-notebooks/gpu-deep-learning-notebooks/blob/main/benchmarks/times.json)'
    """
    if where not in ("readme", "notebooks"):
        raise ValueError(f"where={where!r}: use 'readme' or 'notebooks'.")

    def one(match: re.Match[str]) -> str:
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match.group(0)
        path, _, anchor = target.partition("#")
        repo_path = os.path.normpath(path if where == "readme" else os.path.join("notebooks", path))
        if re.fullmatch(r"notebooks/\d\d_\w+\.ipynb", repo_path) and repo_path[10:] in nbrun.COURSE:
            new = repo_path[10:]
        elif repo_path == "README.md":
            new = "index.md"
        else:
            new = repo_url(repo_path)
        return match.group(1) + new + (f"#{anchor}" if anchor else "") + match.group(3)

    return MD_LINK.sub(one, text)


def unbadge(text: str) -> str:
    """Turn badge images that link somewhere (``[![alt](image)](url)``) into plain links: no image from another host.

    Example:
        >>> unbadge("[![Open in Colab](https://x/badge.svg)](https://colab/nb)")
        '[Open in Colab](https://colab/nb)'
    """
    return BADGE.sub(r"[\1](\2)", text)


def launch_urls(notebook: str) -> dict[str, str]:
    """The launch buttons of a notebook's page: the same URLs as its badges (helpers.colab).

    Example:
        >>> sorted(launch_urls("06_mixed_precision.ipynb"))
        ['colab', 'kaggle']
    """
    page_name(notebook)
    return {"colab": colab.colab_url(notebook), "kaggle": colab.kaggle_url(notebook)}


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def figure_cells(notebook: Mapping[str, Any]) -> list[str]:
    """Ids of the code cells that draw a figure: ``plt.show()``, ``helpers.plots``, or an image output.

    Example:
        >>> figure_cells({"cells": [{"cell_type": "code", "id": "a", "source": "plt.show()"},
        ...                         {"cell_type": "code", "id": "b", "source": "print(1)"}]})
        ['a']
    """
    ids = []
    for cell in notebook["cells"]:
        if cell.get("cell_type") != "code":
            continue
        images = any(kind in out.get("data", {}) for out in cell.get("outputs", []) for kind in IMAGE_TYPES)
        if images or DRAWS.search(_source(cell)):
            ids.append(cell["id"])
    return ids


def load_alt_text(path: Path = ALT_TEXT) -> dict[str, dict[str, str]]:
    """The alt text of every figure, by notebook file name and cell id (``book/alt_text.json``).

    Example:
        >>> "06_mixed_precision.ipynb" in load_alt_text()
        True
    """
    table = json.loads(Path(path).read_text())
    return {name: figures for name, figures in table.items() if not name.startswith("_")}


def alt_text_problems(notebooks: Mapping[str, Mapping[str, Any]], alt: Mapping[str, Mapping[str, str]]) -> list[str]:
    """What is wrong with the alt-text map for these notebooks: figures without alt text, and stale entries.

    An entry is stale when its notebook is not in the course or its cell does not draw a figure. Alt text
    shorter than 40 characters is not a description. An empty list means the map fits.

    Example:
        >>> nb = {"cells": [{"cell_type": "code", "id": "plot", "source": "plt.show()"}]}
        >>> alt_text_problems({"01_deep_learning_basics.ipynb": nb}, {})
        ['01_deep_learning_basics.ipynb, cell plot: draws a figure and has no alt text in book/alt_text.json']
    """
    problems = []
    for name, notebook in notebooks.items():
        drawn = figure_cells(notebook)
        given = alt.get(name, {})
        problems += [f"{name}, cell {cid}: draws a figure and has no alt text in book/alt_text.json"
                     for cid in drawn if cid not in given]
        problems += [f"{name}, cell {cid}: has alt text in book/alt_text.json but draws no figure (stale entry)"
                     for cid in given if cid not in drawn]
        problems += [f"{name}, cell {cid}: alt text {text!r} is too short to say what the figure shows"
                     for cid, text in given.items() if cid in drawn and len(text.strip()) < 40]
    problems += [f"{name}: in book/alt_text.json but not a notebook of the course (stale entry)"
                 for name in alt if name not in notebooks]
    return problems


LIVE_VIEW = re.compile(r"<iframe[^>]*\bid=\"tensorboard-frame-")
LIVE_VIEW_NOTE = ("*Here the notebook shows TensorBoard inline, served by the TensorBoard it started on this "
                  "machine and stopped when it ended; a static page cannot show it. Run the notebook (Colab, Kaggle or "
                  "`make lab`) to use it.*")


def without_live_views(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A cell's outputs for a static page: a view of a server the run started (TensorBoard's iframe) becomes a note.

    Such a view points at a port on the machine that executed the notebook: on the site it would load
    nothing, or another server's page.

    Example:
        >>> out = {"output_type": "display_data", "data": {"text/html": '<iframe id="tensorboard-frame-1">'}}
        >>> without_live_views([out])[0]["data"]["text/markdown"].startswith("*Here the notebook shows TensorBoard")
        True
    """
    kept = []
    for out in outputs:
        html = out.get("data", {}).get("text/html", "")
        if LIVE_VIEW.search("".join(html) if isinstance(html, list) else html):
            out = {**out, "data": {"text/markdown": LIVE_VIEW_NOTE, "text/plain": LIVE_VIEW_NOTE}}
        kept.append(out)
    return kept


def _injected(cell: Mapping[str, Any]) -> bool:
    """Whether `cell` is the parameters cell papermill injected (tagged ``injected-parameters``)."""
    return "injected-parameters" in cell.get("metadata", {}).get("tags", [])


def code_sources(notebook: Mapping[str, Any]) -> list[str]:
    """The code of a notebook, cell by cell, without the cell papermill injects for the parameters.

    Example:
        >>> code_sources({"cells": [{"cell_type": "code", "source": "x = 1 "},
        ...     {"cell_type": "code", "source": "x = 2", "metadata": {"tags": ["injected-parameters"]}}]})
        ['x = 1']
    """
    return [_source(c).strip() for c in notebook["cells"] if c.get("cell_type") == "code"
            and not _injected(c)]


def check_executed(folder: Path, names: Iterable[str]) -> dict[str, Path]:
    """The executed notebooks of `folder`, after checking each is there and runs the current code.

    Raises ValueError naming the folder and every missing or stale notebook (with its first differing
    code cell), before anything is built.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"--executed {folder}: not a folder; give the folder that holds the executed notebooks.")
    found, problems = {}, []
    for name in names:
        path = folder / name
        if not path.is_file():
            problems.append(f"{name} is missing")
            continue
        ran = code_sources(json.loads(path.read_text()))
        now = code_sources(json.loads((nbrun.NOTEBOOKS / name).read_text()))
        if ran != now:
            first = next((i for i, (a, b) in enumerate(zip(ran, now, strict=False)) if a != b), min(len(ran), len(now)))
            line = (now[first].splitlines() or [""])[0][:60] if first < len(now) else "(no such cell now)"
            problems.append(f"{name} ran other code than notebooks/{name} (code cell {first + 1}: {line!r}): "
                            "execute it again")
            continue
        found[name] = path
    if problems:
        raise ValueError(f"--executed {folder}: " + "; ".join(problems) + ".")
    return found


def execute(names: list[str], workdir: Path, smoke: bool, jobs: int) -> tuple[dict[str, Path], dict[str, float]]:
    """Execute the notebooks with papermill, `jobs` at a time, each in its own folder under `workdir`."""
    def run(name: str) -> tuple[str, Path, float]:
        folder = workdir / name[:2]
        folder.mkdir(parents=True)
        env = dict(os.environ, COURSE_SCRATCH=str(folder / "scratch"), PYTHONPATH=str(ROOT))
        env.pop("MPLBACKEND", None)  # the kernel's inline backend: plt.show() must leave a figure on the page
        cmd = [sys.executable, "-m", "papermill", str(nbrun.NOTEBOOKS / name), str(folder / name), "--cwd",
               str(folder), "-k", "python3", "--no-progress-bar", "--execution-timeout", "1800"]
        if smoke:
            cmd += ["-p", "SMOKE", "True"]
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{name} failed under papermill:\n{done.stderr[-3000:]}")
        seconds = time.perf_counter() - start
        print(f"{name}: executed in {seconds:.0f} s", flush=True)
        return name, folder / name, seconds

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        ran = list(pool.map(run, names))
    return {n: p for n, p, _ in ran}, {n: s for n, _, s in ran}


SMOKE_NOTICE = ("> **Executed at the quick test sizes** (`SMOKE = True`): this page's figures and timings come from "
                "tiny runs and are noisy. `make book` executes every notebook at learner sizes for the real ones.\n")


def ran_at_smoke_size(notebook: Mapping[str, Any]) -> bool:
    """Whether papermill's injected parameters (or its recorded ones) set ``SMOKE = True``.

    Example:
        >>> ran_at_smoke_size({"cells": [{"cell_type": "code", "source": "SMOKE = True\\n",
        ...                               "metadata": {"tags": ["injected-parameters"]}}]})
        True
        >>> ran_at_smoke_size({"cells": [], "metadata": {"papermill": {"parameters": {"SMOKE": False}}}})
        False
    """
    if notebook.get("metadata", {}).get("papermill", {}).get("parameters", {}).get("SMOKE") is True:
        return True
    return any(re.search(r"^SMOKE = True\b", _source(c), re.M) for c in notebook["cells"]
               if _injected(c))


def for_the_page(notebook: dict[str, Any]) -> dict[str, Any]:
    """The notebook without papermill's injected parameters cell (a test run's temporary paths), and with a notice
    on top when it ran at the quick test sizes, so nobody reads its tiny runs' numbers as the course's.

    Example:
        >>> nb = {"cells": [{"cell_type": "markdown", "source": "# 00 · title"}, {"cell_type": "code",
        ...       "source": "SMOKE = True\\nRESULTS_PATH = '/tmp/x'", "metadata": {"tags": ["injected-parameters"]}}]}
        >>> page = for_the_page(nb)
        >>> [c["cell_type"] for c in page["cells"]], page["cells"][0]["source"].split("\\n")[2][:30]
        (['markdown'], '> **Executed at the quick test')
    """
    smoke = ran_at_smoke_size(notebook)
    notebook["cells"] = [c for c in notebook["cells"]
                         if not _injected(c)]
    if smoke:
        first = next(c for c in notebook["cells"] if c.get("cell_type") == "markdown")
        title, _, rest = _source(first).partition("\n")  # under the title, so it stays the page's title
        head, tail = (f"{title}\n\n", rest) if title.startswith("# ") else ("", _source(first))
        first["source"] = f"{head}{SMOKE_NOTICE}\n{tail}"
    return notebook


def prepare_source(src: Path, executed: Mapping[str, Path], alt: Mapping[str, Mapping[str, str]]) -> None:
    """Write the Sphinx source folder: `index.md` from the README, the executed notebooks made ready for the site."""
    names = list(executed)
    readme = unbadge(relink((ROOT / "README.md").read_text(), "readme"))
    toc = "\n".join(n[: -len(".ipynb")] for n in names)
    (src / "index.md").write_text(f"{readme}\n\n```{{toctree}}\n:hidden:\n:caption: Notebooks\n\n{toc}\n```\n")
    for name, path in executed.items():
        notebook = for_the_page(json.loads(path.read_text()))
        given = alt.get(name, {})
        for cell in notebook["cells"]:
            if cell.get("cell_type") == "markdown":
                cell["source"] = unbadge(relink(_source(cell), "notebooks"))
            else:
                cell["outputs"] = without_live_views(cell.get("outputs", []))
                if cell.get("id") in given:
                    cell.setdefault("metadata", {}).setdefault("mystnb", {})["image"] = {"alt": given[cell["id"]]}
        (src / name).write_text(json.dumps(notebook, indent=1, ensure_ascii=False))


def build(out: Path, smoke: bool = False, executed_dir: Path | None = None, jobs: int = 2) -> dict[str, float]:
    """Build the site into `out` (replaced only when the build succeeded); return each notebook's execution time."""
    if jobs < 1:
        raise ValueError(f"jobs={jobs}: use 1 or more notebooks executed at a time.")
    names = nbrun.present()
    executed_from = check_executed(executed_dir, names) if executed_dir is not None else None
    alt = load_alt_text()
    problems = alt_text_problems({n: json.loads((nbrun.NOTEBOOKS / n).read_text()) for n in names}, alt)
    if problems:
        raise ValueError("book/alt_text.json does not fit the notebooks:\n  " + "\n  ".join(problems))
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="book-", dir=out.parent) as tmp:
        tmp = Path(tmp)
        times: dict[str, float] = {}
        if executed_from is None:
            executed_from, times = execute(names, tmp / "run", smoke, jobs)
        problems = alt_text_problems({n: json.loads(p.read_text()) for n, p in executed_from.items()}, alt)
        if problems:
            raise ValueError("figures on the executed pages without alt text:\n  " + "\n  ".join(problems))
        (tmp / "src").mkdir()
        prepare_source(tmp / "src", executed_from, alt)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going", "-c",
                               str(BOOK), "-d", str(tmp / "doctrees"), str(tmp / "src"), str(tmp / "html")],
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"Sphinx could not build the site:\n{done.stderr[-4000:]}")
        print(f"Sphinx built the site in {time.perf_counter() - start:.0f} s", flush=True)
        old = tmp / "old"
        if out.exists():
            out.rename(old)
        (tmp / "html").rename(out)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="execute at smoke sizes (quick)")
    parser.add_argument("--executed", type=Path, help="folder of notebooks already executed: build from them")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at a time (default 2)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "book")
    args = parser.parse_args(argv)
    if args.executed is not None and args.smoke:
        parser.error("--smoke and --executed: give one; notebooks from --executed are not executed again")
    try:
        build(args.out, args.smoke, args.executed, args.jobs)
    except ValueError as error:
        parser.error(str(error))
    print(f"The course site is in {args.out}: open {args.out / 'index.html'} in a browser.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
