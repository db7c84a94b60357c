"""Build the course as a static HTML site of executed notebooks (`make book`), offline.

    .venv/bin/python tools/build_book.py [--smoke] [--out build/book] [NN_name.ipynb ...]

Each notebook is executed with papermill (learner sizes; `--smoke` for the quick sizes), in a
temporary folder with its scratch folder inside, then rendered with nbconvert's HTML exporter:
outputs and plots are embedded, so an instructor reads every notebook with its results before running
anything. The front page (`index.html`) is the README rendered, with its links to `notebooks/*.ipynb`
pointing at the pages. Links between notebooks point at their pages too. Nothing is fetched: the
build runs with the network cut (`make book` wraps it in tools/offline.py).
"""

from __future__ import annotations

import argparse
import html
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import nbrun  # noqa: E402

STYLE = """<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem}code{background:#f4f4f4}
nav{margin:1rem 0;padding:.5rem 0;border-top:1px solid #ddd;border-bottom:1px solid #ddd}</style>"""


def page_name(notebook: str) -> str:
    """The page of a notebook file: ``03_cpu_vs_gpu_timing.ipynb`` -> ``03_cpu_vs_gpu_timing.html``."""
    return notebook[: -len(".ipynb")] + ".html"


def relink(text: str) -> str:
    """Point links at notebooks (``notebooks/NN_x.ipynb`` or ``NN_x.ipynb``) at their pages."""
    return re.sub(r'(href=")(?:notebooks/)?(\d\d_[\w]+)\.ipynb(")', r"\1\2.html\3", text)


def nav(names: list[str], index: int) -> str:
    parts = ['<a href="index.html">Course outline</a>']
    if index > 0:
        parts.append(f'<a href="{page_name(names[index - 1])}">&larr; {html.escape(names[index - 1][:-6])}</a>')
    if index + 1 < len(names):
        parts.append(f'<a href="{page_name(names[index + 1])}">{html.escape(names[index + 1][:-6])} &rarr;</a>')
    return "<nav>" + " | ".join(parts) + "</nav>"


def render(executed: Path, names: list[str], index: int) -> str:
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab")
    body, _ = exporter.from_notebook_node(nbformat.read(executed, as_version=4))
    bar = nav(names, index)
    body = re.sub(r"(<body[^>]*>)", r"\1" + bar.replace("\\", "\\\\"), body, count=1)
    body = body.replace("</body>", bar + "</body>", 1)
    return relink(body)


def front_page(names: list[str], times: dict[str, float], smoke: bool) -> str:
    import mistune

    readme = mistune.html((ROOT / "README.md").read_text())
    built = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = "".join(f"<li><a href=\"{page_name(n)}\">{html.escape(n[:-6])}</a> (executed in {times[n]:.0f} s)</li>"
                   for n in names)
    sizes = "smoke sizes" if smoke else "learner sizes"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>GPU Deep Learning Notebooks</title>{STYLE}"
            f"</head><body><p><strong>Executed course</strong>, built {built} at {sizes} on this machine "
            f"({os.cpu_count()} cores). Pages:</p><ul>{rows}</ul><hr>{relink(readme)}</body></html>")


def build(out: Path, names: list[str], smoke: bool) -> dict[str, float]:
    import papermill as pm

    out.mkdir(parents=True, exist_ok=True)
    course = nbrun.present()
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["COURSE_SCRATCH"] = str(Path(tmp) / "scratch")
        os.environ.setdefault("MPLBACKEND", "Agg")
        for name in names:
            executed = Path(tmp) / name
            start = time.perf_counter()
            pm.execute_notebook(str(nbrun.NOTEBOOKS / name), str(executed), parameters={"SMOKE": smoke},
                                cwd=tmp, kernel_name="python3", progress_bar=False, execution_timeout=1800)
            times[name] = time.perf_counter() - start
            (out / page_name(name)).write_text(render(executed, course, course.index(name)))
            print(f"{name}: executed in {times[name]:.0f} s -> {out / page_name(name)}", flush=True)
    (out / "index.html").write_text(front_page(names, times, smoke))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook file names (default: all)")
    parser.add_argument("--smoke", action="store_true", help="execute at smoke sizes (quick)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "book")
    args = parser.parse_args(argv)
    names = args.notebooks or nbrun.present()
    unknown = sorted(set(names) - set(nbrun.present()))
    if unknown:
        parser.error(f"unknown notebook(s) {unknown}: use names from {nbrun.present()}")
    build(args.out, names, args.smoke)
    print(f"Open {args.out / 'index.html'} in a browser.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
