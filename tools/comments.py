"""The comments of the book's code, in the Japanese edition: extraction, catalog, replacement.

A Japanese programming book translates the comments of the code it teaches and keeps the identifiers.
This module does that for the Japanese edition, from one catalog,
``locales/<lang>/LC_MESSAGES/comments.po``; the English edition is never touched.

    python tools/catalogs.py comments    refresh comments.po from the English (also part of ``update``)

**What is extracted.** Every ``#`` comment (a line of its own or after code) found by Python's
``tokenize`` (never a regex: a ``#`` inside a string or an f-string is not a comment) in

- the code cells of every MyST notebook page (the chapters and the primer) as the reader and the learner
  see them: the HTML page's cells, the solutions' code cells, and the cells the learner's and the
  trainer's notebooks keep folded (hidden set-up and checks: ``remove-cell``, ``remove-input``, a
  trainer's ``solution-check``), after ``tools/learner.py`` removed the claim checks and put its
  ``glue`` stand-in in; a comment only in cells that neither the HTML nor any notebook shows (a
  hidden cell of claim checks only) is left out;
- the fenced ``python`` and ``bash`` blocks of every page's prose.

Consecutive comment lines at the same indentation are one message, their lines joined with a newline
(a sentence often runs over two lines); the translation's lines become the comment lines, so the
translator decides where a Japanese comment breaks. A trailing comment is one message of its own.

**What counts as translatable** (:func:`needs_translation`, the one rule that extraction, the tests
and the built checks share): a comment is extracted when an English word is left after removing what
is code or maths: words joined by ``_`` or holding digits (``d_k``, ``float32``, ``W_Q``), dotted
names (``np.sqrt``, ``lib.softmax``), a name followed by ``(``, ``[`` or ``=`` (a call, an index, a
keyword), ``None``/``True``/``False``/``inf``/``nan``, text in backquotes, and single letters
(variables: ``(B, H, L, E)``, ``q·k``). A word is two or more ASCII letters. Tool pragmas (``noqa``,
``type:``, ``pragma:``, ``fmt:``, ``pylint:``, ``isort:``) and a comment that is Python code (it parses,
and defines a function, returns, imports or assigns a call: ``# def my_attention(q, k, v): ...``,
commented-out code) are never extracted. So ``# (B, H, L, E)``, ``# 1/sqrt(64)``, ``# (3, 3): J[i, j]
= dp_i / dz_j``, ``# scale=None`` and ``# (B, h, L, d_k), float64`` stay as they are, and
``# (L, d_k) each`` is translated.
The prompts of the cells a learner edits (``# your code here``, ``= None  # ...``) are
``prompts.po``'s (``tools/bookext.py``, part 7) and are not extracted again; this module's
replacement uses that catalog too, so the HTML page shows them in Japanese as well.

**Where the translation goes** (Japanese edition only; what is executed is never changed: the
notebooks run before, from the English source):

- the HTML page: at ``doctree-resolved``, the text of every code cell's source literal (myst-nb's
  ``cell_code_source``) and of every ``python``/``bash`` literal block, the solutions' included. The
  learner's notebook takes its solutions' code text from the same resolved document, so it gets them
  translated too;
- the learner's and the trainer's notebooks and the download button's copy: at ``build-finished``,
  after ``tools/bookext.py`` wrote them (priority 600, bookext's is the default 500), every code cell and
  every fenced ``python`` block of the Markdown cells.

A page that shows code depends on ``comments.po`` and ``prompts.po`` (``doctree-read``), so an edited
translation rewrites its page and notebooks in the next build; nothing is executed again.

A trailing comment keeps its column; the text after ``# `` is replaced. Where the translated line
would be wider than :data:`MAX_COLUMNS` (a Japanese character counts two columns) and wider than the
English line, the comment moves to a line of its own above the code, at the code's indentation (never
inside a string that spans lines). Nothing else of the code changes: ``tests/test_comments.py``
compares the token streams.
"""
from __future__ import annotations

