"""One figure style for the whole book, so scaled and unscaled look the same everywhere.

``from lib import plotting; plotting.setup()`` at the top of a chapter; then use
``plotting.SCALED`` / ``plotting.UNSCALED`` / ``plotting.BY_D`` for colours, and hand every finished
figure to ``plotting.glue(name, fig)``: it checks that the figure's smallest text is legible at the
width the HTML book shows it (``COLUMN_PX``), glues it for ``{glue:figure}``, and closes it.
Imported only on request: ``import lib`` does not import matplotlib.

In the Japanese edition (``lib.i18n.language() == "ja"``) ``setup`` draws with the bundled IPAexGothic
font of ``matplotlib-fontja``, so translated labels (``lib.i18n.tr``) never show as empty boxes.
"""
from __future__ import annotations

import io
import logging
import warnings

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.text import Text

from .colours import OVER, SCALED, THEORY, UNSCALED  # the book's colours (lib/infra/colours.py)
from .i18n import language

__all__ = ["setup", "glue", "smallest_text_px", "missing_glyphs", "SCALED", "UNSCALED", "OVER", "THEORY", "label_panel",
           "COLUMN_PX", "MIN_TEXT_PX", "DPI"]

#: Width in CSS pixels that a figure gets in the HTML book's article column at a 1366 x 900 window
#: (sphinx-book-theme 1.3); a wider image is scaled down to it. tests/browser checks that no edition's
#: column is narrower than this.
COLUMN_PX = 740
#: The smallest text a figure may show, in CSS pixels as displayed: above the page's smallest print
#: (MathJax sub- and superscripts, about 10 px) and a little under its code text (14 px).
MIN_TEXT_PX = 12.0
#: Resolution of the PNGs the notebooks produce (matplotlib's inline backend uses ``figure.dpi``).
DPI = 110


def setup():
    """Apply the book's matplotlib style (sizes tuned for the HTML page and for print)."""

    family = "sans-serif"
    if language() == "ja":
        import matplotlib_fontja  # noqa: F401,PLC0415 - lazy: registers the bundled IPAexGothic with matplotlib

        # Per-glyph fallback (matplotlib >= 3.6): Japanese from IPAexGothic, symbols it lacks
        # (e.g. the superscript T of "QKᵀ") from DejaVu Sans, which matplotlib ships.
        family = ["IPAexGothic", "DejaVu Sans"]
        # IPAexGothic has one weight: a bold title is drawn at the regular weight. matplotlib says so
        # on stderr at every bold text ("findfont: Failed to find font weight bold"), which would
        # print under the figures of every Japanese page; the font is known, so the notice is silenced.
        logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    mpl.rcParams.update({
        "font.family": family,
        "figure.dpi": DPI,
        "savefig.dpi": 150,
        "figure.figsize": (7.0, 3.6),
        "figure.constrained_layout.use": True,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.titlesize": 11,
        "axes.labelsize": 10,
        "legend.fontsize": 9,
        "legend.frameon": False,
        "font.size": 10,
    })


def smallest_text_px(fig, *, drawn=False):
    """The smallest visible text of ``fig`` as the HTML book displays it: ``(size in CSS px, the text)``.

    The notebook saves the figure cropped to its content (``bbox_inches="tight"``, 0.1 in padding) at
    ``fig.dpi``; the page shows that image at its own width, or scaled down to ``COLUMN_PX`` if wider.
    A text of ``s`` points is then ``s / 72 * dpi * scale`` pixels high. ``drawn=True``: the figure
    was drawn since its last change (e.g. by :func:`missing_glyphs`), so it is not drawn again.
    """

    if not drawn:
        fig.canvas.draw()                  # tick labels get their text at draw time
    renderer = fig.canvas.get_renderer()
    width_px = (fig.get_tightbbox(renderer).width + 2 * mpl.rcParams["savefig.pad_inches"]) * fig.dpi
    scale = min(1.0, COLUMN_PX / width_px)
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
             and (t.axes is None or t.axes.get_visible())]
    if not texts:
        return float("inf"), ""
    t = min(texts, key=lambda t: t.get_fontsize())
    return float(t.get_fontsize() / 72 * fig.dpi * scale), t.get_text()


def missing_glyphs(fig) -> list[str]:
    """matplotlib's "Glyph ... missing from font(s)" warnings when ``fig`` is drawn: text that would show
    as empty boxes (e.g. Japanese labels without a Japanese font)."""

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.canvas.draw()
    return sorted({str(w.message) for w in caught if "missing from font" in str(w.message)})


def glue(name, fig, *, min_px=MIN_TEXT_PX):
    """Check that ``fig`` is legible in the HTML book, glue it as ``name`` (display=False), close it.

    Raises ``ValueError`` naming the smallest text if it would show below ``min_px`` CSS pixels (make the
    figure narrower, stacking wide rows of panels into a grid, or its text larger), and if any of its
    text has no glyph in the font (it would show as empty boxes).

    The figure is rendered once, to the PNG the page shows (as the notebook's inline backend saves it:
    ``fig.dpi``, ``bbox_inches="tight"``); the glyph and size checks read that rendering, and the PNG
    is what is glued (each draw of a figure with constrained layout costs a fraction of a second).
    """

    try:
        from myst_nb import glue as _glue  # noqa: PLC0415 - optional: the book's build only
    except ImportError:  # a learner's environment, without the book's build stack: the figure is in the text
        _glue = None

    png = io.BytesIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(png, format="png", dpi=fig.dpi, bbox_inches="tight")
    missing = sorted({str(w.message) for w in caught if "missing from font" in str(w.message)})
    if missing:
        plt.close(fig)
        raise ValueError(f"figure {name!r}: text the font cannot draw: {'; '.join(missing)}")
    px, text = smallest_text_px(fig, drawn=True)
    if px < min_px:
        plt.close(fig)
        raise ValueError(f"figure {name!r}: its smallest text, {text!r}, would show {px:.1f} px high in the "
                         f"book's {COLUMN_PX}-px column (at least {min_px:g} px needed); draw the figure "
                         "narrower or its text larger")
    if _glue is not None:
        from IPython.display import Image  # noqa: PLC0415 - only inside a notebook

        _glue(name, Image(data=png.getvalue(), format="png"), display=False)
    plt.close(fig)


def label_panel(ax, text):
    """Put a bold panel label such as '(a)' in the top-left corner of ``ax``."""
    ax.text(0.01, 0.98, text, transform=ax.transAxes, va="top", ha="left", fontweight="bold")


def close(fig):
    """Close ``fig`` after gluing it, so the notebook does not show it twice."""
    plt.close(fig)
