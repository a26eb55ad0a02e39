"""Progress bars under the cells that train, in the learner's and the trainer's notebooks.

A training cell of the book runs for several seconds (up to about twenty). In a notebook a learner runs,
a bar shows that it is working and how far it got; in the HTML book and in the book's own test runs
nothing of it may remain. So bars are off until :func:`progress_bars` turns them on: the generated
learner and trainer notebooks do that in their first, folded cell (``tools/learner.py``); the book's
build never does.

The bar is tqdm's (``tqdm.auto``: a widget in JupyterLab, text on a terminal), closed when the loop ends
(``leave=False``), so a finished cell keeps only its own output. Where tqdm is not installed there is
no bar and nothing fails. Pure Python: importing this module imports neither tqdm nor torch.
"""
from __future__ import annotations

__all__ = ["progress_bars", "bars_on", "bar"]

_ON = False


def progress_bars(on: bool = True) -> None:
    """Show a progress bar under each cell that trains (``on=True``), or none (``on=False``, the default)."""
    global _ON
    if not isinstance(on, bool):
        raise TypeError(f"progress_bars(on): on must be True or False; got {on!r}")
    _ON = on


def bars_on() -> bool:
    """Whether :func:`progress_bars` turned the bars on."""
    return _ON


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def bar(total: int, desc: str):
    """A bar for a loop of ``total`` steps labelled ``desc`` (tqdm's, with ``update`` and ``close``), or a
    stand-in with the same two methods that draws nothing: when the bars are off, or tqdm is missing."""
    if not (isinstance(total, int) and not isinstance(total, bool) and total > 0):
        raise ValueError(f"bar(total): total must be a positive int; got {total!r}")
    if not isinstance(desc, str):
        raise TypeError(f"bar(desc): desc must be a str; got {type(desc).__name__}")
    if not _ON:
        return _NoBar()
    try:
        from tqdm.auto import tqdm  # noqa: PLC0415 - only once a notebook turned the bars on
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc=desc, leave=False)