import ast
import difflib
import io
import os
import re
import sys
import tokenize
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BOOK = ROOT / "book"
LOCALES = ROOT / "locales"
CATALOG_NAME = "comments.po"
#: the widest a visible code line may be in the Japanese rendering, East Asian wide characters counting 2
#: (the English rule is 80 characters: tests/test_notebook_source.py)
MAX_COLUMNS = 80
PY_LANGS = {"python", "python3", "py", "ipython", "ipython3"}
SHELL_LANGS = {"bash", "sh", "shell", "console"}
#: the kinds of a comment, most visible first: a comment seen in several places takes the first
KINDS = ("visible", "solution", "folded")

JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff01-\uff5e\u3000-\u303f]")
PRAGMA = re.compile(r"^\s*(noqa\b|type:|pragma:|fmt:|pylint:|isort:|nosec\b|%%|!)", re.I)
_CODEISH = re.compile(
    r"`[^`]*`"                                   # inline code
    r"|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+"        # dotted names: np.sqrt, lib.softmax
    r"|[A-Za-z_]\w*(?=[(\[=])"                   # a call, an index, a keyword: sqrt(, J[, scale=
    r"|\b(?:None|True|False|inf|nan)\b"            # constants
    r"|\b\w*(?:_|\d)\w*\b"                       # d_k, W_Q, float32, 2x
)
_WORD = re.compile(r"(?<![A-Za-z])[A-Za-z]{2,}(?![A-Za-z])")


# --- the rule --------------------------------------------------------------------------------------------

def has_japanese(text: str) -> bool:
    return bool(JAPANESE.search(text))


def is_code(text: str) -> bool:
    """A comment that is Python code: it parses, and defines, returns, imports, or assigns a call
    (``def my_attention(q, k, v): ...``, ``out = attention(q, k, v)``); a phrase that happens to parse
    (``each (5000,)``, ``q is (L, d_k)``) is not code."""
    try:
        tree = ast.parse(text.strip())
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Return, ast.Import, ast.ImportFrom, ast.Lambda)):
            return True
        if isinstance(node, (ast.Assign, ast.AugAssign)) and re.search(r"\w\(", text):
            return True
    return False


def needs_translation(text: str) -> bool:
    """The comment's text (without ``#``) holds English to translate (the rule in the module docstring)."""
    if not text.strip() or PRAGMA.match(text) or is_code(text):
        return False
    return bool(_WORD.search(_CODEISH.sub(" ", text)))


def is_english(text: str) -> bool:
    """A comment a Japanese reader should not see: English to translate, and no Japanese in it."""
    return needs_translation(text) and not has_japanese(text)


def columns(line: str) -> int:
    """The width of a line in a monospace code box: East Asian wide and full-width characters count 2."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


# --- finding comments --------------------------------------------------------------------------------------

@dataclass
class Comment:
    """One message: a trailing comment, or a block of consecutive comment lines at one indentation."""
    rows: list[int]              # 0-based line numbers in the source
    col: int                     # the column of the '#'
    texts: list[str]             # each line's text without '#' and the one space after it
    trailing: bool

    @property
    def text(self) -> str:
        return "\n".join(self.texts)


def _comment_text(token_string: str) -> str:
    body = token_string[1:].rstrip()
    return body[1:] if body.startswith(" ") else body


def _mask_magics(source: str) -> str:
    """IPython's ``%magic`` and ``!shell`` lines blanked out, the line count kept (tokenize is Python's)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))


def _python_comments(source: str) -> list[tuple[int, int, str]]:
    """(row, col, token string) of every COMMENT token; raises tokenize.TokenError/SyntaxError on code
    that does not tokenize."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(_mask_magics(source)).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0] - 1, tok.start[1], tok.string))
    return out


def _shell_comments(source: str) -> list[tuple[int, int, str]]:
    """The comments of a shell block: a '#' at a line's start or after a blank, outside quotes."""
    out = []
    for row, line in enumerate(source.split("\n")):
        quote = None
        for col, ch in enumerate(line):
            if quote:
                quote = None if ch == quote else quote
            elif ch in "'\"":
                quote = ch
            elif ch == "#" and (col == 0 or line[col - 1] in " \t"):
                out.append((row, col, line[col:]))
                break
    return out


