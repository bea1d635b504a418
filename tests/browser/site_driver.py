"""Open a built course website in headless Chromium and report what a reader's browser saw.

Used by ``tests/test_site.py``. The site is served on localhost (``serve``); every page is opened in the browser
the JupyterLab test uses (``jupyterlab_driver.browser``: Debian's Chromium through playwright), and for each page
``visit`` records its size on disk, its console errors and uncaught exceptions, the requests it made, the plotly
figures and the formulas it holds and how many of them drew, and every link on it; ``broken_links`` resolves the internal ones
(file and anchor) against the files on disk.
"""
from __future__ import annotations

import functools
import http.server
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from .jupyterlab_driver import LOCAL_HOSTS, free_port


@contextmanager
def serve(folder: Path):
    """Serve ``folder`` on 127.0.0.1 (a thread); yield its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class PageVisit:
    page: str  # relative to the site's root
    bytes: int
    console_errors: list = field(default_factory=list)
    requests: list = field(default_factory=list)
    figures: int = 0  # plotly divs in the page
    drawn: int = 0  # of those, how many plotly drew (an SVG inside)
    math: int = 0  # formulas (MyST's math nodes)
    math_drawn: int = 0  # of those, how many MathJax typeset
    plotly_scripts: int = 0  # <script src=...plotly...js> elements
    links: list = field(default_factory=list)  # every href on the page, resolved to absolute URLs
    snapshots: int = 0  # static snapshots of a panel
    snapshot_links: list = field(default_factory=list)
    snapshot_drawn: int = 0  # plotly figures drawn inside the snapshots


def visit(browser, base_url: str, root: Path, rel: str, timeout_s: float = 60) -> PageVisit:
    """Open one page, wait until its figures drew (or ``timeout_s``), and record what happened."""
    v = PageVisit(page=rel, bytes=(root / rel).stat().st_size)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("console", lambda m: v.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: v.console_errors.append(f"uncaught: {e}"))
    page.on("request", lambda r: v.requests.append(r.url))
    try:
        page.goto(f"{base_url}/{rel}", wait_until="load")
        v.figures = page.locator("div.plotly-graph-div").count()
        v.math = page.locator("span.math, div.math").count()
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            v.drawn = page.evaluate("() => [...document.querySelectorAll('div.plotly-graph-div')]"
                                    ".filter(d => d.querySelector('svg.main-svg')).length")
            v.math_drawn = page.evaluate("() => [...document.querySelectorAll('span.math, div.math')]"
                                         ".filter(m => m.querySelector('.MathJax, .MathJax_Display')).length")
            if v.drawn >= v.figures and v.math_drawn >= v.math:
                break
            time.sleep(0.25)
        v.plotly_scripts = page.evaluate("() => [...document.querySelectorAll('script[src]')]"
                                         ".filter(s => /plotly[^/]*\\.js/.test(s.src)).length")
        v.links = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
        v.snapshots = page.locator(".widget-snapshot").count()
        v.snapshot_drawn = page.locator(".widget-snapshot div.plotly-graph-div svg.main-svg").count()
        v.snapshot_links = page.evaluate("() => [...document.querySelectorAll('.widget-snapshot a[href]')]"
                                         ".map(a => a.href)")
    finally:
        page.close()
    return v


def outside(urls: list[str]) -> list[str]:
    """The URLs that leave localhost (data:, blob: and about: stay)."""
    out = []
    for url in urls:
        parsed = urlparse(url)
        if parsed.scheme in ("data", "blob", "about"):
            continue
        if parsed.hostname not in LOCAL_HOSTS:
            out.append(url)
    return out


def broken_links(base_url: str, root: Path, urls: list[str]) -> list[str]:
    """The internal links whose file is missing, or whose #anchor is no id on the target page."""
    bad = []
    ids: dict[Path, set] = {}
    for url in urls:
        if not url.startswith(base_url):
            continue
        parsed = urlparse(url)
        path = root / unquote(parsed.path).lstrip("/")
        if path.is_dir():
            path = path / "index.html"
        if not path.is_file():
            bad.append(url)
            continue
        if parsed.fragment and path.suffix == ".html":
            if path not in ids:
                ids[path] = set(re.findall(r'\sid="([^"]+)"', path.read_text(errors="replace")))
            if unquote(parsed.fragment) not in ids[path]:
                bad.append(url)
    return bad
