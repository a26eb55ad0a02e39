"""The explorable figures of the HTML book, driven as a reader drives them: offline, with the keyboard.

For each figure of ``EXPLORABLES`` and each edition, in headless Chromium on the built site (served on
127.0.0.1, every other host blocked, as in ``test_pages.py``):

- the chart is drawn (Vega-Embed ran; the static SVG is there for print and for pages without
  JavaScript, and hidden on screen once the chart is drawn);
- the controls are reached and moved with the keyboard (Tab focus, arrow keys, Home/End), and what the
  chart then draws (the data of its marks, read from the Vega view) equals the rows that
  ``lib.explore`` computes for that setting, at two settings that draw different things;
- the labels are in the page's language (Japanese labels on the Japanese pages);
- nothing is cut off on a 390 px wide phone screen, and no request leaves the machine.
"""
from __future__ import annotations

import json
import math

import pytest

import lib
from test_pages import HTML_DIR, _unavailable, _Watch, browser, server  # noqa: F401 - fixtures

#: page -> [(figure name, lib.explore function of its rows, the rows' key in its result (None: a list),
#: the mark whose data is drawn, the keys that select a setting, the field that orders the drawn items,
#: the field drawn)]
EXPLORABLES = {
    "book/test_scores.html": [
        ("test-scores-class", "class_softmax_data", None, "layer_0_marks", ("subjects", "scaled"), "rank",
         "weight"),
    ],
    "book/softmax_saturation.html": [
        ("softmax-one-query", "one_query_data", "weights", "concat_0_layer_0_marks", ("log2dk", "scaled"), "key",
         "weight"),
    ],
    "book/variance.html": [
        ("variance-spread", "variance_spread_data", None, "layer_2_marks", ("n",), "log2dk", "mid"),
    ],
    "book/tuning.html": [
        # the rows come from the chapter's training runs, too long to repeat here: the test compares
        # what is drawn with the rows the page embeds (lib.explore.sweep_rows of those runs), and the
        # line with the median of the points
        ("tuning-sweep", None, None, "layer_0_marks", ("opt", "measure"), "id", "value"),
    ],
    "book/caveats.html": [
        ("caveats-correlated-scores", "correlated_scores_data", "bins", "layer_0_marks", ("rho", "log2dk"), "x0",
         "density"),
    ],
}

DRAWN_JS = """
([name, mark]) => {
  const view = (window.bookExplorables || {})[name];
  if (!view) return null;
  const out = [];
  (function walk(node) {
    if (node.name === mark && node.items) {
      for (const item of node.items) out.push(item.datum);
      return;
    }
    for (const child of node.items || []) walk(child);
  })(view.scenegraph().root);
  return {drawn: out, signals: Object.fromEntries(
    Array.from(document.querySelectorAll('[data-explorable="' + name + '"] .vega-bindings input'))
      .filter(i => i.type !== 'radio' || i.checked).map(i => [i.name, Number(i.value)])
      .concat(Array.from(document.querySelectorAll('[data-explorable="' + name + '"] .vega-bindings select'))
      .map(s => [s.name, Number(s.value)])))};
}
"""


def _rows(function: str, part: str | None) -> list[dict]:
    out = getattr(lib.explore, function)()
    return out if part is None else out[part]


def _embedded_rows(spec: dict) -> list[dict]:
    """The rows a layered spec draws, where Altair put them (top-level ``data`` or the first layer's)."""
    data = spec.get("data") or spec["layer"][0]["data"]
    return data["values"] if "values" in data else spec["datasets"][data["name"]]


def _setting(rows, keys, values, order):
    return sorted((r for r in rows if all(math.isclose(r[k], v, abs_tol=1e-9) for k, v in zip(keys, values))),
                  key=lambda r: r[order])


def _open(browser, server, url, width=1200):  # noqa: F811
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    watch = _Watch(page)
    page.goto(url)
    return page, watch


def _drawn(page, name, mark):
    page.wait_for_function("n => window.bookExplorables && window.bookExplorables[n]", arg=name, timeout=15000)
    page.wait_for_timeout(150)                     # the view re-renders after an input event
    return page.evaluate(DRAWN_JS, [name, mark])


