"""lib.explore and lib.explorable: the explorable figures' numbers (against SciPy and PyTorch) and their
output (what JupyterLab and the HTML book receive). The browser test drives the drawn figures."""
import json
import math
import re

import numpy as np
import pytest
import scipy.special
import scipy.stats
import torch

import lib
from lib.infra import explorable as ex


def test_class_softmax_rows_are_scipys_softmax_of_the_classes():
    rows = lib.explore.class_softmax_data(n_max=3, n_class=7, n_classes=5, seed=11)
    assert len(rows) == 3 * 2 * 7
    for n in (1, 3):
        t = np.stack([lib.exam_totals(7, n, seed=11 + c) for c in range(5)]) / 10.0
        for scaled in (0, 1):
            w = scipy.special.softmax(t / (math.sqrt(n) if scaled else 1.0), axis=-1)
            profile = np.sort(w, axis=-1)[:, ::-1].mean(axis=0)
            eff = np.exp(scipy.stats.entropy(w, axis=-1)).mean()
            got = sorted((r for r in rows if r["subjects"] == n and r["scaled"] == scaled), key=lambda r: r["rank"])
            assert [r["rank"] for r in got] == list(range(1, 8))
            np.testing.assert_allclose([r["weight"] for r in got], profile, atol=1e-5)
            assert got[0]["top"] == pytest.approx(profile[0], abs=1e-4) and got[0]["eff"] == pytest.approx(eff, abs=0.01)


def test_one_query_rows_are_torchs_softmax_and_its_autograd_jacobian():
    data = lib.explore.one_query_data(log2_dk=[3, 6], n_keys=5, seed=2)
    for e in (3, 6):
        d = 2 ** e
        rng = np.random.default_rng([2, d])                  # lib.one_query_attention's documented draw
        q, k = torch.tensor(rng.standard_normal((1, d))), torch.tensor(rng.standard_normal((5, d)))
        for scaled in (0, 1):
            z = (q @ k.T)[0] / (math.sqrt(d) if scaled else 1.0)
            p = torch.softmax(z, -1)
            J = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z)
            w = sorted((r for r in data["weights"] if r["log2dk"] == e and r["scaled"] == scaled),
                       key=lambda r: r["key"])
            np.testing.assert_allclose([r["weight"] for r in w], p.numpy(), atol=1e-12)
            assert w[0]["H"] == pytest.approx(float(scipy.stats.entropy(p.numpy())), abs=1e-9)
            assert w[0]["norm"] == pytest.approx(float(torch.linalg.norm(J)), abs=1e-9)
            cells = {(r["row"], r["col"]): r["value"] for r in data["jacobian"]
                     if r["log2dk"] == e and r["scaled"] == scaled}
            np.testing.assert_allclose([[cells[i, j] for j in range(5)] for i in range(5)], J.numpy(), atol=1e-12)


def test_correlated_scores_follow_the_theory():
    """Mean ρ√d_k and SD √(1 + ρ²) of the scaled score (chapter caveats), within 5 standard errors."""
    data = lib.explore.correlated_scores_data(rhos=[-0.3, 0.0, 0.4], log2_dk=[2, 8], n=3000, bins=30)
    for s in data["stats"]:
        d, rho = 2 ** s["log2dk"], s["rho"]
        sd = math.sqrt(1 + rho**2)
        assert abs(s["mean"] - rho * math.sqrt(d)) < 5 * sd / math.sqrt(3000), s
        assert abs(s["sd"] - sd) < 0.06, s
        bins = [b for b in data["bins"] if b["rho"] == rho and b["log2dk"] == s["log2dk"]]
        assert len(bins) == 30
        assert sum(b["density"] * (b["x1"] - b["x0"]) for b in bins) == pytest.approx(1.0, abs=1e-3)
        assert bins[0]["x0"] <= -4 and bins[-1]["x1"] >= 4


def test_the_exact_scaled_scores_are_the_dot_products_in_distribution():
    """(X − Y)/(2√d) with X, Y ~ χ²(d) against lib.sample_dot_products (d products summed): the same law
    (two-sample Kolmogorov-Smirnov, SciPy), variance 1 and excess kurtosis 6/d."""
    rng = np.random.default_rng(7)
    for d in (1, 4, 64):
        exact = lib.explore.scaled_scores_exact(d, 200_000, rng)
        summed = lib.sample_dot_products(d, 20_000, seed=d, scale=None)
        assert scipy.stats.ks_2samp(exact, summed).pvalue > 0.01, d
        assert exact.var() == pytest.approx(1.0, abs=0.01)
        assert scipy.stats.kurtosis(exact) == pytest.approx(6 / d, abs=0.15 + 0.05 * 6 / d)


def test_variance_spread_is_the_percentiles_of_measured_variances():
    rows = lib.explore.variance_spread_data(sizes=(20,), log2_dk=[3], repeats=50, seed=3)
    z = lib.explore.scaled_scores_exact(8, (50, 20), np.random.default_rng(3))
    v = z.var(axis=-1, ddof=1)
    r, = rows
    assert (r["lo"], r["mid"], r["hi"]) == pytest.approx(tuple(np.percentile(v, [5, 50, 95])), abs=1e-4)
    sd = math.sqrt(2 / 19 + (6 / 8) / 20)                # eq-se-var, sigma^2 = 1, kappa = 6/d_k
    assert (r["band_lo"], r["band_hi"]) == pytest.approx((1 - 2 * sd, 1 + 2 * sd), abs=1e-4)


