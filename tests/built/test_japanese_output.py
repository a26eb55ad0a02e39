"""What the code says on a Japanese page, and the prompts of the cells a learner edits in a Japanese
learner notebook, are Japanese: no text output of a Japanese page and no prompt is English prose
(identifiers, numbers, arrays and code stay as they are). Run after ``make book``.

English prose here is a line with three or more English words in a row (words of letters only, two
or more long, separated by spaces or punctuation) and no Japanese character: ``best bet on the label
counts: 1.826 nats`` is prose, ``merge(split(Q)) == Q:  True`` and ``[0.245 0.511]`` are not."""
from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
JA = ROOT / "_build" / "html" / "ja" / "book"
LEARNER = ROOT / "_build" / "notebooks" / "ja" / "learner"
PAGES = sorted(p.stem for p in (ROOT / "book").iterdir() if p.suffix == ".md")
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402

CHAPTERS = chapters.chapters()

JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uff01-\uff5e\u3000-\u303f]")
WORD = r"(?<![\w.])(?!(?:inf|nan)\b)[A-Za-z]{2,}(?![\w(])"   # inf, nan: numbers
PROSE = re.compile(WORD + r"(?:[ ,;:'’!?-]+" + WORD + r"){2,}")
OUTPUT = re.compile(r'<div class="output (?:stream|text_plain)[^"]*">(?:(?!</div>).)*?<pre[^>]*>(.*?)</pre>', re.S)
TABLE = re.compile(r'<table class="lib-table">(.*?)</table>', re.S)   # lib.table's HTML output


def _table_text(inner: str) -> str:
    """A lib.table as text: one line for the caption and one per row, cells apart by two spaces."""
    inner = re.sub(r"</t[hd]>", "  ", inner)
    inner = re.sub(r"</(?:tr|caption)>", "\n", inner)
    return re.sub(r"<[^>]+>", "", inner)


def english_lines(text: str) -> list[str]:
    """The lines of ``text`` that are English prose."""
    return [ln.strip() for ln in text.splitlines() if PROSE.search(ln) and not JAPANESE.search(ln)]


def test_the_detector_can_fail():
    assert english_lines("best bet on the label counts: 1.826 nats")
    assert english_lines("device: cpu (torch 2.13.0+cpu, 1 threads; no GPU found, so the CPU ran this)")
    assert not english_lines("merge(split(Q)) == Q:   True\n[0.245 0.511 0.244]\nsoftmax(z + 1000)  [0.1 0.9]")
    assert not english_lines("デバイス：cpu（torch 2.13.0+cpu、1 スレッド。GPU が見つからないため CPU で実行しました）")
    assert not english_lines("median gradient norm at:     logits     scores      W_Q"[25:])
    assert not english_lines("tensor([[inf, inf, inf, inf]], dtype=torch.float16)  [nan, nan, nan]")


def _outputs(page: str) -> list[str]:
    path = JA / f"{page}.html"
    assert path.is_file(), f"{path} missing: build the Japanese edition first (make book)"
    page_html = path.read_text(encoding="utf-8")
    return ([html.unescape(re.sub(r"<[^>]+>", "", m)) for m in OUTPUT.findall(page_html)]
            + [html.unescape(_table_text(m)) for m in TABLE.findall(page_html)])


def test_tables_are_read_too():
    import lib
    inner = TABLE.search(lib.table([("scaled model here", 1)], ["model", "n"], title="a title in English")
                         ._repr_html_()).group(1)
    assert english_lines(html.unescape(_table_text(inner))) == ["a title in English", "scaled model here  1"]


@pytest.mark.parametrize("page", PAGES)
def test_text_outputs_of_a_japanese_page_are_japanese(page):
    bad = [ln for out in _outputs(page) for ln in english_lines(out)]
    assert not bad, (f"ja/book/{page}.html: {len(bad)} line(s) of English prose in the code's text "
                     "output (print through lib.tr and translate in the page's catalog):\n  "
                     + "\n  ".join(bad[:15]))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_prompts_in_japanese_learner_notebooks_are_japanese(chapter):
    sys.path.insert(0, str(ROOT / "tools"))
    import bookext

    path = LEARNER / chapters.notebook_name(chapter)
    assert path.is_file(), f"{path} missing: build the Japanese edition first (make book)"
    nb = nbformat.read(path, as_version=4)
    bad = [p for cell in nb.cells if cell.cell_type == "code"
           for p in bookext.prompts(cell.source) if english_lines(p)]
    assert not bad, f"{path.name}: English prompts in cells the learner edits: {bad}"
