"""Translated strings for what code shows: figure text, widget labels, self-check verdicts.

The book has one English source and a Japanese edition. The prose is translated in gettext catalogs,
``locales/<lang>/LC_MESSAGES/<page>.po`` (one per page; ``lib.po`` for lib's own messages). Strings
that code puts in front of a reader come from the **same catalogs**: code marks them with :func:`tr`,
and the catalog tool (``tools/catalogs.py``) extracts every ``tr("...")`` call into the catalog of the page
(or of lib) it appears in, next to that page's prose::

    from lib.i18n import tr
    ax.set_xlabel(tr("key index $j$"))
    ax.set_title(tr("{n} keys", n=32))        # fields: the message is a str.format template

In English ``tr`` returns the message itself. In another language it returns the catalog's
translation, or the English message while it has none (an untranslated or fuzzy entry). The language
is ``set_language(...)`` if called, else the environment variable ``BOOK_LANG`` (``make`` sets it for
the Japanese edition and for ``make lab BOOK_LANG=ja``), else English.

Rules that keep extraction exact (``tests/test_notebook_source.py`` enforces them): the message is one
string literal (implicit concatenation of literals is fine; an f-string or a variable is not), and
numbers go in as fields, never into the message text.
"""
from __future__ import annotations

import os
import re
import textwrap
import unicodedata
from pathlib import Path

__all__ = ["tr", "language", "set_language", "set_page", "page", "catalog", "page_catalog", "wrap",
           "phrases", "ljust", "LANGUAGES"]

#: The editions the book has. English is the source; the others are catalogs under ``locales/``.
LANGUAGES = ("en", "ja")

_chosen: str | None = None
_page: str | None = None
_catalogs: dict[str, dict[str, str]] = {}
_page_catalogs: dict[tuple[str, str], dict[str, str]] = {}


def _locales_dir() -> Path:
    """``$BOOK_LOCALES``; else the copy of the catalogs inside the package (``lib/locale-catalogs``: lib
    installed from the wheel that ``classroom/room.py`` builds for an offline bundle or a JupyterHub);
    else ``locales/`` beside this package (a checkout or an editable install, which have no copy)."""
    if os.environ.get("BOOK_LOCALES"):
        return Path(os.environ["BOOK_LOCALES"])
    package = Path(__file__).resolve().parents[1]              # lib/ (this file is lib/infra/i18n.py)
    inside = package / "locale-catalogs"
    return inside if inside.is_dir() else package.parent / "locales"


def language() -> str:
    """The language code in use: ``set_language``'s, else ``$BOOK_LANG``, else ``"en"``."""
    lang = _chosen or os.environ.get("BOOK_LANG") or "en"
    if lang not in LANGUAGES:
        raise ValueError(f"unknown book language {lang!r} (from BOOK_LANG or set_language); "
                         f"the book has {', '.join(LANGUAGES)}")
    return lang


def set_language(lang: str | None) -> None:
    """Use ``lang`` (``"en"``, ``"ja"``) from now on; ``None`` goes back to ``$BOOK_LANG``."""
    global _chosen
    if lang is not None and not isinstance(lang, str):
        raise TypeError(f"set_language expects a language code such as 'ja' or None; got {type(lang).__name__}")
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(f"unknown book language {lang!r}; the book has {', '.join(LANGUAGES)}")
    _chosen = lang


def set_page(name: str | None) -> None:
    """Say which page of the book the code runs in (``"block"`` for ``book/block.md``); ``None``: none.

    Each chapter's hidden set-up cell calls it. The same English word can mean two things on two pages
    ("step": a step of a hand computation in one chapter, a training step in another), and each page's
    catalog has the translation for its own meaning: :func:`tr` looks in the page's catalog first.
    """
    global _page
    if name is None:
        _page = None
        return
    if not isinstance(name, str):
        raise TypeError(f"set_page expects a page name such as 'block' or None; got {type(name).__name__}")
    stem = name.removeprefix("book/").removesuffix(".md").removesuffix(".ipynb")
    if not re.fullmatch(r"[a-z0-9_]+", stem):
        raise ValueError(f"set_page: {name!r} is not a page name (the file name of a chapter without "
                         "its extension, e.g. 'block')")
    known = _known_pages()
    if known and stem not in known:
        raise ValueError(f"set_page: the book has no page {stem!r}; its pages with catalogs are "
                         f"{', '.join(sorted(known))}")
    _page = stem


def page() -> str | None:
    """The page named by :func:`set_page`, or ``None``."""
    return _page


def _known_pages() -> set[str]:
    """The pages that have a catalog in some translated edition (empty where no catalogs are found)."""
    out: set[str] = set()
    for lang in LANGUAGES[1:]:
        folder = _locales_dir() / lang / "LC_MESSAGES" / "book"
        if folder.is_dir():
            out.update(p.stem for p in folder.glob("*.po"))
    return out


