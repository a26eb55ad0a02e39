"""Open every page of the built book in headless Chromium, offline, and check what a reader sees.

The HTML directory is ``$BOOK_HTML`` (default ``_build/html``; ``make test`` builds it first). The site
is served from a thread on 127.0.0.1; every request to any other host is aborted and counted. A page
fails on:

- a request that leaves the machine (CDN MathJax, widget JavaScript, web fonts, analytics, ...);
- a local resource that is missing (HTTP status >= 400) or a console error;
- a JavaScript error (``pageerror``);
- a broken image (``naturalWidth == 0``) or a figure with no image in it (a missing glued figure);
- math left unrendered (raw ``\\(``, ``\\[``, ``$$`` in the text, a ``.math`` node that MathJax did
  not typeset) or a MathJax error node (``mjx-merror``);
- a failed glue (an empty pasted value, or ``nan``/``inf`` pasted into the prose), an unresolved
  cross-reference (an ``xref`` outside a link, ``??``), a role left as raw text (``{term}`...```),
  a docutils/Sphinx error node, an error traceback in a cell output;
- a live widget in the HTML (a widget view has no JavaScript offline: an empty box). Widget cells are
  tagged ``remove-output`` and followed by a static figure;
- an accessibility violation of impact "serious" or "critical" that axe-core finds with the WCAG 2.0
  and 2.1 rules of levels A and AA (tags ``wcag2a``, ``wcag2aa``, ``wcag21a``, ``wcag21aa``), plus
  ``label-content-name-mismatch`` (WCAG 2.5.3, which axe-core still files as experimental): contrast,
  names of buttons and links, keyboard access to the boxes that scroll, roles, table headers... The
  page is checked as it is after load, at 1366 x 900, in light mode. axe-core's ``axe.min.js`` comes
  from the wheel of ``axe-playwright-python`` (requirements.txt; constraints.txt pins the version), read
  from disk: nothing is fetched. A "moderate" or "minor" finding is not a failure.

The search page is also checked: a query must return results without the network.

Chromium: Debian's ``chromium`` (or ``$CHROMIUM``), driven by Playwright's Python package with
``executable_path`` (Playwright's own browser download is not used). Where Chromium, Playwright or
axe-playwright-python is missing the test skips and says so, unless ``REQUIRE_BROWSER_TEST=1`` (set by ``.ci/run``), where it
fails. ``BROWSER_SCREENSHOTS=/some/dir`` saves a full-page PNG of every page.
"""
from __future__ import annotations

import functools
import http.server
import os
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML_DIR = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html")).resolve()
REQUIRED = os.environ.get("REQUIRE_BROWSER_TEST", "") not in ("", "0")
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
SKIP_DIRS = {"_static", "_sources", "_images", "_downloads", "jupyter_execute"}
sys.path.insert(0, str(ROOT))
from lib.infra.plotting import COLUMN_PX  # noqa: E402 - the figure width the book's figures are sized for

_STATUS = ROOT / "locales" / "ja" / "status.yml"
FINISHED_JA = set()
if _STATUS.is_file():
    import yaml

    FINISHED_JA = set((yaml.safe_load(_STATUS.read_text(encoding="utf8")) or {}).get("finished") or [])
    PENDING_JA = set((yaml.safe_load(_STATUS.read_text(encoding="utf8")) or {}).get("pending") or [])
else:
    PENDING_JA = set()

# Text blocks a reader reads, for the leftover-English check of finished Japanese pages.
TEXT_BLOCKS_JS = r"""
() => {
  const skip = 'pre, code, .cell_input, .cell_output, mjx-container, .MathJax, .bibliography, .citation, .bibtex-citation, ' +
               '.headerlink, .footnote, .pasted-text';
  const out = [];
  for (const el of document.querySelectorAll('article p, article li, article td, article th, article h1, ' +
                                             'article h2, article h3, article figcaption, article dt, ' +
                                             'article dd, article summary, article .admonition-title')) {
    if (el.closest(skip)) continue;
    const clone = el.cloneNode(true);
    for (const s of clone.querySelectorAll(skip + ', ul, ol, p')) s.remove();
    const t = (clone.textContent || '').replace(/\s+/g, ' ').trim();
    if (t) out.push(t);
  }
  return out;
}
"""

CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--no-pings",
]


def _unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (REQUIRE_BROWSER_TEST is set, so this is a failure, not a skip)")
    pytest.skip(reason)


def _pages() -> list[str]:
    if not HTML_DIR.is_dir():
        return []
    return sorted(
        p.relative_to(HTML_DIR).as_posix()
        for p in HTML_DIR.rglob("*.html")
        if not (set(p.relative_to(HTML_DIR).parts[:-1]) & SKIP_DIRS)
    )


PAGES = _pages()


def _find_chromium() -> str | None:
    """The Chromium the trainer's PDFs use too (tools/build.py): $CHROMIUM, else chromium on the PATH."""
    sys.path.insert(0, str(ROOT / "tools"))
    from build import find_chromium  # noqa: PLC0415 - tools/build.py, imported where it is needed

    return find_chromium()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the signature is the stdlib's
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # The browser drops connections it no longer needs (a redirect, a closed page): not an error.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def server():
    if not (HTML_DIR / "index.html").is_file():
        _unavailable(f"no built book at {HTML_DIR}: run `make book` (or set BOOK_HTML) first")
    handler = functools.partial(_QuietHandler, directory=str(HTML_DIR))
    httpd = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    exe = _find_chromium()
    if exe is None:
        _unavailable(
            "Chromium not found: the browser test needs Debian's `chromium` package "
            "(apt-get install -y chromium; .ci/run installs it) or $CHROMIUM set to a Chromium binary"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the Python package `playwright` is missing: run `make install`")
    with sync_playwright() as pw:
        with tempfile.TemporaryDirectory(prefix="book-chromium-", ignore_cleanup_errors=True) as profile:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=exe,
                headless=True,
                chromium_sandbox=False,
                args=CHROMIUM_ARGS,
                service_workers="block",
                viewport={"width": 1366, "height": 900},   # the usual training-room laptop
            )
            try:
                yield context
            finally:
                context.close()


EXTERNAL: list[str] = []  # every request that tried to leave the machine, over all pages
VISITED: list[str] = []  # the pages opened so far
AXE_SECONDS: list[float] = []  # the time axe-core took on each page


# --- Accessibility: axe-core on every page ---------------------------------------------------------------

#: axe-core's tags for WCAG 2.0 and 2.1, levels A and AA.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
#: WCAG 2.1 rules that axe-core files as "experimental", which a run by tag leaves out: run them too.
#: label-content-name-mismatch is WCAG 2.5.3 Label in Name (a button's visible text is in its name).
AXE_EXTRA_RULES = ["label-content-name-mismatch"]
#: The impacts that fail a page.
AXE_FAILING = ("serious", "critical")

# axe-core 4.12.1 fetches a stylesheet's @import (the theme's "../basic.css") relative to the page, not
# to the stylesheet (dequelabs/axe-core#5268): a 404 that this test would report as the page's, and a
# css-orientation-lock check run on the 404 page. While axe runs, CSSImportRule.href returns the URL
# resolved as CSS resolves it (the fix of axe-core's PR #5269); the browser's own getter comes back after.
AXE_RUN_JS = r"""
async ([tags, extra]) => {
  const rules = Object.fromEntries(extra.map((id) => [id, {enabled: true}]));
  const href = Object.getOwnPropertyDescriptor(CSSImportRule.prototype, 'href');
  Object.defineProperty(CSSImportRule.prototype, 'href', {configurable: true, get() {
    const sheet = this.parentStyleSheet;
    return new URL(href.get.call(this), (sheet && sheet.href) || document.baseURI).href;
  }});
  let result;
  try {
    result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, rules, resultTypes: ['violations']});
  } finally {
    Object.defineProperty(CSSImportRule.prototype, 'href', href);
  }
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => n.target.map((t) => Array.isArray(t) ? t.join(' >>> ') : t).join(' ')),
  }));
}
"""


@pytest.fixture(scope="module")
def axe_source():
    """axe-core's ``axe.min.js``, from the axe-playwright-python wheel (no network)."""
    try:
        import axe_playwright_python
    except ImportError:
        _unavailable("the Python package `axe-playwright-python` (axe-core for the accessibility check) "
                     "is missing: run `make install`")
    path = Path(axe_playwright_python.__file__).with_name("axe.min.js")
    if not path.is_file():
        _unavailable(f"{path} missing: axe-playwright-python no longer ships axe-core's axe.min.js")
    return path.read_text(encoding="utf8")


