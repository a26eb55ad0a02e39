"""The JavaScript of the book's explorable figures (``lib.explorable``), served by the book itself.

Vega, Vega-Lite and Vega-Embed come as one script bundled by vl-convert (``vl_convert.javascript_bundle``:
the libraries are inside its wheel, so nothing is downloaded, at build time or when a reader opens a
page, from ``file://`` too). The bundle is written once per vl-convert version to
``_build/vega/vega-bundle.js``, copied into each edition's ``_static``, and loaded only by the pages
that have an explorable figure; ``explorable.css`` shows the figure's static SVG where the chart is not
drawn (print, no JavaScript).
"""
from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUNDLE_DIR = ROOT / "_build" / "vega"
BUNDLE = "vega-bundle.js"
#: The Vega-Lite version of the specs (Altair 5 writes v5.20 specs; JupyterLab 4 draws Vega-Lite v5).
VL_VERSION = "5.20"


def write_bundle() -> Path:
    """``_build/vega/vega-bundle.js``, written if missing or from another vl-convert version."""
    import vl_convert as vlc

    stamp = f"/* vl-convert {vlc.__version__}, Vega-Lite {VL_VERSION} */\n"
    path = BUNDLE_DIR / BUNDLE
    if not (path.is_file() and path.read_text(encoding="utf-8").startswith(stamp)):
        BUNDLE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{__import__('os').getpid()}.tmp")
        tmp.write_text(stamp + vlc.javascript_bundle(vl_version=VL_VERSION), encoding="utf-8")
        tmp.replace(path)                       # two editions building side by side: atomic
    return path


def _static(app: Sphinx, config):
    write_bundle()
    config.html_static_path = [*config.html_static_path, str(BUNDLE_DIR)]
    app.add_css_file("explorable.css")


def _page_scripts(app: Sphinx, pagename, templatename, context, doctree):
    if 'class="explorable"' in (context.get("body") or ""):
        app.add_js_file(BUNDLE)                 # this page only (Sphinx: called from html-page-context)


def setup(app: Sphinx):
    app.connect("config-inited", _static)
    app.connect("html-page-context", _page_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
