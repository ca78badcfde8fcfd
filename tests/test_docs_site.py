"""The documentation site, opened in a real browser: the front page, the API page of
``nn.Conv2d`` and a search for ``Conv2d`` show what a reader needs.

The site is built (strictly: a warning fails) into ``docs/_build/html``, or brought up to
date there when CI's docs step built it already. Headless Chromium (Debian's
``chromium``) renders each page: ``--dump-dom`` gives the DOM after the page's
JavaScript ran (``--virtual-time-budget`` lets the search finish), and
``--screenshot`` saves a PNG under ``screenshots/`` for a person to look at.
Locally the test skips, saying why, without Sphinx or Chromium; under CI
(``CI=true``) their absence fails it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
HTML = DOCS / "_build" / "html"
SHOTS = ROOT / "screenshots"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _need(ok: bool, reason: str) -> None:
    if not ok:
        if IN_CI:
            pytest.fail(f"CI must run the browser test: {reason}")
        pytest.skip(reason)


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def site() -> Path:
    _need(importlib.util.find_spec("sphinx") is not None,
          'Sphinx is not installed (pip install ".[docs]")')
    _need(importlib.util.find_spec("pydata_sphinx_theme") is not None,
          'pydata-sphinx-theme is not installed (pip install ".[docs]")')
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(DOCS), str(HTML)],
        capture_output=True, text=True, timeout=1800, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return HTML


@pytest.fixture(scope="module")
def browser() -> str:
    path = _browser()
    _need(path is not None, "Chromium is not installed (apt-get install chromium)")
    assert path is not None
    return path


def _open(browser: str, url: str, shot: Path) -> str:
    """The page's DOM once its scripts ran; saves its screenshot to ``shot``."""
    common = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        "--no-first-run", "--disable-dev-shm-usage", "--allow-file-access-from-files",
        "--window-size=1280,1000", "--virtual-time-budget=10000",
        f"--user-data-dir={shot.parent / '.profile'}",
    ]
    dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True,
                         timeout=180)
    assert dom.returncode == 0, dom.stderr
    shot.unlink(missing_ok=True)
    png = subprocess.run([*common, f"--screenshot={shot}", url], capture_output=True,
                         text=True, timeout=180)
    assert png.returncode == 0, png.stderr
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"no screenshot of {url}"
    return dom.stdout


def _text(dom: str) -> str:
    """The visible text of a DOM: tags and scripts removed, spaces collapsed."""
    dom = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", dom).split())


@pytest.fixture(scope="module")
def shots() -> Path:
    SHOTS.mkdir(exist_ok=True)
    return SHOTS


def test_front_page(site, browser, shots):
    dom = _open(browser, (site / "index.html").as_uri(), shots / "front-page.png")
    text = _text(dom)
    assert "Reverse-mode automatic differentiation for dense CPU tensors" in text
    for guide in ("Quickstart", "Coming from PyTorch", "Autograd and custom Functions",
                  "API reference"):
        assert guide in text, guide
    # The theme's navigation and the search box were rendered.
    assert 'class="bd-header' in dom and "search" in dom.lower()
    assert "graph.svg" in dom


def test_conv2d_api_page(site, browser, shots):
    page = site / "api" / "generated" / "ferrograd.nn.Conv2d.html"
    assert page.exists()
    dom = _open(browser, page.as_uri(), shots / "api-conv2d.png")
    text = _text(dom)
    assert re.search(r"class ferrograd\.nn\.\s*Conv2d\s*\(", text), text[:500]
    # The signature's parameters and the docstring's own words.
    for word in ("in_channels", "out_channels", "kernel_size", "padding_mode"):
        assert word in text, word
    assert "convolution" in text.lower()


def test_search_finds_conv2d(site, browser, shots):
    url = (site / "search.html").as_uri() + "?q=Conv2d"
    dom = _open(browser, url, shots / "search-conv2d.png")
    # The results are written by the search page's JavaScript: their links prove it ran.
    results = re.findall(r'<li[^>]*>\s*<a[^>]+href="([^"]+)"', dom)
    assert any("ferrograd.nn.Conv2d.html" in href for href in results), results[:20]
    assert "Search finished" in _text(dom) or "found" in _text(dom)