def _axe_problems(page, axe_source: str) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now: rule, impact, what it asks
    for, how many nodes and the first few of them (CSS selectors)."""
    import time

    start = time.perf_counter()
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=axe_source)
    violations = page.evaluate(AXE_RUN_JS, [AXE_TAGS, AXE_EXTRA_RULES])
    AXE_SECONDS.append(time.perf_counter() - start)
    out = []
    for v in violations:
        if v["impact"] in AXE_FAILING:
            nodes = v["nodes"]
            shown = "; ".join(nodes[:4]) + (f"; ... ({len(nodes) - 4} more)" if len(nodes) > 4 else "")
            out.append(f"accessibility (axe {v['id']}, {v['impact']}): {v['help']}: {len(nodes)} node(s): {shown}")
    return out


# Waits for MathJax (when the page has math) and collects every problem the DOM shows.
INSPECT_JS = r"""
async (column) => {
  const problems = [];
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const hasMath = document.querySelector('.math, mjx-container') !== null;
  if (hasMath) {
    const t0 = Date.now();
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
      if (Date.now() - t0 > 20000) { problems.push('MathJax never loaded (math stays raw TeX)'); break; }
      await sleep(50);
    }
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      try { await MathJax.startup.promise; } catch (e) { problems.push('MathJax failed: ' + e); }
    }
  }
  // Images: load lazy ones too, then look for broken ones.
  const imgs = Array.from(document.images);
  imgs.forEach((img) => { img.loading = 'eager'; });
  await Promise.all(imgs.map((img) => img.decode().catch(() => null)));
  for (const img of imgs) {
    if (!img.complete || img.naturalWidth === 0) problems.push('broken image: ' + img.getAttribute('src'));
  }
  const main = document.querySelector('main') || document.body;
  const snippet = (el) => (el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 80);
  // Math.
  for (const el of main.querySelectorAll('mjx-merror, [data-mjx-error]')) {
    problems.push('MathJax error: ' + (el.getAttribute('data-mjx-error') || snippet(el)));
  }
  for (const el of main.querySelectorAll('.math')) {
    if (el.closest('pre, code')) continue;
    if (!el.querySelector('mjx-container')) problems.push('math not typeset: ' + snippet(el));
  }
  // Text outside code: raw TeX, unparsed roles, unresolved numbers.
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      const p = node.parentElement;
      if (!p || p.closest('pre, code, script, style, textarea, .highlight, .cell_input, .cell_output, mjx-container, mjx-assistive-mml, .MathJax'))
        return NodeFilter.FILTER_REJECT;
      return NodeFilter.FILTER_ACCEPT;
    },
  });
  const text = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) text.push(n.textContent);
  const prose = text.join(' ');
  const patterns = [
    [/\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{/, 'raw TeX left in the text'],
    [/\{(glue|glue:text|glue:any|glue:figure|glue:math|term|cite|doc|ref|numref|eq|prf:ref|cite:p|cite:t)\}`/, 'a role left as raw text'],
    [/\?\?/, '"??" (an unresolved number or reference)'],
  ];
  for (const [re, what] of patterns) {
    const m = prose.match(re);
    if (m) {
      const i = prose.indexOf(m[0]);
      problems.push(what + ': ...' + prose.slice(Math.max(0, i - 40), i + 40).replace(/\s+/g, ' ') + '...');
    }
  }
  // Cross-references and errors that Sphinx/docutils leave in the HTML.
  for (const el of main.querySelectorAll('.xref')) {
    if (!el.closest('a')) problems.push('unresolved cross-reference: ' + snippet(el));
  }
  for (const el of main.querySelectorAll('.problematic, .system-message, .system-messages')) {
    problems.push('docutils error node: ' + snippet(el));
  }
  for (const el of main.querySelectorAll('.cell_output .traceback, .cell_output .output.error, .cell_output .ansi-red-fg')) {
    problems.push('error output in a cell: ' + snippet(el));
  }
  // Glue.
  for (const el of main.querySelectorAll('.pasted-text, .pasted-inline, .pasted-math')) {
    const t = (el.textContent || '').trim();
    if (t === '' && !el.querySelector('img, svg, mjx-container')) problems.push('empty glued value');
    if (/^[-+]?(nan|inf|infinity)$/i.test(t)) problems.push('glued value is ' + t);
  }
  for (const fig of main.querySelectorAll('figure, div.figure')) {
    if (!fig.querySelector('img, svg, object, video, canvas, mjx-container, table'))
      problems.push('figure without an image (a missing glued figure?): ' + snippet(fig));
  }
  // Reading comfort at 1366 x 900: no code or output block wider than its box (sideways scrolling),
  // and no figure shown narrower than lib.plotting assumes (COLUMN_PX, passed in as `column`).
  for (const pre of main.querySelectorAll('article pre')) {
    if (pre.offsetParent !== null && pre.scrollWidth > pre.clientWidth + 1)
      problems.push(`clipped code/output block (${pre.scrollWidth} px in a ${pre.clientWidth}-px box): ` +
                    (pre.textContent || '').split('\n').sort((a, b) => b.length - a.length)[0].slice(0, 60));
  }
  for (const img of main.querySelectorAll('article figure img')) {
    const shown = img.getBoundingClientRect().width;
    if (img.offsetParent !== null && shown + 2 < Math.min(img.naturalWidth, column))
      problems.push(`figure shown ${Math.round(shown)} px wide, below min(its ${img.naturalWidth} px, the ${column}-px column lib.plotting assumes): ` + img.getAttribute('src'));
  }
  // Widgets: a view with no JavaScript renders as an empty box.
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"], .jupyter-widgets, .widget-area');
  if (views.length) problems.push(views.length + ' live widget output(s) in the HTML: tag the widget cell remove-output and show the static figure');
  return problems;
}
"""


class _Watch:
    """Block and record requests that leave the machine; record errors, for one browser page."""

    def __init__(self, page):
        self.external: list[str] = []
        self.problems: list[str] = []
        page.route("**/*", self._route)
        page.on("pageerror", lambda exc: self.problems.append(f"JavaScript error: {exc}"))
        page.on("console", self._console)
        page.on("response", self._response)

    def _route(self, r):
        if urlsplit(r.request.url).hostname in LOCAL_HOSTS:
            r.continue_()
        else:
            self.external.append(r.request.url)
            r.abort("blockedbyclient")

    def _console(self, msg):
        # A blocked request also logs a console error; it is reported (once) as a blocked request.
        if msg.type == "error" and "ERR_BLOCKED_BY_CLIENT" not in msg.text:
            self.problems.append(f"console error: {msg.text} ({msg.location.get('url', '')})")

    def _response(self, resp):
        if resp.status >= 400:
            self.problems.append(f"HTTP {resp.status} for {resp.url}")

    def report(self) -> list[str]:
        blocked = [f"request leaving the machine (blocked): {u}" for u in sorted(set(self.external))]
        return self.problems + blocked


@pytest.mark.parametrize("page_path", PAGES or ["<no pages>"])
def test_page(browser, server, axe_source, page_path):
    """One page: no request leaves the machine, nothing is broken or left unrendered, and axe-core
    finds no serious or critical accessibility violation."""
    if page_path == "<no pages>":
        _unavailable(f"no pages found under {HTML_DIR}: build the book first")
    page = browser.new_page()
    watch = _Watch(page)
    found: list[str] = []
    try:
        page.goto(f"{server}/{page_path}", wait_until="load", timeout=60_000)
        body = (HTML_DIR / page_path).read_text(encoding="utf8").lower()
        if 'http-equiv="refresh"' in body or "window.location.replace" in body:
            # A redirect page (index.html -> the root page): check the page it lands on.
            page.wait_for_url(lambda url: not url.endswith("/" + page_path), timeout=30_000)
            page.wait_for_load_state("load", timeout=60_000)
        found += page.evaluate(INSPECT_JS, COLUMN_PX)
        found += _edition_problems(page, page_path)
        page.wait_for_load_state("networkidle", timeout=30_000)
        found += _axe_problems(page, axe_source)
        if page_path == "search.html":
            found += _search_problems(page, server, "", ["softmax"])
        if page_path == "ja/search.html":
            found += _search_problems(page, server, "ja/", ["ソフトマックス", "ソフトマックス 勾配"])
        shots = os.environ.get("BROWSER_SCREENSHOTS")
        if shots:
            out = Path(shots) / (page_path.replace("/", "__").removesuffix(".html") + ".png")
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), full_page=True)
    finally:
        page.close()
    EXTERNAL.extend(watch.external)
    VISITED.append(page_path)
    problems = watch.report() + found
    assert not problems, f"{page_path}: {len(problems)} problem(s):\n  " + "\n  ".join(problems)


JAPANESE = __import__("re").compile(r"[\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef]")  # kana, kanji, Japanese punctuation
ENGLISH_RUN = __import__("re").compile(r"[A-Za-z]{2,}(?:[ ,.;:'’-]+[A-Za-z]{2,}){3}")


def _edition_problems(page, page_path) -> list[str]:
    """A chapter page links to the same page in the other edition; a finished Japanese page has no
    paragraph left in English and no 'translation pending' notice; a pending one has the notice."""
    out = []
    if page_path.removeprefix("ja/").startswith("book/"):
        hrefs = page.eval_on_selector_all("a.book-language-switch", "els => els.map(e => e.getAttribute('href'))")
        if not hrefs:
            out.append("no link to the other edition (a.book-language-switch)")
        for href in hrefs:
            target = (HTML_DIR / page_path).parent.joinpath(href).resolve()
            if not target.is_file():
                out.append(f"the language link {href!r} leads to a page that does not exist")
    doc = page_path.removeprefix("ja/").removesuffix(".html")
    notices = page.locator(".translation-pending").count()
    if page_path.startswith("ja/") and doc in PENDING_JA:
        if notices != 1:
            out.append(f"a Japanese page whose translation is pending shows {notices} notices (want 1)")
    elif notices:
        out.append("a 'translation pending' notice on a page that is not pending")
    if page_path.startswith("ja/") and doc in FINISHED_JA:
        for text in page.evaluate(TEXT_BLOCKS_JS):
            if not JAPANESE.search(text) and ENGLISH_RUN.search(text):
                out.append(f"English left on a finished Japanese page: {text[:80]!r}")
    return out


def test_entry_page_opens_the_readers_language(browser, server):
    """index.html opens the last edition chosen, else the browser's language; it also works from file://."""
    root = HTML_DIR / "index.html"
    if not root.is_file() or not (HTML_DIR / "ja").is_dir():
        _unavailable(f"no two-edition build at {HTML_DIR}: run `make book` first")
    landed = {}
    for base in (server, root.parent.as_uri()):
        for choice in ("ja", "en"):
            page = browser.new_page()
            try:
                page.goto(f"{base}/search.html", wait_until="load")
                page.evaluate(f"localStorage.setItem('book-language', '{choice}')")
                page.goto(f"{base}/index.html")
                page.wait_for_url("**/book/intro.html", timeout=30_000)
                landed[base, choice] = page.url
            finally:
                page.close()
    page = browser.new_page()
    try:
        page.add_init_script("Object.defineProperty(navigator, 'languages', {get: () => ['ja-JP', 'ja']});")
        page.goto(f"{server}/search.html", wait_until="load")
        page.evaluate("localStorage.removeItem('book-language')")
        page.goto(f"{server}/index.html")
        page.wait_for_url("**/book/intro.html", timeout=30_000)
        landed["browser", "ja"] = page.url
    finally:
        page.close()
    wrong = {k: v for k, v in landed.items() if ("/ja/" in v) != (k[1] == "ja")}
    assert not wrong, f"the entry page opened the wrong edition: {wrong}"


# A page with every defect the checks look for: the checks must find each one (so they can fail).
CANARY = r"""<!DOCTYPE html><html><head>
<script src="https://unpkg.com/@jupyter-widgets/html-manager@1/dist/embed-amd.js"></script>
<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Lato">
</head><body><main>
<p>The scale is \(1/\sqrt{d_k}\) and see Figure ?? for {term}`softmax`.</p>
<p><span class="xref std std-ref">fig-missing</span> and <span class="pasted-text">nan</span></p>
<img src="_images/does-not-exist.png" alt="">
<script type="application/vnd.jupyter.widget-view+json">{"model_id": "x"}</script>
<article class="bd-article"><pre style="width: 200px; overflow: auto">print("a line far longer than the two hundred pixels of its box, so that it must scroll")</pre></article>
</main></body></html>"""


def test_checks_catch_a_broken_page(browser, server):
    """The detectors are not blind: a page with known defects is flagged for each of them."""
    page = browser.new_page()
    watch = _Watch(page)
    try:
        page.goto(f"{server}/genindex.html", wait_until="load", timeout=60_000)
        page.set_content(CANARY, wait_until="load")
        found = page.evaluate(INSPECT_JS, COLUMN_PX)
        found += _edition_problems(page, "book/canary.html")
    finally:
        page.close()
    report = "\n".join(watch.report() + found)
    expected = {
        "widget JavaScript from a CDN": "unpkg.com",
        "web font from a CDN": "fonts.googleapis.com",
        "broken image": "broken image",
        "missing local file": "HTTP 404",
        "raw TeX": "raw TeX",
        "raw role": "role left as raw text",
        "unresolved number": "??",
        "unresolved reference": "unresolved cross-reference",
        "nan glued": "glued value is nan",
        "live widget": "live widget",
        "clipped code block": "clipped code/output block",
        "no language link": "no link to the other edition",
    }
    missed = [what for what, needle in expected.items() if needle not in report]
    assert not missed, f"the checks missed: {missed}\nthey reported:\n{report}"


# A page with the accessibility defects the book had (issue 37): axe must find each, and fail on it.
AXE_CANARY = """<!DOCTYPE html><html lang="en"><head><title>canary</title></head><body><main>
<h1>Canary</h1>
<div style="background: #ecf3ff"><p>See <a href="#x" style="color: #176de8">equation (8.2)</a>.</p></div>
<button type="button" aria-label="Toggle hidden content">Show code cell source</button>
<div role="list"><div role="doc-biblioentry">Vaswani et al. (2017)</div></div>
<table style="display: block; width: 120px; overflow-x: auto"><tr><th>d_k</th><th>a very long header</th>
<th>another long header</th></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>
</main></body></html>"""


def test_axe_catches_the_defects_the_book_had(browser, server, axe_source):
    """The accessibility check is not blind: on a page with the defects issue 37 found (4.29:1 link
    contrast, a button whose visible text is not in its name, a list of deprecated bibliography roles,
    a box that scrolls but that Tab cannot reach), it fails with each rule's name."""
    page = browser.new_page()
    try:
        page.goto(f"{server}/genindex.html", wait_until="load", timeout=60_000)
        page.set_content(AXE_CANARY, wait_until="load")
        report = "\n".join(_axe_problems(page, axe_source))
    finally:
        page.close()
    rules = ["color-contrast", "label-content-name-mismatch", "aria-required-children",
             "scrollable-region-focusable"]
    missed = [rule for rule in rules if f"axe {rule}," not in report]
    assert not missed, f"axe-core missed: {missed}\nit reported:\n{report}"


def _search_problems(page, server, prefix, queries) -> list[str]:
    """Full-text search works offline: queries for words every chapter uses find pages (in the
    Japanese edition also a two-word query, which the search page splits at the space)."""
    from urllib.parse import quote

    out = []
    for q in queries:
        page.goto(f"{server}/{prefix}search.html?q={quote(q)}", wait_until="load", timeout=60_000)
        try:
            page.wait_for_function(
                "document.querySelectorAll('#search-results ul.search li').length > 0", timeout=30_000
            )
        except Exception:  # noqa: BLE001 - playwright's TimeoutError; report it as a problem with the page
            out.append(f"search for {q!r} returned no results")
    return out


def test_every_toc_page_was_built():
    """The page list is the book: every file in _toc.yml has a page, so no page escapes the check."""
    if not PAGES:
        _unavailable(f"no pages found under {HTML_DIR}: build the book first")
    import yaml  # installed with jupyter-book

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf8"))
    files = [toc["root"]] + [
        ch["file"] for part in toc.get("parts", []) for ch in part.get("chapters", [])
    ]
    missing = [f for f in files if f"{f}.html" not in PAGES]
    assert not missing, f"pages in _toc.yml with no HTML under {HTML_DIR}: {missing}"


def test_no_request_left_the_machine():
    """The whole-book count, for the record (each page test already fails on its own)."""
    if not VISITED:
        _unavailable("no page was opened in the browser, so there is no request count")
    print(f"{len(VISITED)} pages opened; {len(EXTERNAL)} requests tried to leave the machine; "
          f"axe-core took {sum(AXE_SECONDS):.0f} s on {len(AXE_SECONDS)} pages")
    assert EXTERNAL == [], f"{len(EXTERNAL)} request(s) tried to leave the machine: {sorted(set(EXTERNAL))}"


@pytest.mark.parametrize("paper", ["A4", "Letter"])
@pytest.mark.parametrize("edition", ["", "ja/"], ids=["en", "ja"])
def test_cheat_sheet_prints_on_one_page(browser, server, edition, paper):
    """The cheat sheet is meant to be printed: one sheet of A4 or Letter, in either language, with a
    browser's usual 10 mm margins (the theme's print style hides the navigation)."""
    path = HTML_DIR / edition / "book" / "cheatsheet.html"
    if not path.is_file():
        _unavailable(f"{path} missing: build the book first")
    page = browser.new_page()
    try:
        page.goto(f"{server}/{edition}book/cheatsheet.html", wait_until="networkidle", timeout=60_000)
        page.wait_for_function("() => [...document.querySelectorAll('.math')].every("
                               "m => m.querySelector('mjx-container'))", timeout=60_000)
        page.emulate_media(media="print")
        pdf = page.pdf(format=paper, margin={k: "10mm" for k in ("top", "right", "bottom", "left")})
    finally:
        page.close()
    pages = len(__import__("re").findall(rb"/Type\s*/Page(?![a-zA-Z])", pdf))
    assert pages >= 1, "no page found in the PDF (the counter is broken)"
    assert pages == 1, f"{edition or 'en/'}book/cheatsheet.html prints on {pages} {paper} pages, not one"


# --- What a reader sees: the language switch at both widths, no sideways scroll at 390 px -------------

#: The widths every page is checked at: the training-room laptop and a phone.
WIDTHS = {"laptop": (1366, 900), "phone": (390, 844)}
BOOK_PAGES = [p for p in PAGES if p.removeprefix("ja/").startswith("book/")]

SWITCH_JS = r"""
() => {
  const a = document.querySelector('a.book-language-switch');
  if (!a) return {missing: true};
  const r = a.getBoundingClientRect();
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const hit = document.elementFromPoint(x, y);
  const top = document.elementFromPoint(x, r.top + 2);
  const describe = (el) => el ? (el.tagName.toLowerCase() + (el.className && typeof el.className === 'string'
                                   ? '.' + el.className.trim().split(/\s+/).join('.') : '')) : 'nothing';
  return {
    box: [Math.round(r.left), Math.round(r.top), Math.round(r.right), Math.round(r.bottom)],
    view: [window.innerWidth, window.innerHeight],
    centre: hit === a || a.contains(hit), centreHit: describe(hit),
    topEdge: top === a || a.contains(top), topHit: describe(top),
    scrollWidth: document.documentElement.scrollWidth,
  };
}
"""


def _switch_problems(s: dict) -> list[str]:
    if s.get("missing"):
        return ["no language switch (a.book-language-switch)"]
    out = []
    left, top, right, bottom = s["box"]
    width, height = s["view"]
    if left < 0 or top < 0 or right > width or bottom > height:
        out.append(f"language switch {s['box']} not inside the {width}x{height} viewport")
    if not s["centre"]:
        out.append(f"language switch covered at its centre by {s['centreHit']}")
    if not s["topEdge"]:
        out.append(f"language switch covered at its top edge by {s['topHit']}")
    if s["scrollWidth"] > width + 1:
        out.append(f"page is {s['scrollWidth']} px wide at {width} px: it scrolls sideways")
    return out


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("page_path", BOOK_PAGES or ["<no pages>"])
def test_language_switch_is_visible_and_no_sideways_scroll(browser, server, page_path, width):
    """The link to the other edition is fully visible and clickable (the element at its centre and at
    its top edge is the link itself), inside the viewport, and the page does not scroll sideways; at
    the laptop's 1366 px and at a phone's 390 px. Clicking it opens the same page in the other edition."""
    if page_path == "<no pages>":
        _unavailable(f"no pages found under {HTML_DIR}: build the book first")
    page = browser.new_page()
    try:
        page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width])))
        page.goto(f"{server}/{page_path}", wait_until="load", timeout=60_000)
        problems = _switch_problems(page.evaluate(SWITCH_JS))
        if not problems:
            page.click("a.book-language-switch", timeout=10_000)
            page.wait_for_load_state("load")
            other = page_path.removeprefix("ja/") if page_path.startswith("ja/") else "ja/" + page_path
            if not page.url.endswith("/" + other):
                problems.append(f"the switch opened {page.url}, not {other}")
    finally:
        page.close()
    assert not problems, f"{page_path} at {width} ({WIDTHS[width][0]} px):\n  " + "\n  ".join(problems)


def test_switch_checks_can_fail():
    covered = {"box": [10, -13, 80, 20], "view": [390, 844], "centre": False, "centreHit": "div.x",
               "topEdge": False, "topHit": "div.navbar-header-items", "scrollWidth": 431}
    assert len(_switch_problems(covered)) == 4
    assert _switch_problems({"missing": True})


# --- Search: the glossary's terms and the code words find their pages, in both editions ---------------

CODE_WORDS = ("float16", "float32", "bfloat16", "scale", "softcap", "softmax", "scaled_dot_product_attention")


def _glossary_queries():
    sys.path.insert(0, str(ROOT / "tools"))
    import jalint

    terms = jalint.glossary_terms()
    ja = {ja: "book/glossary.html" for ja in terms.values()}
    en = {en: "book/glossary.html" for en in terms}
    # the code words the chapters teach; a word no page uses yet (softcap arrives with a later chapter)
    # is not expected, but every word that a page's source has must be found
    sources = " ".join(p.read_text(encoding="utf-8") for p in (ROOT / "book").iterdir()
                       if p.suffix == ".md")
    code = {w: None for w in CODE_WORDS if w in sources}
    assert {"float16", "float32", "scale"} <= set(code), "the chapters no longer use float16/float32/scale?"
    return {"": {**en, **code}, "ja/": {**ja, **code}}


SEARCH_JS = r"""
async (timeout) => {
  // Sphinx appends the results one by one; they are complete when the list has stopped growing.
  // (The summary line cannot be the signal: the Japanese edition leaves it empty.)
  const t0 = Date.now();
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  let last = -1, since = Date.now();
  while (Date.now() - t0 < timeout) {
    const items = document.querySelectorAll('#search-results ul.search li');
    const summary = document.querySelector('#search-results .search-summary, #search-results p');
    if (items.length !== last) { last = items.length; since = Date.now(); }
    else if (items.length && Date.now() - since > 1000)
      return Array.from(items).map((li) => li.querySelector('a')?.getAttribute('href') || '');
    else if (!items.length && summary && summary.textContent.trim() && Date.now() - since > 1000)
      return [];
    await sleep(100);
  }
  return null;
}
"""


@pytest.mark.parametrize("edition", ["", "ja/"], ids=["en", "ja"])
def test_search_finds_every_glossary_term_and_code_word(browser, server, edition):
    """Every glossary term (English in the English edition, the preferred Japanese term in the
    Japanese one) finds the glossary page, and float16, float32, scale and softcap find pages."""
    from urllib.parse import quote

    if not (HTML_DIR / edition / "search.html").is_file():
        _unavailable(f"no {edition or 'English '}search page under {HTML_DIR}: build the book first")
    page = browser.new_page()
    failed = []
    try:
        for query, must in _glossary_queries()[edition].items():
            for _attempt in range(2):       # a search that timed out (None) on a busy machine runs once more
                page.goto(f"{server}/{edition}search.html?q={quote(query)}", wait_until="load", timeout=60_000)
                hrefs = page.evaluate(SEARCH_JS, 20_000)
                if hrefs is not None:
                    break
            if hrefs is None:
                failed.append(f"{query!r}: no answer within 20 s, twice")
            elif not hrefs:
                failed.append(f"{query!r}: no result")
            elif must and not any(must in h for h in hrefs):
                failed.append(f"{query!r}: {len(hrefs)} result(s), not {must}")
    finally:
        page.close()
    assert not failed, f"{edition or 'en/'}search.html: {len(failed)} term(s) not found:\n  " + "\n  ".join(failed)