def page_catalog(lang: str, name: str) -> dict[str, str]:
    """The finished translations of one page's catalog (``locales/<lang>/LC_MESSAGES/book/<name>.po``);
    empty if the page has none."""
    key = (lang, name)
    if key not in _page_catalogs:
        path = _locales_dir() / lang / "LC_MESSAGES" / "book" / f"{name}.po"
        _page_catalogs[key] = read_po(path) if path.is_file() else {}
    return _page_catalogs[key]


def tr(message: str, /, **fields) -> str:
    """``message`` in the current language, with ``fields`` filled in (``str.format``) if given.

    The translation comes from the catalog of the page named by :func:`set_page` if it has one, else
    from the book-wide :func:`catalog`."""
    if not isinstance(message, str):
        raise TypeError(f"tr expects the English message as a str; got {type(message).__name__}")
    lang = language()
    if lang == "en":
        text = message
    else:
        own = page_catalog(lang, _page).get(message) if _page else None
        text = own or catalog(lang).get(message) or message
    if lang != "en":
        fields = {k: _error_text(v) for k, v in fields.items()}
    return text.format(**fields) if fields else text


#: What Python's exceptions mean, in the editions' languages. Python's own message is English prose
#: (``could not convert string to float: 'x'``); in a translated verdict the reader gets the type name
#: (an identifier, kept) and what it means in their language instead.
ERROR_MEANINGS = {
    "ja": {
        "ValueError": "受け付けられない値です",
        "TypeError": "型が合いません",
        "IndexError": "添字が範囲外です",
        "KeyError": "その名前（キー）はありません",
        "ZeroDivisionError": "0 で割っています",
        "AttributeError": "その属性はありません",
        "NameError": "定義されていない名前です",
        "OverflowError": "数が大きすぎて表せません",
        "RuntimeError": "実行中にエラーが起きました",
        "NotImplementedError": "まだ書かれていない処理です",
        "AssertionError": "assert が成り立ちませんでした",
        "": "実行中にエラーが起きました",
    },
}
_ERROR_STRING = re.compile(r"^(?P<name>[A-Z][A-Za-z]*(?:Error|Exception)): .*$", re.S)


def _error_text(value):
    """A field of a translated message: an exception (or "SomeError: English text") becomes its
    type's meaning in the current language; anything else is returned unchanged."""
    meanings = ERROR_MEANINGS.get(language())
    if not meanings:
        return value
    if isinstance(value, BaseException):
        name = type(value).__name__
        return meanings.get(name) or meanings[""]
    if isinstance(value, str):
        m = _ERROR_STRING.match(value)
        if m:
            name = m.group("name")
            return f"{name}：{meanings.get(name) or meanings['']}"
    return value


def catalog(lang: str) -> dict[str, str]:
    """Every finished translation of ``lang``: English message -> translation (cached).

    Reads all ``.po`` files under ``locales/<lang>/LC_MESSAGES``. A message can be in several
    catalogs (lib's "attention weights" is also a glossary heading), so the translation of a string
    that code shows is taken (after the page's own catalog: see :func:`tr`) from ``lib.po``, then
    from an entry a page's catalog marks as code (``#. code``), then from any other entry (sorted by
    path; the first one wins).
    Fuzzy, obsolete and empty entries are left out, so their English shows.
    """
    if lang not in _catalogs:
        folder = _locales_dir() / lang / "LC_MESSAGES"
        paths = sorted(folder.rglob("*.po")) if folder.is_dir() else []
        paths.sort(key=lambda p: p.name != "lib.po")          # lib.po first (stable sort)
        code_layer: dict[str, str] = {}
        other_layer: dict[str, str] = {}
        for path in paths:
            code: set[str] = set()
            entries = read_po(path, code=code)
            for msgid, msgstr in entries.items():
                layer = code_layer if (path.name == "lib.po" or msgid in code) else other_layer
                layer.setdefault(msgid, msgstr)
        _catalogs[lang] = {**other_layer, **code_layer}
    return _catalogs[lang]


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
_QUOTED = re.compile(r'^"(.*)"\s*$')


def _unquote(line: str, path, lineno) -> str:
    m = _QUOTED.match(line)
    if not m:
        raise ValueError(f"{path}:{lineno}: expected a quoted string, got {line!r}")
    return re.sub(r"\\(.)", lambda e: _ESCAPES.get(e.group(1), "\\" + e.group(1)), m.group(1))


