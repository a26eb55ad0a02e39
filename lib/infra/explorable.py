"""Figures a reader turns in the static HTML page (no kernel, no network) and in JupyterLab.

An explorable figure is a Vega-Lite chart, built with Altair, over numbers ``lib`` computes in Python:
its controls are Vega-Lite parameters bound to HTML inputs (a native ``<input type="range">`` or radio
buttons: keyboard, touch and screen readers work as on any form), and what a control changes is which
of the precomputed rows the chart shows. :func:`explorable` turns a chart into one cell output:

- in JupyterLab, the Vega-Lite MIME type (``application/vnd.vegalite.v5+json``), which JupyterLab draws
  itself, offline (and the alt text as ``text/plain``);
- in the HTML book (only where ``$BOOK_EXPLORABLE_HTML`` is set, as the book's build sets it), also
  ``text/html``: a ``<figure class="explorable">`` holding the spec and a small script that draws it
  with Vega-Embed (whose JavaScript, vl-convert's bundle, the book serves from its own ``_static``);
  the build (``tools/vegaext.py``) adds a static SVG of the chart at its first setting, shown for print
  and where JavaScript does not run. lib itself needs only Altair.

The drawn chart's Vega view is kept in ``window.bookExplorables[name]`` for the browser test, which
moves each control and compares what is drawn with ``lib``.
"""
from __future__ import annotations

import html
import json
import os
import re

__all__ = ["Explorable", "explorable", "VEGALITE_MIME"]

#: The MIME type JupyterLab 4 draws natively (Altair 5 writes Vega-Lite v5 specs).
VEGALITE_MIME = "application/vnd.vegalite.v5+json"
#: Set (to "1") by the book's HTML build (tools/build.py): the output then carries its HTML figure too.
HTML_BUILD_ENV = "BOOK_EXPLORABLE_HTML"
#: The width (px) a column-wide chart gets in a notebook.
NOTEBOOK_WIDTH = 560
_NAME = re.compile(r"[a-z][a-z0-9-]*")

_EMBED_JS = """
(function () {
  var fig = document.getElementById(%(id)s), tries = 0;
  function draw() {
    if (!window.vegaEmbed) { if (++tries < 400) { setTimeout(draw, 25); } return; }
    var spec = JSON.parse(fig.querySelector("script.explorable-spec").textContent);
    window.vegaEmbed(fig.querySelector(".explorable-live"), spec,
                     {actions: false, renderer: "svg"}).then(function (r) {
      (window.bookExplorables = window.bookExplorables || {})[fig.dataset.explorable] = r.view;
      fig.classList.add("explorable-ready");
    }).catch(function (e) { console.error("explorable " + fig.dataset.explorable + ": " + e); });
  }
  draw();
})();
"""


class Explorable:
    """One explorable figure: ``spec`` (a Vega-Lite v5 dict), ``name`` (its id on the page) and ``alt``
    (what it shows, in the page's language). The HTML build (``tools/vegaext.py``) adds the static SVG."""

    def __init__(self, spec: dict, name: str, alt: str):
        self.spec, self.name, self.alt = spec, name, alt

    def html(self) -> str:
        fid = f"explorable-{self.name}"
        spec = json.dumps(self.spec, ensure_ascii=False).replace("</", "<\\/")
        return (f'<figure class="explorable" id="{fid}" data-explorable="{self.name}" '
                f'aria-label="{html.escape(self.alt, quote=True)}">'
                f'<div class="explorable-live"></div>'
                f'<script type="application/json" class="explorable-spec">{spec}</script>'
                f"<script>{_EMBED_JS % {'id': json.dumps(fid)}}</script>"
                f"</figure>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        # JupyterLab's renderer does not size a "container"-wide chart to its output area: a fixed width
        spec = {**self.spec, "width": NOTEBOOK_WIDTH} if self.spec.get("width") == "container" else self.spec
        bundle = {VEGALITE_MIME: spec, "text/plain": self.alt}
        # The HTML part only for the book's build: JupyterLab ranks text/html above Vega-Lite and, with
        # no Vega-Embed on its page, would show an empty figure instead of drawing the chart itself.
        if os.environ.get(HTML_BUILD_ENV):
            bundle["text/html"] = self.html()
        return bundle

    def __repr__(self):
        return f"Explorable({self.name!r}: {self.alt})"


def explorable(chart, *, name: str, alt: str) -> Explorable:
    """``chart`` (an Altair chart, or a Vega-Lite v5 spec as a dict) as an explorable figure.

    ``name``: its id on the page (lower case, digits and hyphens; unique in the book). ``alt``: one
    sentence saying what the figure shows, in the reader's language (the figure's and the static SVG's
    accessible name, and the chart's ``description``, which Vega gives the drawn SVG as its ``aria-label``).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"explorable: name must be lower-case letters, digits and hyphens, starting with a "
                         f"letter (it becomes an HTML id); got {name!r}")
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError("explorable: alt must be a sentence saying what the figure shows (alt text)")
    spec = chart if isinstance(chart, dict) else chart.to_dict()
    if not isinstance(spec, dict) or "$schema" not in spec or "vega-lite/v5" not in str(spec["$schema"]):
        raise ValueError("explorable: chart must be an Altair 5 chart or a Vega-Lite v5 spec "
                         f"(its $schema names vega-lite/v5); got $schema {spec.get('$schema')!r}"
                         if isinstance(spec, dict) else
                         f"explorable: chart must be an Altair chart or a dict; got {type(chart).__name__}")
    return Explorable({**spec, "description": alt}, name, alt)
