"""The book's explorable figures: the numbers (computed here, at build time) and the Vega-Lite charts.

Each figure has a ``*_data`` function, which returns the rows the chart draws as plain dicts, and a
chart function, which returns a :class:`lib.infra.explorable.Explorable`. The browser test moves each
figure's controls in the HTML page and compares what is drawn with the ``*_data`` rows recomputed here.
Altair is imported when a chart is built, so ``import lib`` does not need it.
"""
from __future__ import annotations

import math

import numpy as np

from ..formula.attention import softmax
from ..formula.metrics import attention_entropy
from ..formula.saturation import one_query_attention
from ..formula.simulate import exam_totals, sample_dot_products, variance_standard_error
from ..infra.checks import positive_int
from ..infra.colours import SCALED, THEORY, UNSCALED
from ..infra.explorable import explorable
from ..infra.i18n import tr

__all__ = ["class_softmax_data", "class_softmax_chart", "one_query_data", "one_query_chart",
           "correlated_scores_data", "correlated_scores_chart", "variance_spread_data", "variance_spread_chart",
           "scaled_scores_exact", "sweep_rows", "sweep_chart"]

#: The width (px) of a chart that cannot fill its column (a concatenation): it fits a 390 px phone.
NARROW = 280


def class_softmax_data(*, n_max: int = 50, n_class: int = 30, n_classes: int = 100, seed: int = 5000,
                       mean: float = 50.0, sd: float = 10.0) -> list[dict]:
    """Chapter `test-scores`: the mean softmax weight of the best-ranked, second-ranked, ... student of a
    class of ``n_class``, over ``n_classes`` classes, for exams of 1 to ``n_max`` subjects, over the raw
    totals (in units of one subject's ``sd``) and over the totals divided by √n.

    Rows ``{"subjects", "scaled", "rank", "weight", "top", "eff"}``: ``scaled`` 0 or 1, ``rank`` from 1,
    ``top`` the mean top weight and ``eff`` the mean effective number of students :math:`e^H`.
    Class ``c`` is drawn with ``seed + c`` for every exam size (the chapter's figure uses the same).
    """
    n_max, n_class, n_classes = (positive_int(a, v) for a, v in
                                 (("n_max", n_max), ("n_class", n_class), ("n_classes", n_classes)))
    rows = []
    for n in range(1, n_max + 1):
        t = np.stack([exam_totals(n_class, n, mean=mean, sd=sd, seed=seed + c) for c in range(n_classes)])
        for scaled in (0, 1):
            logits = t / sd / (math.sqrt(n) if scaled else 1.0)
            w = softmax(logits, axis=-1)                                # (n_classes, n_class)
            profile = np.sort(w, axis=-1)[:, ::-1].mean(axis=0)
            eff = float(np.exp(attention_entropy(w)).mean())
            rows += [{"subjects": n, "scaled": scaled, "rank": r + 1, "weight": round(float(p), 5),
                      "top": round(float(profile[0]), 4), "eff": round(eff, 2)}
                     for r, p in enumerate(profile)]
    return rows


