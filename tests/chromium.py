"""Headless Chromium for the browser tests (`make test-browser`): Debian's chromium, driven by Playwright.

Playwright's own browser download is never used. Each browser test module takes its marks from
:func:`marks` (skipped without chromium; a `group` keeps a module with a server or a site of its own on one
xdist worker, so its fixtures start once) and its browser from :func:`launched`.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def marks(group: str | None = None) -> list:
    """A browser module's ``pytestmark``: marked `browser`, skipped without chromium, on one worker if `group`."""
    found = [pytest.mark.browser,
             pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test-browser)")]
    return found + ([pytest.mark.xdist_group(group)] if group else [])


def launched() -> Iterator:
    """A headless Chromium for a module-scoped fixture (``yield from chromium.launched()``); closed after."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield browser
        browser.close()
