"""One figure style for the whole book, so scaled and unscaled look the same everywhere.

``from lib import plotting; plotting.setup()`` at the top of a chapter; then use
``plotting.SCALED`` / ``plotting.UNSCALED`` / ``plotting.BY_D`` for colours.
Imported only on request: ``import lib`` does not import matplotlib.
"""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt

__all__ = ["setup", "SCALED", "UNSCALED", "OVER", "THEORY", "label_panel"]

SCALED = "#1b7837"    # green: divided by √d_k
UNSCALED = "#c2185b"  # magenta: raw q·k (scale = 1)
OVER = "#f28e2b"      # orange: divided by d_k (over-corrected)
THEORY = "#333333"    # dark grey, dashed: a prediction from the math


def setup():
    """Apply the book's matplotlib style (sizes tuned for the HTML page and for print)."""
    mpl.rcParams.update({
        "figure.dpi": 110,
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


def label_panel(ax, text):
    """Put a bold panel label such as '(a)' in the top-left corner of ``ax``."""
    ax.text(0.01, 0.98, text, transform=ax.transAxes, va="top", ha="left", fontweight="bold")


def close(fig):
    """Close ``fig`` after gluing it, so the notebook does not show it twice."""
    plt.close(fig)