def _is_prompt(line: str) -> bool:
    import bookext

    return bool(bookext.PROMPT.search(line))


def find_comments(source: str, language: str = "python") -> list[Comment]:
    """The messages of one piece of code, in order. Prompts (``prompts.po``'s) are left out."""
    raw = _shell_comments(source) if language in SHELL_LANGS else _python_comments(source)
    lines = source.split("\n")
    out: list[Comment] = []
    for row, col, string in raw:
        line = lines[row]
        if _is_prompt(line):
            continue
        trailing = bool(line[:col].strip())
        text = _comment_text(string)
        prev = out[-1] if out else None
        if (not trailing and prev is not None and not prev.trailing and prev.col == col
                and prev.rows[-1] == row - 1 and line[:col] == lines[prev.rows[-1]][:col]):
            prev.rows.append(row)
            prev.texts.append(text)
            continue
        out.append(Comment([row], col, [text], trailing))
    return out


def messages(source: str, language: str = "python") -> list[str]:
    """The translatable messages of one piece of code (:func:`needs_translation`)."""
    return [c.text for c in find_comments(source, language) if needs_translation(c.text)]


# --- replacing them ------------------------------------------------------------------------------------------

def _string_rows(source: str) -> set[int]:
    """The 0-based rows that start inside a token spanning lines (a triple-quoted string)."""
    rows = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(_mask_magics(source)).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                rows.update(range(tok.start[0], tok.end[0]))     # 0-based rows after the first
    except (tokenize.TokenError, SyntaxError):
        return set(range(len(source.split("\n"))))
    return rows


def translate_source(source: str, table: dict[str, str], language: str = "python",
                     max_columns: int = MAX_COLUMNS) -> str:
    """``source`` with each comment whose text ``table`` translates replaced by the translation; code,
    strings and untranslated comments as they were. Code that does not tokenize is returned as it is."""
    try:
        found = find_comments(source, language)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source
    # the prompts, from prompts.po: single trailing or own-line comments that find_comments skips
    lines = source.split("\n")
    prompts = []
    if language not in SHELL_LANGS:
        try:
            raw = _python_comments(source)
        except (tokenize.TokenError, SyntaxError):
            raw = []
        for row, col, string in raw:
            if _is_prompt(lines[row]):
                prompts.append(Comment([row], col, [_comment_text(string)], bool(lines[row][:col].strip())))
    in_string = _string_rows(source) if language not in SHELL_LANGS else set()
    replace: dict[int, list[str]] = {}            # row -> the lines that replace it
    drop: set[int] = set()
    for c in sorted(found + prompts, key=lambda c: c.rows[0]):
        new = table.get(c.text)
        if not new or new == c.text:
            continue
        new_lines = new.split("\n")
        first = c.rows[0]
        lead = lines[first][:c.col]
        if c.trailing:
            code = lead
            line = f"{code}# {' '.join(s.strip() for s in new_lines)}"
            if (columns(line) > max_columns and columns(line) > columns(lines[first])
                    and first not in in_string):
                indent = code[: len(code) - len(code.lstrip())]
                replace[first] = [f"{indent}# {s}" for s in new_lines] + [code.rstrip()]
            else:
                replace[first] = [line]
        else:
            replace[first] = [f"{lead}# {s}".rstrip() for s in new_lines]
            drop.update(c.rows[1:])
    if not replace:
        return source
    out = []
    for row, line in enumerate(lines):
        if row in drop:
            continue
        out.extend(replace.get(row, [line]))
    return "\n".join(out)


# --- the catalog -------------------------------------------------------------------------------------------

def catalog_path(lang: str = "ja") -> Path:
    return LOCALES / lang / "LC_MESSAGES" / CATALOG_NAME


def table(lang: str = "ja") -> dict[str, str]:
    """Every finished translation of a comment: comments.po, then prompts.po (non-fuzzy, non-empty)."""
    sys.path.insert(0, str(ROOT))
    from lib.infra.i18n import read_po

    out: dict[str, str] = {}
    prompts = LOCALES / lang / "LC_MESSAGES" / "prompts.po"
    if prompts.is_file():
        out.update(read_po(prompts))
    if catalog_path(lang).is_file():
        out.update(read_po(catalog_path(lang)))
    return out


