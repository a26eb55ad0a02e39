"""How a result shows to a learner in a notebook: verdicts as rich text, and tables.

:class:`Shown` is the base of every result a learner reads: the self-checks' :class:`lib.Verdict`,
:class:`lib.scale_probe.ScaleReport` and :class:`lib.port_check.PortReport`. It knows nothing about
checking; it only decides how a result looks (plain text, Markdown, HTML) and tells
:mod:`lib.progress` that a learner saw one.

:func:`table` is how a chapter shows a small table of numbers: the chapter gives the rows, the
column headers and one format per column, and the table lays itself out (aligned plain text, and an
HTML table in a notebook or the book), so that a lecture cell holds no layout code.
"""
from __future__ import annotations

import html
import numbers
import re

from ..infra import i18n
from . import progress as _progress

__all__ = ["Shown", "MARK_OK", "MARK_NOT", "md_escape", "Table", "table"]

#: The marks of a verdict: text symbols, not emoji (see :class:`Shown`).
MARK_OK, MARK_NOT = "✓", "✗"

_CODE_SPAN = re.compile(r"(`[^`]*`)")
_MD_SPECIAL = re.compile(r"([\\*_\[\]<>#|~])")


def md_escape(text: str) -> str:
    """Text that Markdown shows as written (``d_k`` not italic, ``**`` not bold)."""
    return _MD_SPECIAL.sub(r"\\\1", text)


class Shown:
    """How the result of a check shows to a learner: ✓ or ✗, a bold label (if any), then the message.

    The marks are U+2713 and U+2717, plain text symbols that the usual fonts have (DejaVu Sans, Noto
    Sans Symbols 2, Segoe UI Symbol), not emoji: without an emoji font, ✅ and ❌ show as empty boxes.
    The label (Correct. / Not yet.) carries the meaning on its own.

    Shared by :class:`Verdict` and :class:`lib.scale_probe.ScaleReport`; a subclass has ``ok`` and
    ``message`` and may override :meth:`_label`. In a notebook the result shows as rich text (HTML,
    or Markdown where HTML is not rendered) with the same words in both: backtick spans as code,
    everything else escaped, so that ``d_k`` or ``d ** 1 / 2`` in a message stays as written.
    """

    def _label(self) -> str:
        return ""

    def __bool__(self):
        return bool(self.ok)

    def __str__(self):
        return (MARK_OK if self.ok else MARK_NOT) + " " + self.message

    def __repr__(self):
        return str(self)

    def _head(self, escape) -> str:
        mark, label = (MARK_OK if self.ok else MARK_NOT), self._label()
        return f"{mark} {escape(label)}" if label else mark

    def _repr_markdown_(self):
        _progress.on_shown(self)
        body = "".join(part if part.startswith("`") and part.endswith("`") and len(part) > 1
                       else md_escape(part) for part in _CODE_SPAN.split(self.message))
        return f"**{self._head(md_escape)}** {body}"

    def _repr_html_(self):
        _progress.on_shown(self)
        parts = []
        for part in _CODE_SPAN.split(self.message):
            if part.startswith("`") and part.endswith("`") and len(part) > 1:
                parts.append(f"<code>{html.escape(part[1:-1])}</code>")
            else:
                parts.append(html.escape(part))
        kind = "ok" if self.ok else "not-yet"
        head = self._head(html.escape)
        # no space after a full-width full stop (「✗ まだです。アテンションの出力：…」); Markdown keeps it, as
        # CommonMark closes ** after 。 only before a space or punctuation
        sep = "" if head.endswith(("。", "：", "！", "？")) else " "
        return (f'<p class="selfcheck-verdict selfcheck-{kind}">'
                f"<strong>{head}</strong>{sep}{''.join(parts)}</p>")


_NUMBER_TEXT = re.compile(r"[<>]?[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?%?")


def _is_number(x) -> bool:
    """A number, or a string that reads as one (``">300"``, ``"12.5%"``): such a column right-aligns."""
    if isinstance(x, str):
        return bool(_NUMBER_TEXT.fullmatch(x))
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


