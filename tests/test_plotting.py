"""lib.plotting: the legibility check against the size the text really has in the saved PNG, the
missing-glyph check, and the Japanese font of the Japanese edition."""
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import lib  # noqa: E402
from lib import plotting  # noqa: E402


@pytest.fixture(autouse=True)
def style():
    plotting.setup()
    yield
    plt.close("all")
    lib.set_language(None)


def _png_width(fig):
    """Width in pixels of the PNG the notebook would show (IPython's inline backend: tight bbox)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight")
    buf.seek(0)
    return plt.imread(buf).shape[1]


@pytest.mark.parametrize("width", [5.0, 7.0, 10.0, 14.0])
def test_smallest_text_px_follows_the_saved_image(width):
    fig, axes = plt.subplots(1, 3, figsize=(width, 3))
    for ax in axes:
        ax.set_xlabel("key index")
    axes[0].legend(handles=axes[0].plot([0, 1], label="scaled"))
    px, text = plotting.smallest_text_px(fig)
    shown = min(_png_width(fig), plotting.COLUMN_PX)           # the page scales wide images down
    expected = plt.rcParams["legend.fontsize"] / 72 * fig.dpi * shown / _png_width(fig)
    assert text == "scaled" and px == pytest.approx(expected, rel=0.03)


def test_glue_refuses_a_figure_too_wide_to_read():
    fig, axes = plt.subplots(1, 4, figsize=(14, 3))
    axes[0].set_xlabel("key index $j$")
    with pytest.raises(ValueError, match=r"would show \d+\.\d px high.*narrower"):
        plotting.glue("too_wide", fig)


def test_glue_refuses_text_without_glyphs():
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.set_title("アテンション")                                   # the default font has no kana
    with pytest.raises(ValueError, match="cannot draw"):
        plotting.glue("boxes", fig)


def test_japanese_edition_draws_japanese():
    lib.set_language("ja")
    plotting.setup()
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.set_title("アテンションの重み $d_k$、QKᵀ")               # ᵀ: not in IPAexGothic
    ax.plot(np.arange(3))
    assert plotting.missing_glyphs(fig) == []
    assert plt.rcParams["font.family"] == ["IPAexGothic", "DejaVu Sans"]


def test_glue_glues_the_png_the_inline_backend_would_show(monkeypatch):
    """plotting.glue renders the figure once and glues that PNG: the same image IPython's inline backend
    makes of the figure (matplotlib_inline's print_figure: fig.dpi, tight bounding box)."""
    myst_nb = pytest.importorskip("myst_nb")
    from IPython.core.pylabtools import print_figure as ipython_print_figure

    got = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, obj, display=True: got.update({name: obj}))
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(np.arange(5) ** 2, label="scaled")
    ax.set_xlabel("key index")
    ax.legend()
    expected = ipython_print_figure(fig, "png", bbox_inches="tight")
    plotting.glue("one", fig)
    img = got["one"]
    assert img.format == "png" and img.data == expected
    assert not plt.fignum_exists(fig.number)