@dataclass
class Found:
    """One extracted message: where it is and how visible."""
    msgid: str
    pages: list[str] = field(default_factory=list)
    kind: str = "folded"


_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)\s*$", re.M | re.S)


def fenced_blocks(markdown: str):
    """(language, code) of the fenced code blocks of a MyST text, inside directives too."""
    for m in _FENCE.finditer(markdown):
        info = m.group("info").strip()
        if info.startswith("{"):
            if not info.startswith("{code-cell"):
                yield from fenced_blocks(m.group("body"))
            continue
        yield (info.split()[0].lower() if info else ""), m.group("body")


def _tags(cell) -> set:
    return set(cell.get("metadata", {}).get("tags", []))


def shown_code(path: Path):
    """(kind, language, code) of every piece of code a page shows somewhere, as it is shown: the HTML
    page's cells (``visible``), its solutions' cells (``solution``), the notebooks' folded cells
    (``folded``), its prose's fenced blocks."""
    import chapters
    import learner

    nb = chapters.read(path)
    if nb is None:
        for lang, code in fenced_blocks(path.read_text(encoding="utf-8")):
            if lang in PY_LANGS | SHELL_LANGS:
                yield "visible", lang, code
        return
    in_solution = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for lang, code in fenced_blocks(cell.source):
                if lang in PY_LANGS | SHELL_LANGS:
                    yield ("solution" if in_solution else "visible"), lang, code
            if "{solution-start}" in cell.source:
                in_solution = True
            if "{solution-end}" in cell.source:
                in_solution = False
            continue
        if cell.cell_type != "code":
            continue
        tags = _tags(cell)
        hidden = bool(tags & {"remove-cell", "remove-input"})
        if not hidden:
            yield ("solution" if in_solution else "visible"), "python", cell.source
        # as tools/learner.py writes it into the notebooks (folded when hidden)
        nb_source = learner.without_book_stack(learner.without_claims(cell.source), path.stem)
        if "remove-cell" in tags and not any(line.strip() and not line.lstrip().startswith("#")
                                             for line in nb_source.splitlines()):
            continue                             # a cell of claim checks only: in no notebook
        yield ("solution" if in_solution else "folded" if hidden else "visible"), "python", nb_source


def pages() -> list[Path]:
    """Every page of the book, in the order of ``_toc.yml`` (chapters first), then the others by name."""
    import chapters

    order = [chapters.source(t) for t in chapters.chapters()]
    rest = sorted(p for p in BOOK.glob("*.md") if p not in order)
    return order + rest


def extract() -> dict[str, Found]:
    """Every translatable comment of the book: msgid -> Found, in the book's order."""
    out: dict[str, Found] = {}
    for path in pages():
        page = path.relative_to(ROOT).as_posix()
        for kind, lang, code in shown_code(path):
            try:
                msgs = messages(code, lang)
            except (tokenize.TokenError, SyntaxError) as e:
                raise SystemExit(f"{page}: a code cell does not tokenize ({e}):\n{code[:200]}") from e
            for msg in msgs:
                f = out.setdefault(msg, Found(msg))
                if page not in f.pages:
                    f.pages.append(page)
                if KINDS.index(kind) < KINDS.index(f.kind):
                    f.kind = kind
    return out


HEADER = ("The comments of the book's code, for the Japanese edition's HTML pages and notebooks\n"
          "(tools/comments.py). Extracted from the English by `python tools/catalogs.py comments`;\n"
          "write each msgstr (the translation's lines become the comment's lines) and remove `fuzzy`.\n"
          "Each entry says where the comment is shown: visible (an HTML page's code), solution (a\n"
          "solution's code), folded (the notebooks' folded set-up and checks).")


