"""The book's colours, in one place: matplotlib figures (``lib.plotting``) and the explorable figures
(``lib.explore``, which must not import matplotlib) both take them from here."""

SCALED = "#1b7837"    # green: divided by √d_k
UNSCALED = "#c2185b"  # magenta: raw q·k (scale = 1)
OVER = "#f28e2b"      # orange: divided by d_k (over-corrected)
THEORY = "#333333"    # dark grey, dashed: a prediction from the math
