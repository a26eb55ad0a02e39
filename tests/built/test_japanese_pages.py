"""The Japanese edition's pages speak Japanese in the theme's own words too: the tooltips of the
permalinks, the sidebar buttons and the colour-mode switch (``locales/ja/LC_MESSAGES/sphinx.po`` and
the two templates in ``tools/templates``). Run after ``make book``; a missing build is a failure."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JA = ROOT / "_build" / "html" / "ja"
EN = ROOT / "_build" / "html"
PAGES = sorted(Path("book") / f"{p.stem}.html" for p in (ROOT / "book").iterdir()
               if p.suffix == ".md")
# English words of Sphinx and the theme that a reader sees on hover or in a menu
THEME_ENGLISH = ["Link to this heading", "Link to this equation", "Link to this image",
                 "Link to this table", "Toggle primary sidebar", "Toggle secondary sidebar",
                 "Color mode", "System Settings", "On this page", "previous page", "next page"]
ATTR = re.compile(r'(?:title|aria-label|data-bs-title|placeholder)="([^"]*)"')


def test_pages_exist():
    assert PAGES, "no English pages: run `make book` first"
    missing = [str(p) for p in PAGES if not (JA / p).is_file()]
    assert not missing, f"no Japanese page for {missing}"


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_theme_words_are_japanese(page):
    ja = set(ATTR.findall((JA / page).read_text(encoding="utf-8")))
    en = set(ATTR.findall((EN / page).read_text(encoding="utf-8")))
    left = sorted(w for w in THEME_ENGLISH if w in ja)
    assert not left, f"{page}: English theme words in the Japanese page: {left}"
    # the check can fail: the English page carries some of these words
    assert any(w in en for w in THEME_ENGLISH)


EMPTY_MATH = re.compile(r"\\\[\s*::\s*\\\]")


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_display_math_lost_in_translation(page):
    """A translated display-math block comes out of Sphinx as reST that MyST renders as an empty
    "\\[::\\]" (tools/catalogs.py check forbids such translations; this checks the built pages)."""
    for root in (EN, JA):
        html = (root / page).read_text(encoding="utf-8")
        assert not EMPTY_MATH.search(html), f"{root / page}: a display equation rendered empty"


def test_empty_math_pattern_matches_what_sphinx_wrote():
    assert EMPTY_MATH.search('<div class="math notranslate nohighlight">\n\\[::\\]\n</div>')


def test_execution_table_header_is_japanese():
    en = (EN / "book" / "exec_stats.html").read_text(encoding="utf-8")
    ja = (JA / "book" / "exec_stats.html").read_text(encoding="utf-8")
    assert "Run Time (s)" in en                     # the words myst-nb writes (the check can fail)
    assert "Run Time (s)" not in ja and "実行時間（秒）" in ja
