"""The comments of the book's code in the Japanese edition (tools/comments.py): the extractor against
Python's tokenize, the replacement keeps every token but the comments, every comment the book shows
has a Japanese translation, and the translated lines fit the code box. No build needed."""
from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path
from types import SimpleNamespace

import polib
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import comments  # noqa: E402

TRICKY = '''\
x = "# not a comment"          # a real one
y = f"{x!r} # still a string {'#'}"   # after an f-string
s = """
# inside a triple-quoted string
"""  # after the string
z = {"a": 1,   # inside brackets
     "b": 2}
h = '#a6a6a6'
t = "it's"  # quote's in a comment
# own line
#   indented text in an own-line comment
    # (B, H, L, E)
'''


def _tokenize_comments(source):
    return [(t.start[0] - 1, t.start[1], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type == tokenize.COMMENT]


def test_comments_are_tokenize_comments():
    """Every comment tokenize finds is found, and nothing else: no '#' inside a string or f-string."""
    found = comments.find_comments(TRICKY)
    rows = [(r, c.col) for c in found for r in c.rows]
    assert rows == [(r, c) for r, c, _ in _tokenize_comments(TRICKY)]
    texts = [c.text for c in found]
    assert texts[:6] == ["a real one", "after an f-string", "after the string", "inside brackets",
                         "quote's in a comment", "own line\n  indented text in an own-line comment"]
    assert not any("not a comment" in t or "inside a triple" in t or "a6a6a6" in t for t in texts)
    assert [c.trailing for c in found] == [True, True, True, True, True, False, False]


def test_consecutive_comment_lines_are_one_message_only_at_one_indentation():
    src = "# one\n# two\nx = 1\n# three\n    # four\n"
    assert [c.text for c in comments.find_comments(src)] == ["one\ntwo", "three", "four"]


def test_prompts_are_left_to_prompts_po():
    src = "my_raw = None       # your two raw scores, e.g. [.., ..]\n# your code here\nx = 1  # a note\n"
    assert comments.messages(src) == ["a note"]


def test_magics_and_shell_blocks():
    assert comments.messages("%matplotlib inline\nx = 1  # one\n") == ["one"]
    assert comments.messages("make book   # builds the book\necho '# not this'\n", "bash") == ["builds the book"]


@pytest.mark.parametrize("text,want", [
    ("(B, H, L, E)", False), ("(L, S) = (3, 3)", False), ("1/sqrt(64)", False), ("noqa: E402", False),
    ("type: ignore", False), ("(3, 3): J[i, j] = dp_i / dz_j", False), ("(B, h, L, d_k), float64", False),
    ("scale=None", False), ("inf / inf", False), ("q·k/√d_k", False),
    ("(L, d_k) each", True), ("the usual stable softmax", True), ("BLOOM: a bias per head", True),
    ("e^H: effective number", True), ("W_V: random", True), ("eq-exam-corr", True),
    ("def my_attention(q, k, v): ...", False), ("out = attention(q, k, v)", False),   # code
    ("each (5000,)", True), ("q is (L, d_k)", True), ("entropy in nats", True),         # phrases that parse
])
def test_the_rule_for_what_is_translated(text, want):
    assert comments.needs_translation(text) is want


def test_columns_count_wide_characters_twice():
    assert comments.columns("abc") == 3 and comments.columns("注意重み") == 8 and comments.columns("√σ·") == 3


TABLE = {"a real one": "本物のコメント", "after an f-string": "f 文字列の後", "after the string": "文字列の後",
         "inside brackets": "括弧の中", "own line\n  indented text in an own-line comment": "独立した行\n2 行目",
         "quote's in a comment": "コメント中の引用符"}


def _code_tokens(source):
    """The token stream without comments and the newlines of non-logical lines (moving a comment adds one)."""
    return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL)]


