"""The comments of the code a Japanese reader and learner read are Japanese (tools/comments.py): no
English comment in any code cell of a Japanese learner or trainer notebook, nor in the code of a
Japanese HTML page, while the English edition keeps its own. Run after ``make book`` (a missing build
is a failure, not a skip).

An English comment is one with English words to translate (``tools/comments.py``'s rule: words of two or
more letters left after identifiers, calls, dotted names, constants and single letters are removed) and
no Japanese: ``# the usual stable softmax`` is English, ``# (B, H, L, E)`` and ``# 1/sqrt(64)`` are not."""
from __future__ import annotations

import ast
import html
import io
import re
import sys
import tokenize
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "_build" / "notebooks"
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402
import comments  # noqa: E402

NOTEBOOK_PAGES = [p.stem for p in comments.pages() if chapters.read(p) is not None]
PAGES = [p.stem for p in comments.pages()]
#: a comment span of Pygments' HTML (Comment.Single, Comment, Comment.Hashbang ...)
COMMENT_SPAN = re.compile(r'<span class="c[1hms]?">(.*?)</span>', re.S)
CODE_BOX = re.compile(r'<div class="highlight-(?:ipython3|python|bash)[^"]*"><div class="highlight"><pre>(.*?)</pre>',
                      re.S)


def english_comments(source: str) -> list[str]:
    """The English comment lines of one code cell (IPython magics and shell lines left out)."""
    source = comments._mask_magics(source)
    return [t.line.strip() for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type == tokenize.COMMENT and comments.is_english(t.string[1:])]


def test_the_detector_can_fail():
    assert english_comments("x = 1  # the usual stable softmax\ny = '# not a comment'") == [
        "x = 1  # the usual stable softmax"]
    assert not english_comments("x = 1  # (B, H, L, E)\ny = 2  # 通常の安定なソフトマックス\nz = 3  # 1/sqrt(64)")
    page = ('<div class="highlight-ipython3 notranslate"><div class="highlight"><pre><span class="n">x</span> '
            '<span class="c1"># raw scores</span>\n</pre></div></div>')
    assert _english_html_comments(page) == ["# raw scores"]


def _notebook(variant: str, page: str) -> Path:
    path = NB / "ja" / variant / chapters.notebook_name(page)
    assert path.is_file(), f"{path} missing: build the Japanese edition first (make book)"
    return path


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
@pytest.mark.parametrize("variant", ["learner", "trainer"])
def test_japanese_notebook_code_has_no_english_comment(variant, page):
    """Every code cell, visible or folded, and the solutions' code in the folded Markdown; each
    translated cell still parses."""
    nb = nbformat.read(_notebook(variant, page), as_version=4)
    bad = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            ast.parse(comments._mask_magics(cell.source))
            bad += [f"cell {i}: {line}" for line in english_comments(cell.source)]
        elif cell.cell_type == "markdown":
            for lang, code in comments.fenced_blocks(cell.source):
                if lang in comments.PY_LANGS:
                    bad += [f"cell {i} (Markdown): {line}" for line in english_comments(code)]
    assert not bad, (f"ja/{variant}/{chapters.notebook_name(page)}: English comments (translate them in "
                     "locales/ja/LC_MESSAGES/comments.po):\n  " + "\n  ".join(bad[:20]))


def _english_html_comments(page_html: str) -> list[str]:
    out = []
    for box in CODE_BOX.findall(page_html):
        for span in COMMENT_SPAN.findall(box):
            text = html.unescape(re.sub(r"<[^>]+>", "", span)).strip()
            if text.startswith("#") and comments.is_english(text[1:]):
                out.append(text)
    return out


def _page(lang: str, page: str) -> str:
    path = (HTML if lang == "en" else HTML / lang) / "book" / f"{page}.html"
    assert path.is_file(), f"{path} missing: build the {lang} edition first (make book)"
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("page", PAGES)
def test_japanese_page_code_has_no_english_comment(page):
    bad = _english_html_comments(_page("ja", page))
    assert not bad, f"ja/book/{page}.html: English comments in the code shown:\n  " + "\n  ".join(bad[:20])


def test_the_english_edition_keeps_its_comments():
    """Only the Japanese edition is translated: the English page shows the English comment."""
    assert "# the usual stable softmax" in [html.unescape(re.sub(r"<[^>]+>", "", s)).strip()
                                            for box in CODE_BOX.findall(_page("en", "real_code"))
                                            for s in COMMENT_SPAN.findall(box)]
    assert "通常の安定なソフトマックス" in _page("ja", "real_code")
