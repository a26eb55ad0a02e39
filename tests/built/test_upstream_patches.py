"""The patches of ``tools/upstream.py`` still do their work, seen in the built pages of both editions
(run after ``make book``). Each test names its patch; ``tests/test_upstream.py`` checks that every
patch names a guard."""
from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EN = ROOT / "_build" / "html"
JA = EN / "ja"
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402

CHAPTERS = chapters.chapters()
TITLE = re.compile(r'<div class="(exercise|solution)[^"]*"[^>]*>\s*<p class="admonition-title">(.*?)</p>', re.S)
PASTED = re.compile(r'<span class="pasted-text">')


def _page(root: Path, chapter: str) -> str:
    path = root / "book" / f"{chapter}.html"
    assert path.is_file(), f"{path} is missing: run `make book` first"
    return path.read_text(encoding="utf-8")


def _titles(page: str) -> list[tuple[str, str]]:
    return [(kind, html.unescape(re.sub(r"<[^>]+>", "", t)).strip()) for kind, t in TITLE.findall(page)]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_glued_numbers_in_translated_paragraphs(chapter):
    """Patch 1: a translated paragraph keeps its glued numbers (as many as the English page has)."""
    en, ja = len(PASTED.findall(_page(EN, chapter))), len(PASTED.findall(_page(JA, chapter)))
    assert ja == en, f"{chapter}: {en} glued values in English, {ja} in Japanese"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_exercise_titles_translated(chapter):
    """Patches 2-4: every exercise title of the Japanese page is translated and says 演習."""
    en = [t for k, t in _titles(_page(EN, chapter)) if k == "exercise"]
    ja = [t for k, t in _titles(_page(JA, chapter)) if k == "exercise"]
    assert len(en) == len(ja) >= 1
    for e, j in zip(en, ja):
        assert e.startswith("Exercise") and j.startswith("演習"), (e, j)
        assert j.replace("演習", "") != e.replace("Exercise", ""), f"{chapter}: title not translated: {j!r}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solution_titles_repeat_the_translated_exercise(chapter):
    """Patch 5: a solution's title repeats its exercise's title as translated, not as first read."""
    titles = _titles(_page(JA, chapter))
    exercises = {t.split("（")[0].strip(): t for k, t in titles if k == "exercise"}
    solutions = [t for k, t in titles if k == "solution"]
    assert solutions
    for s in solutions:
        number = re.search(r"演習 [\d.]+", s)
        assert number, s
        want = re.search(r"（.*）", exercises[number.group(0)]).group(0)   # the translated title
        assert want in s, f"{chapter}: {s!r} does not repeat {want!r}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_japanese_exercise_titles_use_full_width_parentheses(chapter):
    """Patches 6 and 20: 演習 5.1（タイトル） and 演習 5.1 の解答（タイトル）, not 演習 5.1 (タイトル)."""
    for kind, t in _titles(_page(JA, chapter)):
        form = r"演習 [\d.]+（" if kind == "exercise" else r"演習 [\d.]+ の解答（"
        assert re.search(form, t), f"{chapter}: {kind} title {t!r}"
    # the check can fail: the English titles carry the half-width form
    assert all(re.search(r"Exercise [\d.]+\s*\(", t) for _, t in _titles(_page(EN, chapter)))