def test_replacement_keeps_every_token_but_the_comments():
    out = comments.translate_source(TRICKY, TABLE)
    assert _code_tokens(out) == _code_tokens(TRICKY)
    assert "# 本物のコメント" in out and '"# not a comment"' in out and "# inside a triple-quoted string" in out
    assert out.split("\n")[0] == 'x = "# not a comment"          # 本物のコメント'   # the column is kept
    assert "# 独立した行\n# 2 行目\n" in out and "indented text" not in out
    assert "#   (B, H, L, E)" not in out and "    # (B, H, L, E)" in out          # not translated: as it was
    ast.parse(out)


def test_a_too_wide_trailing_comment_moves_above_its_line():
    src = "def f(q, k, v):\n    scores = (q * s) @ (k * s).T                  # (L, S), already scaled\n"
    long = {"(L, S), already scaled": "(L, S) の形、すでにスケーリング済み、この行には長すぎる説明"}
    out = comments.translate_source(src, long)
    assert out.split("\n")[1] == "    # (L, S) の形、すでにスケーリング済み、この行には長すぎる説明"
    assert out.split("\n")[2] == "    scores = (q * s) @ (k * s).T"
    assert _code_tokens(out) == _code_tokens(src)
    # never into a string that spans lines
    src = 's = """a\nb"""  # ' + "x" * 70 + "\n"
    out = comments.translate_source(src, {"x" * 70: "長" * 40})
    assert out.split("\n")[:2] == ["s = \"\"\"a", 'b"""  # ' + "長" * 40]


def test_replacement_leaves_english_and_code_that_does_not_tokenize_alone():
    assert comments.translate_source("x = (1,  # open\n", TABLE) == "x = (1,  # open\n"
    assert comments.translate_source("x = 1  # a real one", {}) == "x = 1  # a real one"


# --- the book's own comments ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def found():
    return comments.extract()


@pytest.fixture(scope="module")
def table():
    return comments.table("ja")


def test_the_extraction_finds_the_books_comments(found):
    assert "the usual stable softmax" in found and found["the usual stable softmax"].kind == "visible"
    assert "(B, H, L, E)" not in found                          # nothing to translate
    assert "your code here" not in found                         # prompts.po's
    assert any(f.kind == "solution" for f in found.values()) and any(f.kind == "folded" for f in found.values())
    # tools/learner.py's glue stand-in says something in every notebook: it is translated too
    assert any("no-op here" in m for m in found)


def test_every_comment_has_a_japanese_translation(found):
    """A new English comment in a chapter, without its translation in comments.po, fails here."""
    bad = comments.problems("ja", found)
    assert not bad, (f"{len(bad)} problem(s) with locales/ja/LC_MESSAGES/comments.po (run `python "
                     "tools/catalogs.py comments`, translate, remove fuzzy):\n" + "\n".join(bad[:40]))


def test_the_check_fails_on_a_missing_translation(tmp_path, monkeypatch, found):
    monkeypatch.setattr(comments, "catalog_path", lambda lang="ja": tmp_path / "comments.po")
    extra = {**found, "a comment nobody translated": comments.Found("a comment nobody translated",
                                                                   ["book/formula.md"], "visible")}
    comments.update_catalog("ja", tmp_path / "comments.po", extra)
    bad = comments.problems("ja", extra)
    assert any("book/formula.md: comment with no translation: # 'a comment nobody translated'" in b for b in bad)
    assert comments.translation_problems("d_k of each head", "各ヘッドの次元") == [
        "identifiers dropped by the translation: ['d_k']"]
    assert comments.translation_problems("one query", "one query") == ["the translation has no Japanese"]


def test_a_changed_comment_becomes_fuzzy_with_its_old_translation(tmp_path):
    path = tmp_path / "comments.po"
    comments.update_catalog("ja", path, {"the usual stable softmax": comments.Found("the usual stable softmax",
                                                                                     ["book/x.md"], "visible")})
    po = polib.pofile(str(path))
    po[0].msgstr = "通常の安定なソフトマックス"
    po.save(str(path))
    counts = comments.update_catalog("ja", path, {"the usual, stable softmax": comments.Found(
        "the usual, stable softmax", ["book/x.md"], "visible")})
    assert counts == {"new": 0, "fuzzy": 1, "kept": 0, "gone": 1}
    e = polib.pofile(str(path))[0]
    assert e.fuzzy and e.msgstr == "通常の安定なソフトマックス" and e.previous_msgid == "the usual stable softmax"
    assert comments.problems("ja", {}) or True


