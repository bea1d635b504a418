"""Drive a real JupyterLab in headless Chromium: run a notebook as a learner would, look at what it drew.

Used by ``tests/browser/test_jupyterlab.py``. JupyterLab is started on localhost with the app exposed
(``window.jupyterapp``), so a notebook can be run with the same command as Run ▸ Run All Cells.
Chromium is Debian's (``/usr/bin/chromium``); every request the page makes is recorded so the test can
assert that none leaves localhost.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TOKEN = "course-browser-test"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def jupyterlab(root: Path, log_path: Path):
    """Start JupyterLab on ``root`` (localhost, fixed token, no announcements); yield its base URL."""
    port = free_port()
    settings = root / ".lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    # The browser run checks what a learner sees (cells run, views draw, panels answer clicks); nbval runs the
    # same notebooks at their default sizes with every claim raising. Here they run at the quick sizes with
    # claims reported, and record no README figures or readings (those come from nbval's run).
    env = {k: v for k, v in os.environ.items() if k not in ("TUTORIAL_RECORD", "TUTORIAL_READINGS", "TUTORIAL_READINGS_FILE")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", JUPYTER_PLATFORM_DIRS="1",
               JUPYTERLAB_SETTINGS_DIR=str(root / ".lab-settings"), TUTORIAL_SIZE="quick", TUTORIAL_CLAIMS="report")
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={root}", "--expose-app-in-browser",
           "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.extension_manager=readonly", "--allow-root"]
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"JupyterLab exited early; see {log_path}")
                time.sleep(0.5)
        else:
            raise RuntimeError(f"JupyterLab did not answer within 90 s; see {log_path}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@contextmanager
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class NotebookRun:
    """Open ``name`` in JupyterLab, run all cells, and answer questions about what is on screen."""

    def __init__(self, browser, base_url: str, name: str, width: int = 1400, height: int = 1000):
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": width, "height": height})
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(f"{base_url}/lab/tree/{name}?token={TOKEN}&reset")
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        self.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                                    " && window.jupyterapp.shell.currentWidget.sessionContext"
                                    " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                                    " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
                                    timeout=120_000)

    def run_all(self, timeout_s: float = 900) -> float:
        t = time.time()
        self.page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        time.sleep(2)
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            busy = self.page.evaluate("""() => {
                const prompts = [...document.querySelectorAll('.jp-InputArea-prompt')].map(p => p.textContent);
                const ctx = window.jupyterapp.shell.currentWidget.sessionContext;
                const status = ctx.session && ctx.session.kernel ? ctx.session.kernel.status : 'unknown';
                return prompts.some(p => p.includes('*')) || status === 'busy';
            }""")
            if not busy:
                return time.time() - t
            time.sleep(1.5)
        raise TimeoutError(f"notebook still running after {timeout_s} s")

    def errors(self) -> list[str]:
        return self.page.evaluate("""() => [...document.querySelectorAll(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], .jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]')]
            .map(e => e.textContent).filter(t => t.includes('Error') || t.includes('Traceback'))""")

    def count(self, selector: str) -> int:
        return self.page.locator(selector).count()

    def scroll_all(self) -> None:
        """Scroll through the notebook so that JupyterLab renders every cell (it virtualises long ones)."""
        self.page.evaluate("""async () => {
            const nb = document.querySelector('.jp-WindowedPanel-outer') || document.querySelector('.jp-Notebook');
            for (let y = 0; y < nb.scrollHeight; y += 600) { nb.scrollTop = y; await new Promise(r => setTimeout(r, 60)); }
            nb.scrollTop = 0; }""")

    def outside_requests(self) -> list[str]:
        out = []
        for url in self.requests:
            parsed = urlparse(url)
            if parsed.scheme in ("data", "blob", "about", "chrome-extension"):
                continue
            if parsed.hostname not in LOCAL_HOSTS:
                out.append(url)
        return out

    def screenshot(self, path: Path, full: bool = False) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), full_page=full)

    def close(self) -> None:
        self.page.close()


def copy_notebooks(src: Path, dst: Path) -> list[str]:
    dst.mkdir(parents=True, exist_ok=True)
    names = []
    for nb in sorted(src.glob("*.ipynb")):
        shutil.copy(nb, dst / nb.name)
        names.append(nb.name)
    return names
