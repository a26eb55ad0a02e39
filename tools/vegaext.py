"""The JavaScript of the book's explorable figures (``lib.explorable``), served by the book itself.

Vega, Vega-Lite and Vega-Embed come as one script bundled by vl-convert (``vl_convert.javascript_bundle``:
the libraries are inside its wheel, so nothing is downloaded, at build time or when a reader opens a
page, from ``file://`` too). The bundle is written once per vl-convert version to
``_build/vega/vega-bundle.js``, copied into each edition's ``_static``, and loaded only by the pages
that have an explorable figure. Into each figure it puts a static SVG of the chart at its first setting,
drawn by vl-convert from the spec the page carries; ``explorable.css`` shows it where the chart is not
drawn (print, no JavaScript) and hides it once Vega-Embed has drawn the chart.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

from sphinx.application import Sphinx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUNDLE_DIR = ROOT / "_build" / "vega"
BUNDLE = "vega-bundle.js"
#: The Vega-Lite version of the specs (Altair 5 writes v5.20 specs; JupyterLab 4 draws Vega-Lite v5).
VL_VERSION = "5.20"
#: The width (px) of the static SVG of a chart whose live form fills its column (width "container").
STATIC_WIDTH = 560
FIGURE = re.compile(r'(<figure class="explorable"[^>]*>)(.*?)(<script type="application/json" '
                    r'class="explorable-spec">)(.*?)(</script>)', re.S)
_fonts = False


def write_bundle() -> Path:
    """``_build/vega/vega-bundle.js``, written if missing or from another vl-convert version."""
    import vl_convert as vlc

    stamp = f"/* vl-convert {vlc.__version__}, Vega-Lite {VL_VERSION}, in a function scope */\n"
    path = BUNDLE_DIR / BUNDLE
    if not (path.is_file() and path.read_text(encoding="utf-8").startswith(stamp)):
        BUNDLE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{__import__('os').getpid()}.tmp")
        # In a function scope: the bundle's top-level declarations (`const _`, ...) would otherwise share
        # the page's global scope with the theme's scripts ("Identifier '_' has already been declared").
        # Its last statements set window.vegaEmbed, window.vega and window.vegaLite.
        body = vlc.javascript_bundle(vl_version=VL_VERSION)
        tmp.write_text(stamp + "(function () {\n" + body + "\n})();\n", encoding="utf-8")
        tmp.replace(path)                       # two editions building side by side: atomic
    return path


def _static(app: Sphinx, config):
    write_bundle()
    config.html_static_path = [*config.html_static_path, str(BUNDLE_DIR)]
    app.add_css_file("explorable.css")


def static_svg(spec: dict) -> str:
    """The chart at its first setting as SVG (vl-convert), with the chart's description as its name."""
    global _fonts
    import vl_convert as vlc

    if not _fonts:                              # the Japanese figures' font, so that text is measured right
        import matplotlib_fontja

        vlc.register_font_directory(str(Path(matplotlib_fontja.__file__).parent / "fonts"))
        _fonts = True
    if spec.get("width") == "container":
        spec = {**spec, "width": STATIC_WIDTH}
    svg = vlc.vegalite_to_svg(spec, vl_version=VL_VERSION).strip()
    label = html.escape(spec.get("description", ""), quote=True)
    return re.sub(r"^<svg\b", f'<svg role="img" aria-label="{label}"', svg, count=1)


def with_static_figures(body: str) -> str:
    """``body`` with a static SVG inside each explorable figure that has none."""
    def one(m):
        if "explorable-static" in m.group(2):
            return m.group(0)
        spec = json.loads(m.group(4).replace("<\\/", "</"))
        return (m.group(1) + f'<div class="explorable-static">{static_svg(spec)}</div>' + m.group(2)
                + m.group(3) + m.group(4) + m.group(5))

    return FIGURE.sub(one, body)


def _page_scripts(app: Sphinx, pagename, templatename, context, doctree):
    body = context.get("body") or ""
    if 'class="explorable"' in body:
        context["body"] = with_static_figures(body)
        app.add_js_file(BUNDLE)                 # this page only (Sphinx: called from html-page-context)


def setup(app: Sphinx):
    app.connect("config-inited", _static)
    app.connect("html-page-context", _page_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