class Table:
    """A table of formatted cells: ``str()`` is aligned plain text, a notebook shows an HTML table.

    Made by :func:`table`. ``columns`` are the headers and ``cells`` the formatted text of each
    row; ``values`` keeps the rows as given, for a hidden cell that asserts on them. A column whose
    given values are all numbers is right-aligned, any other column left-aligned.
    """

    def __init__(self, columns, cells, values, numeric, title=None):
        self.columns, self.cells, self.values, self.title = columns, cells, values, title
        self._numeric = numeric

    def __str__(self):
        # widths in columns: a Japanese character takes two
        widths = [max([i18n.columns(c)] + [i18n.columns(row[i]) for row in self.cells])
                  for i, c in enumerate(self.columns)]

        def line(row):
            return "  ".join(i18n.rjust(cell, w) if num else i18n.ljust(cell, w)
                             for cell, w, num in zip(row, widths, self._numeric)).rstrip()
        lines = ([self.title] if self.title else []) + [line(self.columns)]
        lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines + [line(row) for row in self.cells])

    def __repr__(self):
        return str(self)

    def _repr_html_(self):
        def cell(tag, text, num):
            style = ' style="text-align: right"' if num else ' style="text-align: left"'
            return f"<{tag}{style}>{html.escape(text)}</{tag}>"
        head = "".join(cell("th", c, n) for c, n in zip(self.columns, self._numeric))
        body = "".join("<tr>" + "".join(cell("td", c, n) for c, n in zip(row, self._numeric)) + "</tr>"
                       for row in self.cells)
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        return (f'<table class="lib-table">{caption}<thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>")


def table(rows, columns, formats=None, *, title=None) -> Table:
    """A :class:`Table` of ``rows`` under the headers ``columns``, each cell formatted by its column.

    ``rows`` is a sequence of rows, each a sequence with one value per column. ``formats`` is ``None``
    (every cell as ``str``) or one format spec per column (``".2f"``, ``".1e"``, ``".0%"``, ``"d"``;
    ``None`` or ``""`` for ``str``), as a sequence or a dict from header to spec. A cell that is
    already a string is shown as given (e.g. ``">300"`` for a run that never got there). ``title``
    is a line above the table.

    >>> print(table([(64, 0.5), (1024, 0.031)], ["d_k", "1/sqrt(d_k)"], [None, ".3f"]))
     d_k  1/sqrt(d_k)
    ----  -----------
      64        0.500
    1024        0.031
    """
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns) or not len(columns):
        raise TypeError(f"columns must be a non-empty sequence of header strings; got {columns!r}")
    columns = list(columns)
    n = len(columns)
    if formats is None:
        specs = [None] * n
    elif isinstance(formats, dict):
        unknown = sorted(set(formats) - set(columns))
        if unknown:
            raise ValueError(f"formats names columns the table does not have: {unknown}; columns: {columns}")
        specs = [formats.get(c) for c in columns]
    elif isinstance(formats, str) or len(formats) != n:
        raise ValueError(f"formats must give one spec per column ({n}: {columns}); got {formats!r}")
    else:
        specs = list(formats)
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a string; got {title!r}")
    values, cells = [], []
    for r, row in enumerate(rows):
        if isinstance(row, (str, bytes)) or not hasattr(row, "__len__"):
            raise TypeError(f"row {r} must be a sequence of {n} values; got {row!r}")
        if len(row) != n:
            raise ValueError(f"row {r} has {len(row)} values; the table has {n} columns ({columns})")
        out = []
        for value, spec, name in zip(row, specs, columns):
            if isinstance(value, str) or not spec:
                out.append(str(value))
                continue
            try:
                out.append(format(value, spec))
            except (ValueError, TypeError) as e:
                raise ValueError(f"row {r}, column {name!r}: cannot format {value!r} with {spec!r} ({e})") from None
        values.append(tuple(row))
        cells.append(out)
    numeric = [bool(values) and all(_is_number(v[i]) for v in values) for i in range(n)]
    return Table(columns, cells, values, numeric, title)