def update_catalog(lang: str = "ja", path: Path | None = None, found: dict[str, Found] | None = None) -> dict:
    """Refresh the catalog from the English: new comments untranslated, a changed comment fuzzy with
    the closest old translation, a comment the book no longer has dropped. Returns counts."""
    import polib

    path = path or catalog_path(lang)
    found = extract() if found is None else found
    old = polib.pofile(str(path), wrapwidth=0) if path.is_file() else None
    old_entries = {e.msgid: e for e in old if e.msgid and not e.obsolete} if old is not None else {}
    po = polib.POFile(wrapwidth=0)
    po.header = HEADER
    po.metadata = {"Language": lang, "Content-Type": "text/plain; charset=UTF-8",
                   "Content-Transfer-Encoding": "8bit", "MIME-Version": "1.0"}
    gone = [m for m in old_entries if m not in found]
    counts = {"new": 0, "fuzzy": 0, "kept": 0, "gone": 0}
    for msgid, f in found.items():
        e = polib.POEntry(msgid=msgid, msgstr="", occurrences=[(p, "") for p in f.pages], comment=f.kind)
        prev = old_entries.get(msgid)
        if prev is not None:
            e.msgstr, e.flags = prev.msgstr, list(prev.flags)
            e.previous_msgid = prev.previous_msgid if prev.fuzzy else None
            counts["kept"] += 1
        else:
            close = difflib.get_close_matches(msgid, gone, n=1, cutoff=0.75)
            if close and old_entries[close[0]].msgstr:
                e.msgstr, e.flags, e.previous_msgid = old_entries[close[0]].msgstr, ["fuzzy"], close[0]
                counts["fuzzy"] += 1
            else:
                counts["new"] += 1
        po.append(e)
    counts["gone"] = len(gone)
    path.parent.mkdir(parents=True, exist_ok=True)
    po.save(str(path))
    return counts


def problems(lang: str = "ja", found: dict[str, Found] | None = None) -> list[str]:
    """What is wrong with the catalog: out of date with the English, untranslated, fuzzy, a translation
    with no Japanese, or one that drops an identifier of the English."""
    import polib

    path = catalog_path(lang)
    found = extract() if found is None else found
    if not path.is_file():
        return [f"{path.relative_to(ROOT)}: missing; run `python tools/catalogs.py comments`"]
    po = polib.pofile(str(path))
    entries = {e.msgid: e for e in po if e.msgid and not e.obsolete}
    out = []
    for msgid, f in found.items():
        where = ", ".join(f.pages)
        e = entries.get(msgid)
        if e is None:
            out.append(f"{where}: comment not in {CATALOG_NAME} (run `python tools/catalogs.py comments`, "
                       f"then translate it): # {msgid!r}")
        elif e.fuzzy:
            out.append(f"{where}: fuzzy (the English changed; retranslate, remove the flag): # {msgid!r}")
        elif not e.msgstr:
            out.append(f"{where}: comment with no translation: # {msgid!r}")
        else:
            out += [f"{where}: {p}: # {msgid!r}" for p in translation_problems(msgid, e.msgstr)]
    for msgid in entries.keys() - found.keys():
        out.append(f"{CATALOG_NAME}: a comment the book no longer has (run `python tools/catalogs.py "
                   f"comments`): {msgid!r}")
    return out


_IDENT = re.compile(r"`[^`]*`|\b[A-Za-z_]\w*(?:\.\w+)+|\b[A-Za-z]\w*_\w*|\b[A-Za-z_]\w*(?=\()")


def translation_problems(msgid: str, msgstr: str) -> list[str]:
    out = []
    if not has_japanese(msgstr):
        out.append("the translation has no Japanese")
    missing = sorted({m for m in _IDENT.findall(msgid)} - {m for m in _IDENT.findall(msgstr)})
    if missing:
        out.append(f"identifiers dropped by the translation: {missing}")
    return out


# --- the Sphinx extension ---------------------------------------------------------------------------------

def _lang(app) -> str:
    return app.config.language or "en"