def _shown(kinds):
    for path in comments.pages():
        for kind, lang, code in comments.shown_code(path):
            if kind in kinds:
                yield path.name, lang, code


def test_translated_code_still_parses_and_keeps_its_tokens(table):
    n = 0
    for page, lang, code in _shown({"visible", "solution", "folded"}):
        if lang != "python":
            continue
        out = comments.translate_source(code, table)
        src = comments._mask_magics(out)
        ast.parse(src)
        assert _code_tokens(src) == _code_tokens(comments._mask_magics(code)), page
        n += out != code
    assert n > 100


def test_translated_visible_lines_fit_the_code_box(table):
    """A visible line of the Japanese rendering is at most MAX_COLUMNS wide (a Japanese character
    counts two), unless its English was wider already: shorten the translation."""
    wide = []
    for page, lang, code in _shown({"visible", "solution"}):
        english = max((comments.columns(line) for line in code.split("\n")), default=0)
        for line in comments.translate_source(code, table, lang).split("\n"):
            if comments.columns(line) > max(comments.MAX_COLUMNS, english) and comments.has_japanese(line):
                wide.append(f"{page}: {comments.columns(line)} columns: {line.strip()}")
    assert not wide, "translated code lines too wide for the code box:\n" + "\n".join(wide[:30])


def test_english_and_untranslatable_comments_are_left_as_they_are(table):
    assert comments.translate_source("x = 1  # (B, H, L, E)", table) == "x = 1  # (B, H, L, E)"
    assert comments.translate_source("x = 1  # a comment nobody wrote", table) == "x = 1  # a comment nobody wrote"


def test_the_doctree_is_translated_only_in_the_japanese_edition():
    from docutils import nodes

    code = "def softmax(x):   # the usual stable softmax\n    return x"

    def tree():
        doc = nodes.document("", "")
        cell = nodes.container(nb_element="cell_code_source")
        cell += nodes.literal_block(code, code, language="ipython3")
        doc += cell
        doc += nodes.literal_block("make book   # x", "make book   # x", language="text")
        return doc

    table = {"the usual stable softmax": "通常の安定なソフトマックス", "x": "エックス"}
    for lang, want in (("en", code), ("ja", "def softmax(x):   # 通常の安定なソフトマックス\n    return x")):
        app = SimpleNamespace(config=SimpleNamespace(language=lang), _book_comment_table=table)
        doc = tree()
        comments.translate_doctree(app, doc)
        blocks = list(doc.findall(nodes.literal_block))
        assert blocks[0].astext() == want and blocks[0].rawsource == want
        assert blocks[1].astext() == "make book   # x"        # a text block is not code


def test_a_notebook_is_rewritten_in_place(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1  # a real one\ny = '# a real one'"),
        nbformat.v4.new_markdown_cell("<details>\n\n```python\nz = 2  # after the string\n```\n</details>"),
        nbformat.v4.new_markdown_cell("a real one  # prose is not code")])
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    assert comments.translate_notebook(path, TABLE)
    out = nbformat.read(path, as_version=4)
    assert out.cells[0].source == "x = 1  # 本物のコメント\ny = '# a real one'"
    assert "z = 2  # 文字列の後" in out.cells[1].source
    assert out.cells[2].source == "a real one  # prose is not code"
    assert not comments.translate_notebook(path, TABLE)          # idempotent: nothing left to change


def test_the_extension_runs_after_bookext_wrote_the_notebooks():
    calls = []
    app = SimpleNamespace(connect=lambda event, fn, priority=500: calls.append((event, priority)))
    comments.setup(app)
    assert ("build-finished", 600) in calls and ("doctree-resolved", 500) in calls
