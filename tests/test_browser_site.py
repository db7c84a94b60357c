"""The course site (`make book`) in a real browser: headless Chromium on the built pages, served on 127.0.0.1.

The site is built once for the module with tools/build_book.py under tools/offline.py (the network cut):
at smoke sizes, or from the notebooks in ``COURSE_SITE_EXECUTED`` (a folder of executed notebooks, e.g.
the ones a test run left) with ``--executed``. Chromium may reach only the local server: every other
request is blocked and recorded, and the tests assert there was none (no CDN, font or badge image).
Each page is read once (links, anchors, plots, launch buttons, previous/next); the tests assert on that.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbrun
import pytest

from helpers import colab

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# One worker runs this module's tests (make test-browser: --dist loadgroup), so its fixtures start once.
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("site"),
              pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test-browser)")]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parent.parent
PAGES = ["index", *(n[: -len(".ipynb")] for n in nbrun.present())]
# Hosts a page may link to (never fetched by the test): the course's repository and launchers, and the
# sources the notebooks cite. A link to a new host fails test_every_link_on_every_page_resolves: add it here.
LINK_HOSTS = {
    "github.com", "colab.research.google.com", "kaggle.com",  # the repository and the launch buttons
    "www.tensorflow.org", "arxiv.org", "azure.microsoft.com", "www.tomshardware.com", "marko-kovacevic.com",
    "centml.ai",  # sources the notebooks cite
}
# Only notebook 06 names Keras' optimizer wrapper that scales the loss (checked on the built pages below).
SEARCH_TERM = "LossScaleOptimizer"
READ_PAGE = """() => {
    const plots = [...document.querySelectorAll('.cell_output img')].map(i => ({
        alt: i.getAttribute('alt') || '', width: i.naturalWidth, complete: i.complete}));
    const links = [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'));
    const button = label => { const a = document.querySelector('a.btn-' + label); return a && a.getAttribute('href'); };
    const sidebar = [...document.querySelectorAll('nav.bd-docs-nav a.reference')].map(a => a.getAttribute('href'));
    const prev = document.querySelector('.prev-next-area a.left-prev');
    const next = document.querySelector('.prev-next-area a.right-next');
    return {plots, links, ids: [...document.querySelectorAll('[id]')].map(e => e.id), sidebar,
            colab: button('launch-colab'), kaggle: button('launch-kaggle'),
            prev: prev && prev.getAttribute('href'), next: next && next.getAttribute('href'),
            math: document.querySelectorAll('.MathJax, .MathJax_Display, mjx-container').length,
            text: document.querySelector('main').innerText};
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "book"
    executed = os.environ.get("COURSE_SITE_EXECUTED")
    how = ["--executed", executed] if executed else ["--smoke"]
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "offline.py"), "--", sys.executable,
                           str(ROOT / "tools" / "build_book.py"), *how, "--out", str(out)],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "Network cut" in done.stdout and f"The course site is in {out}" in done.stdout
    return out


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)
    assert not thread.is_alive()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def visit(browser, server):
    """A browser context that can reach only the local server; what it blocked is in `.outside`."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.outside, context.errors = [], []
    local = urlsplit(server).netloc

    def route(r):
        if urlsplit(r.request.url).netloc == local:
            r.continue_()
        else:
            context.outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    yield context
    context.close()


@pytest.fixture(scope="module")
def pages(visit, server):
    """What every page of the site shows, read once in the browser: {page name: READ_PAGE's result}."""
    seen = {}
    for name in PAGES:
        page = visit.new_page()
        page.on("pageerror", lambda exc, name=name: visit.errors.append(f"{name}: {exc}"))
        page.goto(f"{server}/{name}.html", wait_until="load")
        page.wait_for_function("[...document.querySelectorAll('.cell_output img')].every(i => i.complete)")
        if name == "01_deep_learning_basics":
            page.wait_for_selector(".MathJax, mjx-container", state="attached", timeout=30_000)
        seen[name] = page.evaluate(READ_PAGE)
        page.close()
    return seen


def test_no_page_loads_anything_from_another_host_and_no_script_fails(pages, visit):
    assert visit.outside == [], f"requests to other hosts (blocked): {visit.outside[:10]}"
    assert visit.errors == []
    assert pages["01_deep_learning_basics"]["math"] > 0, "MathJax (served by the site) typesets 01's formulas"


def test_the_sidebar_lists_the_front_page_and_the_notebooks_in_teaching_order(pages):
    expected = [f"{p}.html" for p in PAGES]
    for name, seen in pages.items():
        order = [f"{name}.html" if h in ("#", "") else h.split("#")[0] for h in seen["sidebar"]]
        assert order == expected, (name, order)


def test_the_front_page_is_the_readme_with_its_notebook_links_pointing_at_the_pages(pages):
    front = pages["index"]
    assert "A sequenced, tested collection of Jupyter notebooks" in front["text"]
    for page in PAGES[1:]:
        assert f"{page}.html" in front["links"], page
    assert not [h for h in front["links"] if h.endswith(".ipynb") and "://" not in h]


def test_previous_and_next_follow_the_course_on_every_page(pages):
    for i, name in enumerate(PAGES):
        seen = pages[name]
        assert seen["prev"] == (f"{PAGES[i - 1]}.html" if i else None), name
        assert seen["next"] == (f"{PAGES[i + 1]}.html" if i + 1 < len(PAGES) else None), name


def test_every_notebook_page_has_colab_and_kaggle_buttons_with_the_badges_urls(pages):
    for name in PAGES[1:]:
        assert pages[name]["colab"] == colab.colab_url(f"{name}.ipynb"), name
        assert pages[name]["kaggle"] == colab.kaggle_url(f"{name}.ipynb"), name
    assert pages["index"]["colab"] is None


def test_no_page_shows_papermills_parameters_and_each_says_at_what_size_it_ran(pages, site):
    import json

    for name in PAGES[1:]:
        text = pages[name]["text"]  # the notebook's own parameters cell has RESULTS_PATH = "": papermill's a path
        assert 'RESULTS_PATH = "/' not in text and "# Parameters\nSMOKE" not in text, f"{name}: papermill's cell"
    # Built from smoke runs (a test's executed notebooks or --smoke): every notebook page says so under its title.
    smoke = all("Executed at the quick test sizes" in pages[name]["text"] for name in PAGES[1:])
    none = not any("Executed at the quick test sizes" in pages[name]["text"] for name in PAGES[1:])
    assert smoke or none, "some pages say they ran at smoke size, others do not"
    ran = os.environ.get("COURSE_SITE_EXECUTED")
    if ran:  # the notice follows what the notebooks ran with
        said = json.loads((Path(ran) / nbrun.present()[0]).read_text())
        assert smoke == (said.get("metadata", {}).get("papermill", {}).get("parameters", {}).get("SMOKE") is True
                         or any("SMOKE = True" in "".join(c["source"]) for c in said["cells"]
                                if "injected-parameters" in c.get("metadata", {}).get("tags", [])))
    else:
        assert smoke, "a --smoke build must say so on its pages"


def test_every_page_shows_its_plots_with_their_alt_text(pages):
    alt = json.loads((ROOT / "book" / "alt_text.json").read_text())
    shown = 0
    for name in PAGES[1:]:
        texts = set(alt.get(f"{name}.ipynb", {}).values())
        for plot in pages[name]["plots"]:
            assert plot["complete"] and plot["width"] > 0, f"{name}: a plot did not load"
            assert plot["alt"] in texts, f"{name}: a plot without its alt text from book/alt_text.json: {plot['alt']!r}"
        shown += len(pages[name]["plots"])
        assert pages[name]["plots"] or not texts, f"{name}: no plot on the page"
    assert shown >= 20


def test_every_link_on_every_page_resolves(pages, site):
    broken, outside = [], []
    for name, seen in pages.items():
        for href in seen["links"]:
            if href.startswith(("mailto:", "javascript:")):
                continue
            parts = urlsplit(href)
            if parts.scheme or parts.netloc:
                if parts.scheme != "https" or parts.netloc not in LINK_HOSTS:
                    outside.append(f"{name}: {href}")
                continue
            target = unquote(parts.path) or f"{name}.html"
            if not (site / target).is_file():
                broken.append(f"{name}: {href} (no {target})")
            elif parts.fragment and target.endswith(".html"):
                ids = pages[target[: -len(".html")]]["ids"] if target[: -len(".html")] in pages else None
                if ids is not None and parts.fragment not in ids:
                    broken.append(f"{name}: {href} (no #{parts.fragment} on {target})")
    assert broken == []
    assert outside == [], "links to hosts outside LINK_HOSTS, or not https"


def test_a_search_for_a_term_only_notebook_06_uses_lists_06(pages, visit, server):
    holders = [name for name, seen in pages.items() if SEARCH_TERM in seen["text"]]
    assert holders == ["06_mixed_precision"], holders
    page = visit.new_page()
    page.goto(f"{server}/search.html?q={SEARCH_TERM}", wait_until="load")
    page.wait_for_selector("#search-results ul.search li a", timeout=30_000)
    found = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(a => a.getAttribute('href'))")
    page.close()
    assert [h.split("?")[0].split("#")[0] for h in found] == ["06_mixed_precision.html"], found