def translate_doctree(app, doctree, docname=None) -> int:
    """``doctree-resolved``: the code shown on a page of a translated edition, with its comments
    translated (the cells' source literals and the python/bash literal blocks). Returns the count of
    blocks changed."""
    if _lang(app) == "en":
        return 0
    from docutils import nodes

    tab = _table_for(app)
    changed = 0
    for node in list(doctree.findall(nodes.literal_block)):
        lang = (node.get("language") or "").lower()
        in_cell = node.parent is not None and node.parent.get("nb_element") == "cell_code_source"
        if not in_cell and lang not in PY_LANGS | SHELL_LANGS:
            continue
        text = node.astext()
        if node.rawsource and node.rawsource != text:
            continue                             # a parsed literal: markup inside
        new = translate_source(text, tab, "bash" if lang in SHELL_LANGS else "python")
        if new != text:
            node.rawsource = new
            node.children = []
            node += nodes.Text(new)
            changed += 1
    return changed


def _table_for(app) -> dict[str, str]:
    cache = getattr(app, "_book_comment_table", None)
    if cache is None:
        cache = app._book_comment_table = table(_lang(app))
    return cache


def translate_notebook(path: Path, tab: dict[str, str]) -> bool:
    """Rewrite one notebook's comments (code cells, and fenced python blocks of Markdown cells);
    True if it changed."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        if cell.cell_type == "code":
            new = translate_source(cell.source, tab)
        elif cell.cell_type == "markdown" and "```" in cell.source:
            new = _translate_markdown(cell.source, tab)
        else:
            continue
        if new != cell.source:
            cell.source, changed = new, True
    if changed:
        nbformat.write(nb, path)
    return changed


def _translate_markdown(text: str, tab: dict[str, str]) -> str:
    def one(m):
        info = m.group("info").strip().lower()
        if info.split()[:1] and info.split()[0] in PY_LANGS | SHELL_LANGS:
            lang = "bash" if info.split()[0] in SHELL_LANGS else "python"
            body = m.group("body")
            new = translate_source(body.rstrip("\n"), tab, lang) + body[len(body.rstrip("\n")):]
            return m.group(0).replace(body, new, 1)
        return m.group(0)

    return _FENCE.sub(one, text)


def notebooks_of(app) -> list[Path]:
    """The notebooks of this edition that ``tools/learner.py`` writes: learner, trainer, and the download
    button's copies in ``_sources``."""
    base = Path(os.environ.get("BOOK_NOTEBOOKS") or ROOT / "_build" / "notebooks") / _lang(app)
    out = sorted((base / "learner").glob("*.ipynb")) + sorted((base / "trainer").glob("*.ipynb"))
    out += sorted((Path(app.outdir) / "_sources").rglob("*.ipynb"))
    return out


def _notebooks(app, exception):
    """``build-finished``, after tools/bookext.py wrote the notebooks: their comments translated."""
    if exception is not None or app.builder.name != "html" or _lang(app) == "en":
        return
    from sphinx.util import logging

    import time

    start = time.perf_counter()
    tab = _table_for(app)
    paths = notebooks_of(app)
    n = sum(translate_notebook(p, tab) for p in paths)
    logging.getLogger(__name__).info(f"[comments] code comments translated in {n} of {len(paths)} notebooks "
                                     f"({time.perf_counter() - start:.1f} s)")


def _doctree_resolved(app, doctree, docname):
    translate_doctree(app, doctree, docname)


def _depend_on_catalogs(app, doctree):
    """``doctree-read``: a page that shows code depends on the catalogs its comments come from, so that
    editing a translation rewrites the page (and its notebooks) in the next build."""
    if _lang(app) == "en":
        return
    from docutils import nodes

    if next(iter(doctree.findall(nodes.literal_block)), None) is not None:
        for path in (catalog_path(_lang(app)), LOCALES / _lang(app) / "LC_MESSAGES" / "prompts.po"):
            if path.is_file():
                app.env.note_dependency(str(path))


def setup(app):
    sys.path.insert(0, str(HERE))
    app.connect("doctree-read", _depend_on_catalogs)
    app.connect("doctree-resolved", _doctree_resolved)
    app.connect("build-finished", _notebooks, priority=600)    # after bookext's (500) wrote them
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    if argv in ([], ["update"]):
        counts = update_catalog()
        print(f"{CATALOG_NAME}: {counts}")
        return 0
    if argv == ["check"]:
        bad = problems()
        print("\n".join(bad) or f"{CATALOG_NAME}: every comment translated")
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
