"""How a result shows to a learner in a notebook: a mark, a bold label and a message, as rich text.

:class:`Shown` is the base of every result a learner reads: the self-checks' :class:`lib.Verdict`,
:class:`lib.scale_probe.ScaleReport` and :class:`lib.port_check.PortReport`. It knows nothing about
checking; it only decides how a result looks (plain text, Markdown, HTML) and tells
:mod:`lib.progress` that a learner saw one.
"""
from __future__ import annotations

import html
import re

from . import progress as _progress

__all__ = ["Shown", "MARK_OK", "MARK_NOT", "md_escape"]

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
        return (f'<p class="selfcheck-verdict selfcheck-{kind}">'
                f"<strong>{self._head(html.escape)}</strong> {''.join(parts)}</p>")