def read_po(path, *, code: set[str] | None = None) -> dict[str, str]:
    """The translated, non-fuzzy entries of one gettext ``.po`` file: ``{msgid: msgstr}``.

    ``code``: if given, the msgids of the entries marked ``#. code`` (strings that code shows) are
    added to it.

    A small reader for what Sphinx and sphinx-intl write (``msgctxt`` is read and ignored, plural forms
    are not used by this book); ``tests/test_i18n.py`` compares it with polib on real catalogs.
    """
    out: dict[str, str] = {}
    entry: dict[str, str] = {}
    fuzzy = False
    is_code = False
    field = None

    def flush():
        nonlocal entry, fuzzy, field, is_code
        if entry.get("msgid") and entry.get("msgstr") and not fuzzy:
            out[entry["msgid"]] = entry["msgstr"]
            if is_code and code is not None:
                code.add(entry["msgid"])
        entry, fuzzy, field, is_code = {}, False, None, False

    for lineno, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line:
            flush()
        elif line.startswith("#~"):
            continue                                  # obsolete entry
        elif line.startswith("#,"):
            if entry:                                 # flags start a new entry
                flush()
            fuzzy = "fuzzy" in (f.strip() for f in line[2:].split(","))
        elif line.startswith("#."):
            if entry:                                 # comments start a new entry
                flush()
            is_code = is_code or line[2:].split() == ["code"]
        elif line.startswith("#"):
            continue
        elif line.startswith(("msgctxt ", "msgid ", "msgstr ")):
            key, rest = line.split(" ", 1)
            if key in ("msgctxt", "msgid") and "msgstr" in entry:
                flush()                               # a new entry without a blank line before it
            field = key
            entry[field] = _unquote(rest, path, lineno)
        elif line.startswith('"') and field:
            entry[field] += _unquote(line, path, lineno)
        else:
            raise ValueError(f"{path}:{lineno}: cannot read this line of a .po file: {raw!r}")
    flush()
    return out


_NO_LINE_START = set("、。，．・：；？！）」』】〉》ー…")   # Japanese punctuation that never opens a line
_parser = None


def _columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def columns(text: str) -> int:
    """How many columns ``text`` takes in a monospaced printout, a Japanese character counting two."""
    if not isinstance(text, str):
        raise TypeError(f"columns expects a str; got {type(text).__name__}")
    return _columns(text)


def ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` columns, a Japanese character counting two (what a
    monospaced printout needs: ``f"{label:<36}"`` counts characters, so Japanese rows stick out)."""
    if not isinstance(text, str):
        raise TypeError(f"ljust expects a str; got {type(text).__name__}")
    return text + " " * max(0, int(width) - _columns(text))


def rjust(text: str, width: int) -> str:
    """``text`` right-aligned in ``width`` columns, a Japanese character counting two (see ``ljust``)."""
    if not isinstance(text, str):
        raise TypeError(f"rjust expects a str; got {type(text).__name__}")
    return " " * max(0, int(width) - _columns(text)) + text


def phrases(text: str) -> list[str]:
    """``text`` cut into the phrases a line may break between, by BudouX's Japanese model.

    BudouX (Google's phrase segmenter, the one browsers use for ``word-break: auto-phrase``) keeps a
    word and its particles together: ``"ソフトマックスの後です。"`` -> ``["ソフトマックスの", "後です。"]``.
    Joining the phrases gives ``text`` back unchanged.
    """
    global _parser
    if _parser is None:
        import budoux  # noqa: PLC0415 - lazy: only Japanese text needs it

        _parser = budoux.load_default_japanese_parser()
    return _parser.parse(text) if text else []


def _chunks(text: str) -> list[str]:
    """Unbreakable pieces of one line of text: spaces kept as their own chunks, ASCII words whole,
    Japanese cut at BudouX's phrase boundaries."""
    out: list[str] = []
    for part in re.split(r"(\s+)", text):
        if not part:
            continue
        if part.isspace():
            out.append(" ")
        elif _columns(part) == len(part):
            out.append(part)
        else:
            out.extend(phrases(part))
    return out


def _split_long(chunk: str, width: int) -> list[str]:
    """A phrase wider than a whole line (rare: a long compound) is cut between characters."""
    pieces, piece = [], ""
    for ch in chunk:
        if piece and _columns(piece + ch) > width and ch not in _NO_LINE_START:
            pieces.append(piece)
            piece = ""
        piece += ch
    return pieces + ([piece] if piece else [])


def wrap(text: str, width: int = 78) -> str:
    """``textwrap.fill`` for both editions: lines of at most ``width`` columns.

    English (text without wide characters) is exactly ``textwrap.fill(text, width)``. Japanese has no
    spaces between words, so there a line breaks between the phrases BudouX finds (:func:`phrases`),
    never inside a word (``ソフ|トマックス``); wide characters count as two columns, as a terminal and
    a ``<pre>`` block show them; ASCII words are never split, and a closing mark such as 。 or ） never
    starts a line. A single word or phrase longer than ``width`` gets a line of its own (a phrase is
    cut between characters only if it is wider than a line).
    """
    if not isinstance(text, str):
        raise TypeError(f"wrap needs a str; got {type(text).__name__}")
    if not isinstance(width, int) or width < 10:
        raise ValueError(f"width must be an int of at least 10 columns; got {width!r}")
    if _columns(text) == len(text):
        return textwrap.fill(text, width)
    lines, line = [], ""
    for chunk in _chunks(" ".join(text.split())):
        if chunk == " ":
            if line:
                line += " "
            continue
        if _columns(chunk) > width and _columns(chunk) != len(chunk):
            pieces = _split_long(chunk, width)
        else:
            pieces = [chunk]
        for tok in pieces:
            if line and _columns(line.rstrip() + tok) > width and tok[0] not in _NO_LINE_START:
                lines.append(line.rstrip())
                line = ""
            line += tok
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)