def class_softmax_chart(**kwargs):
    """The explorable form of chapter `test-scores`'s widget: a slider for the number of subjects and a
    choice of raw or scaled totals, the class's mean softmax weights by rank."""
    import altair as alt  # noqa: PLC0415 - lazy: only the chapters' figures need it

    rows = class_softmax_data(**kwargs)
    n_max = max(r["subjects"] for r in rows)
    subjects = alt.param(name="subjects", value=20,
                         bind=alt.binding_range(min=1, max=n_max, step=1, name=tr("subjects") + " "))
    scaled = alt.param(name="scaled", value=0,
                       bind=alt.binding_radio(options=[0, 1], labels=[tr("raw totals"), tr("totals ÷ √n")],
                                              name=tr("scores") + " "))
    base = (alt.Chart(alt.Data(values=rows))
            .transform_filter("datum.subjects == subjects && datum.scaled == scaled"))
    bars = base.mark_bar().encode(
        x=alt.X("rank:O", title=tr("student, ranked"), axis=alt.Axis(labelAngle=0, values=[1, 5, 10, 15, 20, 25, 30])),
        y=alt.Y("weight:Q", title=tr("mean weight"), scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("scaled:N", scale=alt.Scale(domain=[0, 1], range=[UNSCALED, SCALED]), legend=None),
        tooltip=[alt.Tooltip("rank:O", title=tr("rank")), alt.Tooltip("weight:Q", title=tr("mean weight"),
                                                                      format=".3f")])
    top = tr("top")
    label = base.transform_filter("datum.rank == 1").mark_text(align="right", baseline="bottom", fontSize=13).encode(
        x=alt.value("width"), y=alt.value(-6),
        text=alt.Text("label:N")).transform_calculate(
        label=f"'{top} ' + format(datum.top, '.2f') + ',  e^H = ' + format(datum.eff, '.1f')")
    chart = (alt.layer(bars, label).add_params(subjects, scaled)
             .properties(width="container", height=240)
             .configure_axis(labelFontSize=12, titleFontSize=13))
    return explorable(chart, name="test-scores-class",
                      alt=tr("The mean softmax weight of each student of a class of 30, best first, for the "
                             "number of subjects and the scaling chosen with the controls."))


def one_query_data(*, log2_dk=range(2, 11), n_keys: int = 16, seed: int = 1) -> dict[str, list[dict]]:
    """Chapter `softmax-saturation`: one query's weights over ``n_keys`` keys and the Jacobian of its
    softmax (``lib.one_query_attention``), for d_k = 2**e (e in ``log2_dk``), unscaled and scaled.

    ``{"weights": rows {"log2dk", "scaled", "key", "weight", "H", "norm"}, "jacobian": rows
    {"log2dk", "scaled", "row", "col", "value"}}``; ``H`` is the entropy (nats), ``norm`` the
    Jacobian's Frobenius norm."""
    weights, jac = [], []
    for e in log2_dk:
        for scaled in (0, 1):
            r = one_query_attention(2 ** int(e), n_keys=n_keys, scaled=bool(scaled), seed=seed)
            h = float(attention_entropy(r["weights"]))
            weights += [{"log2dk": int(e), "scaled": scaled, "key": j, "weight": float(p),
                         "H": h, "norm": r["jacobian_norm"]} for j, p in enumerate(r["weights"])]
            jac += [{"log2dk": int(e), "scaled": scaled, "row": i, "col": j, "value": float(r["jacobian"][i, j])}
                    for i in range(n_keys) for j in range(n_keys)]
    return {"weights": weights, "jacobian": jac}


def one_query_chart(**kwargs):
    """The explorable form of chapter `softmax-saturation`'s widget: a slider for log2 d_k and the
    choice scaled or not; one query's weights (bars) and its softmax Jacobian (map)."""
    import altair as alt  # noqa: PLC0415

    data = one_query_data(**kwargs)
    exps = sorted({r["log2dk"] for r in data["weights"]})
    e = alt.param(name="log2dk", value=max(exps),
                  bind=alt.binding_range(min=min(exps), max=max(exps), step=1, name=tr("log₂ d_k") + " "))
    scaled = alt.param(name="scaled", value=0,
                       bind=alt.binding_radio(options=[0, 1], labels=[tr("unscaled"), tr("divide by √d_k")],
                                              name=tr("scale") + " "))
    pick = "datum.log2dk == log2dk && datum.scaled == scaled"
    w = alt.Chart(alt.Data(values=data["weights"])).transform_filter(pick)
    bars = w.mark_bar().encode(
        x=alt.X("key:O", title=tr("key index j"), axis=alt.Axis(labelAngle=0, values=[0, 5, 10, 15])),
        y=alt.Y("weight:Q", title=tr("attention weight"), scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("scaled:N", scale=alt.Scale(domain=[0, 1], range=[UNSCALED, SCALED]), legend=None),
        tooltip=[alt.Tooltip("key:O", title="j"), alt.Tooltip("weight:Q", title=tr("attention weight"), format=".3g")])
    note = w.transform_filter("datum.key == 0").transform_calculate(
        label="'d_k = ' + pow(2, datum.log2dk) + ',  H = ' + format(datum.H, '.2f') + ' nats'").mark_text(
        align="right", baseline="bottom", fontSize=13).encode(x=alt.value("width"), y=alt.value(-6), text="label:N")
    top = alt.layer(bars, note).properties(width=NARROW, height=170)
    jac = (alt.Chart(alt.Data(values=data["jacobian"])).transform_filter(pick).mark_rect().encode(
        x=alt.X("col:O", title="j", axis=alt.Axis(labelAngle=0, values=[0, 5, 10, 15])),
        y=alt.Y("row:O", title="i", axis=alt.Axis(values=[0, 5, 10, 15])),
        color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", reverse=True, domain=[-0.25, 0.25], clamp=True),
                        title="∂p_i/∂z_j"),
        tooltip=[alt.Tooltip("row:O", title="i"), alt.Tooltip("col:O", title="j"),
                 alt.Tooltip("value:Q", title="∂p_i/∂z_j", format=".3g")])
           .properties(width=NARROW - 80, height=NARROW - 80,
                       title=alt.TitleParams(tr("the softmax's Jacobian"), fontSize=13)))
    chart = (alt.vconcat(top, jac).add_params(e, scaled)
             .configure_axis(labelFontSize=12, titleFontSize=13).configure_legend(orient="right"))
    return explorable(chart, name="softmax-one-query",
                      alt=tr("One query's attention weights over 16 keys and the Jacobian of its softmax, for "
                             "the key width d_k and the scaling chosen with the controls."))


#: Samples per setting of chapter `caveats`'s explorable histogram.
CORRELATED_N = 4000


def correlated_scores_data(*, rhos=None, log2_dk=range(0, 11), n: int = CORRELATED_N, bins: int = 40,
                           seed: int = 0) -> dict[str, list[dict]]:
    """Chapter `caveats`: histograms (densities) of the scaled scores q·k/√d_k when each pair of
    components (q_i, k_i) has correlation ρ, for ρ in ``rhos`` (default -0.5 to 0.5 in steps of 0.1)
    and d_k = 2**e. The sample is ``lib.sample_dot_products(d_k, n, seed=seed, rho=rho, scale=None)``;
    the range shows N(0, 1)'s [-4, 4] and 99.9 % of the sample, as in the chapter's widget.

    ``{"bins": rows {"rho", "log2dk", "x0", "x1", "density"} (a bin's edges and density),
    "stats": rows {"rho", "log2dk", "mean", "sd"} (the sample's)}``."""
    if rhos is None:
        rhos = [round(r, 1) for r in np.linspace(-0.5, 0.5, 11)]
    n, bins = positive_int("n", n), positive_int("bins", bins)
    hist, stats = [], []
    for rho in rhos:
        for e in log2_dk:
            z = sample_dot_products(2 ** int(e), n, seed=seed, rho=float(rho), scale=None)
            lo, hi = np.quantile(z, [0.0005, 0.9995])
            lo, hi = min(-4.0, lo - 0.5), max(4.0, hi + 0.5)
            dens, edges = np.histogram(z, bins=bins, range=(lo, hi), density=True)
            key = {"rho": float(rho), "log2dk": int(e)}
            hist += [{**key, "x0": round(float(a), 4), "x1": round(float(b), 4), "density": round(float(d), 5)}
                     for a, b, d in zip(edges[:-1], edges[1:], dens)]
            stats.append({**key, "mean": round(float(z.mean()), 3), "sd": round(float(z.std()), 3)})
    return {"bins": hist, "stats": stats}


def correlated_scores_chart(**kwargs):
    """The explorable form of chapter `caveats`'s widget: sliders for the correlation ρ and log2 d_k;
    the histogram of the scaled scores against N(0, 1)."""
    import altair as alt  # noqa: PLC0415

    data = correlated_scores_data(**kwargs)
    rhos = sorted({r["rho"] for r in data["stats"]})
    exps = sorted({r["log2dk"] for r in data["stats"]})
    step = round(rhos[1] - rhos[0], 6) if len(rhos) > 1 else 0.1
    rho = alt.param(name="rho", value=0.2 if 0.2 in rhos else rhos[0],
                    bind=alt.binding_range(min=min(rhos), max=max(rhos), step=step, name="ρ "))
    e = alt.param(name="log2dk", value=6 if 6 in exps else exps[0],
                  bind=alt.binding_range(min=min(exps), max=max(exps), step=1, name=tr("log₂ d_k") + " "))
    pick = "abs(datum.rho - rho) < 1e-9 && datum.log2dk == log2dk"
    bars = alt.Chart(alt.Data(values=data["bins"])).transform_filter(pick).mark_rect(
        color=SCALED, opacity=0.6).encode(
        x=alt.X("x0:Q", title=tr("scaled score q·k/√d_k"), scale=alt.Scale(zero=False, nice=False)),
        x2="x1:Q", y=alt.Y("density:Q", title=tr("density")), y2=alt.datum(0),
        tooltip=[alt.Tooltip("x0:Q", format=".2f"), alt.Tooltip("density:Q", title=tr("density"), format=".3f")])
    normal = [{"x": round(float(x), 3), "pdf": float(np.exp(-x * x / 2) / math.sqrt(2 * math.pi))}
              for x in np.linspace(-4, 4, 161)]
    curve = alt.Chart(alt.Data(values=normal)).mark_line(color=THEORY, strokeDash=[5, 3]).encode(x="x:Q", y="pdf:Q")
    mean_word, sd_word = tr("mean"), tr("SD")
    note = alt.Chart(alt.Data(values=data["stats"])).transform_filter(pick).transform_calculate(
        label=f"'{mean_word} ' + format(datum.mean, '.2f') + ',  {sd_word} ' + format(datum.sd, '.2f')"
    ).mark_text(align="left", baseline="bottom", fontSize=13).encode(x=alt.value(0), y=alt.value(-6), text="label:N")
    chart = (alt.layer(bars, curve, note).add_params(rho, e)
             .properties(width="container", height=240)
             .configure_axis(labelFontSize=12, titleFontSize=13))
    return explorable(chart, name="caveats-correlated-scores",
                      alt=tr("The histogram of the scaled scores against the standard normal curve, for the "
                             "correlation ρ and the key width d_k chosen with the sliders."))


def scaled_scores_exact(d_k: int, shape, rng: np.random.Generator) -> np.ndarray:
    """Scaled scores q·k/√d_k of independent N(0, 1) d_k-vectors, drawn exactly in O(1) per score:
    (X − Y)/(2√d_k) with X, Y independent χ²(d_k) (see :func:`variance_spread_data`)."""
    d_k = positive_int("d_k", d_k)
    return (rng.chisquare(d_k, shape) - rng.chisquare(d_k, shape)) / (2 * math.sqrt(d_k))


#: The numbers of scores per experiment chapter `variance`'s explorable figure offers.
SPREAD_N = (10, 20, 50, 100, 200, 500, 1000)


def variance_spread_data(*, sizes=SPREAD_N, log2_dk=range(0, 11), repeats: int = 200,
                         seed: int = 0) -> list[dict]:
    """Chapter `variance`: how far one experiment's measured variance of q·k/√d_k strays from 1, for
    ``repeats`` experiments of n scores each (n in ``sizes``) at d_k = 2**e.

    A scaled score is drawn exactly, without its d_k products: for q, k with independent N(0, 1)
    components, q·k = (|a|² − |b|²)/2 with a = (q + k)/√2 and b = (q − k)/√2 independent N(0, I), so
    q·k/√d_k = (X − Y)/(2√d_k) with X, Y independent χ²(d_k) (``tests/test_explore.py`` compares it
    with ``lib.sample_dot_products``).

    Rows ``{"n", "log2dk", "lo", "mid", "hi", "band_lo", "band_hi"}``: the 5th, 50th and 95th percentiles
    of the measured variances, and the theory 1 ± 2 sd of one experiment (``lib.variance_standard_error``,
    σ² = 1, κ = 6/d_k)."""
    repeats = positive_int("repeats", repeats)
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        n = positive_int("n", n, minimum=2)
        for e in log2_dk:
            d = 2 ** int(e)
            z = scaled_scores_exact(d, (repeats, n), rng)
            v = z.var(axis=-1, ddof=1)
            lo, mid, hi = np.percentile(v, [5, 50, 95])
            sd = variance_standard_error(1.0, n, 6 / d)
            rows.append({"n": n, "log2dk": int(e), "dk": d, "lo": round(float(lo), 4),
                         "mid": round(float(mid), 4), "hi": round(float(hi), 4),
                         "band_lo": round(1 - 2 * sd, 4), "band_hi": round(1 + 2 * sd, 4)})
    return rows


def variance_spread_chart(**kwargs):
    """The explorable form of chapter `variance`'s figure of the scaled variance against d_k: choose the
    number of scores per experiment and see how far one experiment strays from 1."""
    import altair as alt  # noqa: PLC0415

    rows = variance_spread_data(**kwargs)
    sizes = sorted({r["n"] for r in rows})
    n = alt.param(name="n", value=50 if 50 in sizes else sizes[0],
                  bind=alt.binding_select(options=sizes, name=tr("scores per experiment") + " "))
    base = alt.Chart(alt.Data(values=rows)).transform_filter("datum.n == n")
    exps = sorted({r["log2dk"] for r in rows})
    x = alt.X("log2dk:Q", title="d_k", scale=alt.Scale(domain=[min(exps) - 0.3, max(exps) + 0.3], nice=False),
              axis=alt.Axis(values=exps, labelExpr="pow(2, datum.value)", grid=False))
    band = base.mark_area(color=THEORY, opacity=0.12).encode(x=x, y="band_lo:Q", y2="band_hi:Q")
    spread = base.mark_rule(color=SCALED, strokeWidth=3, opacity=0.6).encode(x=x, y="lo:Q", y2="hi:Q")
    mid = base.mark_point(color=SCALED, filled=True, size=50).encode(
        x=x, y=alt.Y("mid:Q", title=tr("variance of q·k/√d_k"), scale=alt.Scale(domain=[0, 3], clamp=True)),
        tooltip=[alt.Tooltip("dk:Q", title="d_k"), alt.Tooltip("n:Q", title=tr("scores per experiment")),
                 alt.Tooltip("lo:Q", title="5 %", format=".2f"), alt.Tooltip("mid:Q", title="50 %", format=".2f"),
                 alt.Tooltip("hi:Q", title="95 %", format=".2f")])
    one = alt.Chart(alt.Data(values=[{"y": 1}])).mark_rule(color=THEORY, strokeDash=[5, 3]).encode(y="y:Q")
    chart = (alt.layer(band, spread, mid, one).add_params(n)
             .properties(width="container", height=240)
             .configure_axis(labelFontSize=12, titleFontSize=13))
    return explorable(chart, name="variance-spread",
                      alt=tr("The variance of the scaled score measured by one experiment, 5th to 95th "
                             "percentile of 200 experiments, against d_k, for the number of scores per "
                             "experiment chosen in the menu; grey: the theory's 1 plus or minus 2 standard "
                             "deviations."))


def sweep_rows(sweep: dict, threshold: float = 1.0) -> list[dict]:
    """Chapter `tuning`'s learning-rate sweep as rows: ``sweep`` maps an optimiser's name to a dict
    ``(scale, lr) -> [TrainResult per seed]`` (``scale`` None: scaled, 1.0: unscaled).

    Rows ``{"opt", "measure", "scaled", "lr", "seed", "value", "id"}``: ``opt`` the optimiser's index in
    ``sweep``, ``measure`` 0 for the steps to a loss below ``threshold`` and 1 for the final loss,
    ``scaled`` 1 or 0, ``id`` a key that names the run."""
    if not isinstance(sweep, dict) or not sweep:
        raise ValueError("sweep_rows: sweep must map an optimiser's name to {(scale, lr): [TrainResult, ...]}")
    rows = []
    for o, (name, res) in enumerate(sweep.items()):
        for (scale, lr), runs in res.items():
            for r in runs:
                for m, value in enumerate((r.steps_to(threshold), r.final_loss())):
                    rows.append({"opt": o, "measure": m, "scaled": int(scale is None), "lr": float(lr),
                                 "seed": int(r.seed), "value": round(float(value), 5),
                                 "id": f"{int(scale is None)}/{float(lr):g}/{int(r.seed)}"})
    return rows


def sweep_chart(sweep: dict, threshold: float = 1.0):
    """The explorable form of chapter `tuning`'s sweep: for the optimiser and the measure chosen, every
    seed's run (points; hover for the seed) and the median over the seeds (line), against the rate."""
    import altair as alt  # noqa: PLC0415

    rows = sweep_rows(sweep, threshold)
    names = list(sweep)
    opt = alt.param(name="opt", value=0, bind=alt.binding_radio(options=list(range(len(names))), labels=names,
                                                               name=tr("optimiser") + " "))
    measure = alt.param(name="measure", value=1, bind=alt.binding_radio(
        options=[0, 1], labels=[tr("steps to < 1 nat"), tr("final loss (nats)")], name=tr("measure") + " "))
    base = alt.Chart(alt.Data(values=rows)).transform_filter("datum.opt == opt && datum.measure == measure")
    scaled_word, unscaled_word = tr("scaled"), tr("unscaled")
    colour = alt.Color("scaled:N", scale=alt.Scale(domain=[1, 0], range=[SCALED, UNSCALED]),
                       legend=alt.Legend(title=None, orient="bottom", labelExpr=(
                           f"datum.value == 1 ? '{scaled_word}' : '{unscaled_word}'")))
    steps_word, loss_word = tr("steps to < 1 nat"), tr("final loss (nats)")
    x = alt.X("lr:Q", title=tr("learning rate"), scale=alt.Scale(type="log", nice=False, padding=12))
    y = alt.Y("value:Q", title=None, scale=alt.Scale(type="log", nice=False, padding=8))
    # the y axis's name follows the measure (an axis title cannot): a text over the axis
    y_name = alt.Chart(alt.Data(values=[{}])).transform_calculate(
        label=f"measure == 0 ? '{steps_word}' : '{loss_word}'").mark_text(
        align="left", baseline="bottom", fontSize=13, fontWeight="bold", dx=-30).encode(
        x=alt.value(0), y=alt.value(-8), text="label:N")
    points = base.mark_point(size=36, opacity=0.7).encode(
        x=x, y=y, color=colour, tooltip=[alt.Tooltip("seed:Q", title=tr("seed")),
                                         alt.Tooltip("lr:Q", title=tr("learning rate"), format="g"),
                                         alt.Tooltip("value:Q", title=tr("value"), format=".3g")])
    medians = base.transform_aggregate(median="median(value)", groupby=["scaled", "lr"]).mark_line(
        strokeWidth=2).encode(x=x, y=alt.Y("median:Q"), color=colour)
    chart = (alt.layer(points, medians, y_name).add_params(opt, measure)
             .properties(width="container", height=260)
             .configure_axis(labelFontSize=12, titleFontSize=13))
    return explorable(chart, name="tuning-sweep",
                      alt=tr("Steps to a loss below 1 nat or the final loss against the learning rate, one "
                             "point per seed and a line through the medians, scaled and unscaled, for the "
                             "optimiser and the measure chosen with the controls."))