@pytest.mark.parametrize("chart", ["class_softmax_chart", "one_query_chart", "correlated_scores_chart",
                                   "variance_spread_chart"])
def test_each_chart_is_one_output_for_jupyterlab_and_the_html_book(chart, monkeypatch):
    small = {"class_softmax_chart": dict(n_max=4, n_classes=3), "one_query_chart": dict(log2_dk=[2, 3]),
             "correlated_scores_chart": dict(rhos=[0.0, 0.2], log2_dk=[2, 6], n=200),
             "variance_spread_chart": dict(sizes=(10, 50), log2_dk=[0, 4], repeats=20)}[chart]
    e = getattr(lib.explore, chart)(**small)
    monkeypatch.delenv(ex.HTML_BUILD_ENV, raising=False)
    nb_bundle = e._repr_mimebundle_()
    assert set(nb_bundle) == {ex.VEGALITE_MIME, "text/plain"}               # JupyterLab draws the chart
    assert nb_bundle[ex.VEGALITE_MIME].get("width") != "container"         # at a width it can draw
    monkeypatch.setenv(ex.HTML_BUILD_ENV, "1")                               # as tools/build.py sets it
    bundle = e._repr_mimebundle_()
    assert set(bundle) == {ex.VEGALITE_MIME, "text/html", "text/plain"}
    spec = e.spec
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v5") and spec["description"] == e.alt
    page_html = bundle["text/html"]
    # the spec travels inside the page, intact; nothing is loaded from another host
    inner = re.search(r'<script type="application/json" class="explorable-spec">(.*?)</script>', page_html, re.S).group(1)
    assert json.loads(inner.replace("<\\/", "</")) == spec
    assert not re.search(r"https?://(?!vega\.github\.io/schema/|www\.w3\.org/)", page_html)   # XML namespaces only
    assert f'data-explorable="{e.name}"' in page_html and "<svg" not in page_html  # the build adds the static SVG
    params = [p["name"] for p in spec["params"]]
    assert params and all("bind" in p for p in spec["params"])
    for p in params:                                   # every control changes what the data filter keeps
        assert re.search(rf"\b{p}\b", json.dumps(spec)[json.dumps(spec).index("filter"):])


def test_japanese_charts_have_japanese_labels():
    try:
        lib.set_language("ja")
        spec = lib.explore.class_softmax_chart(n_max=2, n_classes=2).spec
    finally:
        lib.set_language(None)
    text = json.dumps(spec, ensure_ascii=False)
    assert re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", spec["description"])
    assert "student, ranked" not in text and "raw totals" not in text


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="name"):
        lib.explorable.explorable({"$schema": "https://vega.github.io/schema/vega-lite/v5.20.1.json"},
                                  name="Bad Name", alt="x")
    with pytest.raises(ValueError, match="alt"):
        lib.explorable.explorable({"$schema": "https://vega.github.io/schema/vega-lite/v5.20.1.json"},
                                  name="ok", alt=" ")
    with pytest.raises(ValueError, match="vega-lite/v5"):
        lib.explorable.explorable({"$schema": "https://vega.github.io/schema/vega-lite/v6.1.json"},
                                  name="ok", alt="x")
    with pytest.raises(ValueError, match="n_classes"):
        lib.explore.class_softmax_data(n_classes=0)


def test_the_build_puts_a_static_svg_in_each_figure():
    """tools/vegaext.py: each explorable figure of a page gets the chart at its first setting as SVG (for
    print and pages without JavaScript), named by the figure's alt text; a second pass adds nothing."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import vegaext

    figs = [lib.explore.class_softmax_chart(n_max=3, n_classes=2),
            lib.explore.variance_spread_chart(sizes=(10,), log2_dk=[0, 1], repeats=5)]
    body = "<p>text</p>" + "".join(f.html() for f in figs)
    out = vegaext.with_static_figures(body)
    assert out.count('<div class="explorable-static"><svg role="img"') == 2
    import html

    for f in figs:
        assert f'<svg role="img" aria-label="{html.escape(f.alt, quote=True)}"' in out
    assert vegaext.with_static_figures(out) == out
    svg = re.search(r'<div class="explorable-static">(<svg.*?</svg>)', out, re.S).group(1)
    width = float(re.search(r'\bwidth="([0-9.]+)"', svg.split(">", 1)[0]).group(1))
    assert 560 <= width < 700                    # a column-wide chart, drawn 560 px wide plus its axis


def test_the_notebooks_keep_only_the_vega_lite_form():
    """tools/learner.py drops the HTML form (which needs the book page's Vega-Embed) from an explorable
    output of a learner or trainer notebook; other outputs keep their HTML."""
    import sys
    from pathlib import Path

    import nbformat

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import learner

    fig = nbformat.v4.new_output("display_data", data={ex.VEGALITE_MIME: {"a": 1}, "text/html": "<figure>",
                                                       "text/plain": "alt"})
    table = nbformat.v4.new_output("display_data", data={"text/html": "<table>", "text/plain": "t"})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[fig, table])])
    learner._drop_explorable_html(nb)
    assert set(nb.cells[0].outputs[0].data) == {ex.VEGALITE_MIME, "text/plain"}
    assert nb.cells[0].outputs[1].data["text/html"] == "<table>"
