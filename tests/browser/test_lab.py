"""A learner's notebook as a learner sees it: opened in JupyterLab, in headless Chromium, offline.

A glued number and a figure of the chapter are visible in the rendered Markdown, and a solution is
folded (closed ``<details>``: its text is not shown until the learner opens it). Runs on the notebooks
of the last ``make book`` (``_build/notebooks/<lang>/learner``), English and, where built, Japanese.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from test_pages import CHROMIUM_ARGS, LOCAL_HOSTS, _find_chromium, _unavailable

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "_build" / "notebooks"
CHAPTER = "formula"
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402

NOTEBOOK = chapters.notebook_name(CHAPTER)   # the learner notebook's file name


def _glued_text(lang, key, fmt):
    data = json.loads((ROOT / "_build" / ("" if lang == "en" else lang) / "jupyter_execute" / "book" /
                       f"{CHAPTER}.glue.json").read_text(encoding="utf-8"))
    return format(float(data[key]["data"]["text/plain"]), fmt)


@pytest.fixture(scope="module")
def lab():
    """A JupyterLab server on _build/notebooks (no token, loopback only), rendering every cell."""
    if not (NB / "en" / "learner" / NOTEBOOK).is_file():
        _unavailable("no learner notebooks: run `make book` first")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Path(tempfile.mkdtemp(prefix="book-lab-settings-"))
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))   # render all cells, not just the visible
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTER_PATH=str(Path(sys.prefix) / "share" / "jupyter"))
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
           f"--ServerApp.root_dir={NB}", "--LabApp.news_url=", "--LabApp.check_for_updates_class="
           "jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status", timeout=1)
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"JupyterLab did not start: {proc.stderr.read()[-2000:]}")
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def chromium():
    exe = _find_chromium()
    if exe is None:
        _unavailable("Chromium not found (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, chromium_sandbox=False,
                                     args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_learner_notebook_in_jupyterlab(lab, chromium, lang):
    if not (NB / lang / "learner" / NOTEBOOK).is_file():
        _unavailable(f"no {lang} learner notebooks: run `make book` first")
    page = chromium.new_page(viewport={"width": 1366, "height": 900})
    external = []

    def route(r):
        from urllib.parse import urlsplit

        if urlsplit(r.request.url).hostname in LOCAL_HOSTS:
            r.continue_()
        else:
            external.append(r.request.url)
            r.abort("blockedbyclient")

    page.route("**/*", route)
    try:
        # a workspace of its own (the default one would reopen the other language's notebook in a
        # hidden tab, whose cells the locators below would find first)
        page.goto(f"{lab}/lab/workspaces/book-{lang}/tree/{lang}/learner/{NOTEBOOK}?reset",
                  wait_until="load", timeout=120_000)
        page.wait_for_selector(".jp-RenderedMarkdown img[src^='data:image']", timeout=120_000)
        number = _glued_text(lang, "w00", ".3f")
        markdown = page.locator(".jp-RenderedMarkdown", has_text=number).first
        markdown.scroll_into_view_if_needed()
        assert markdown.is_visible(), f"the glued number {number} is not shown"
        figure = page.locator(".jp-RenderedMarkdown img[src^='data:image']").first
        figure.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=figure.element_handle(),
                               timeout=30_000)
        assert figure.is_visible() and figure.bounding_box()["width"] > 200, "the figure is not shown"
        details = page.locator(".jp-RenderedMarkdown details").first
        details.scroll_into_view_if_needed()
        assert details.evaluate("d => !d.open"), "a solution is open on load"
        hidden_text = details.locator("p").first
        assert not hidden_text.is_visible(), "the solution's text is visible before the learner opens it"
        details.locator("summary").click()
        assert hidden_text.is_visible(), "opening the solution does not show it"
        if lang == "ja":
            assert page.locator(".jp-RenderedMarkdown h1", has_text="公式").count() >= 1 or \
                page.locator(".jp-RenderedMarkdown", has_text="です").count() >= 1, "no Japanese text"
    finally:
        page.close()
    assert not external, f"requests left the machine: {sorted(set(external))}"