@pytest.mark.parametrize("edition", ["", "ja/"], ids=["en", "ja"])
@pytest.mark.parametrize("page_path", sorted(EXPLORABLES))
def test_explorable_figures_turn_offline_with_the_keyboard(browser, server, page_path, edition):  # noqa: F811
    lang = "ja" if edition else "en"
    if not (HTML_DIR / edition / page_path).is_file():
        _unavailable(f"{edition}{page_path} was not built")
    page, watch = _open(browser, server, f"{server}/{edition}{page_path}")
    try:
        for name, function, part, mark, keys, order, field in EXPLORABLES[page_path]:
            fig = page.locator(f'figure.explorable[data-explorable="{name}"]')
            assert fig.count() == 1, f"{name}: no explorable figure on {edition}{page_path}"
            assert fig.locator(".explorable-static svg").count() == 1, f"{name}: no static SVG for print"
            rows = (_rows(function, part) if function else
                    _embedded_rows(json.loads(fig.locator("script.explorable-spec").text_content())))
            first = _drawn(page, name, mark)
            assert first is not None, f"{name}: the chart was not drawn"
            assert fig.locator(".explorable-static").is_hidden(), f"{name}: static SVG still shown on screen"
            # the setting shown first, as lib computes it
            before = tuple(first["signals"][k] for k in keys)
            want = _setting(rows, keys, before, order)
            assert want, f"{name}: lib has no rows for the first setting {dict(zip(keys, before))}"
            got = sorted(first["drawn"], key=lambda d: d[order])
            assert [d[field] for d in got] == pytest.approx([r[field] for r in want], abs=1e-12), name
            # move every control with the keyboard: each slider one step left, then to its start; a radio
            # group to its next button
            sliders = fig.locator('input[type="range"]')
            for i in range(sliders.count()):
                sliders.nth(i).focus()
                page.keyboard.press("ArrowLeft")
                page.keyboard.press("Home")
            radios = fig.locator('input[type="radio"]')
            if radios.count():
                radios.first.focus()
                page.keyboard.press("ArrowRight")
            menus = fig.locator(".vega-bindings select")
            for i in range(menus.count()):
                menus.nth(i).focus()
                page.keyboard.press("Home")
                page.keyboard.press("ArrowDown")
            second = _drawn(page, name, mark)
            after = tuple(second["signals"][k] for k in keys)
            assert after != before, f"{name}: the keyboard did not move the controls ({before} -> {after})"
            want2 = _setting(rows, keys, after, order)
            got2 = sorted(second["drawn"], key=lambda d: d[order])
            assert [d[field] for d in got2] == pytest.approx([r[field] for r in want2], abs=1e-12), name
            assert [d[field] for d in got] != [d[field] for d in got2], \
                f"{name}: moving the controls did not change what is drawn"
            if lang == "ja":
                labels = fig.locator(".vega-bindings").inner_text() + " ".join(
                    fig.locator(".explorable-live svg text").all_text_contents())
                assert any("\u3040" <= ch <= "\u9fff" for ch in labels), f"{name}: no Japanese label"
        assert not watch.report(), watch.report()
    finally:
        page.close()


@pytest.mark.parametrize("edition", ["", "ja/"], ids=["en", "ja"])
@pytest.mark.parametrize("page_path", sorted(EXPLORABLES))
def test_explorable_figures_fit_a_phone(browser, server, page_path, edition):  # noqa: F811
    if not (HTML_DIR / edition / page_path).is_file():
        _unavailable(f"{edition}{page_path} was not built")
    page, watch = _open(browser, server, f"{server}/{edition}{page_path}", width=390)
    try:
        for name, _function, _part, mark, *_ in EXPLORABLES[page_path]:
            _drawn(page, name, mark)
            fig = page.locator(f'figure.explorable[data-explorable="{name}"]')
            fig.scroll_into_view_if_needed()
            box = fig.bounding_box()
            parts = page.evaluate(
                """n => Array.from(document.querySelectorAll('[data-explorable="' + n + '"] svg, '
                    + '[data-explorable="' + n + '"] .vega-bind')).filter(e => e.getBoundingClientRect().width)
                    .map(e => { const r = e.getBoundingClientRect(); return [e.tagName, r.left, r.right]; })""",
                name)
            assert parts, f"{name}: nothing drawn at 390 px"
            for tag, left, right in parts:
                assert left >= -0.5 and right <= 390.5, f"{name}: a {tag} is cut off at 390 px ({left:.0f}-{right:.0f})"
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390.5, f"{name}: the figure is wider than the phone"
        assert not watch.report(), watch.report()
    finally:
        page.close()
