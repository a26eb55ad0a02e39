"""A chapter is known by its topic, never by its number: the number lives in ``_toc.yml`` alone (its
place in the numbered part) and in what the build renders from it.

- No chapter number is written into code, a docstring, a test name, a file name, a label, a glue key or
  the prose of a page (a page names another chapter with ``{numref}`` and an exercise by its label), so
  that moving a chapter is an edit of ``_toc.yml`` and nothing else (``tests/built/test_reorder.py``
  builds the book with two chapters swapped).
- Every chapter is a MyST Markdown notebook ``book/<topic>.md`` listed in ``_toc.yml``, whose first line
  is its label ``(<topic-with-hyphens>)=``.

Not scanned: the two tests that spell numbers out (this one, and the reorder test, which reads the
numbers a build rendered), ``book/trainer/quiz.md`` (the trainer's quiz, built as a page of its own, names the chapter
ranges of its parts) and the catalogs' Japanese, which follow the English msgids.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402

#: What a chapter number written by hand looks like: an old label (ch03, (ch03)=, ch03-sweep, ch03_key,
#: fig-ch03-x, ex-03-x), a file name (03_variance.md, book/03_...), a test name (test_chapter3_...) and
#: prose or a docstring that says "chapter 3", "Chapter 3's", "chapters 6 and 7", "ch. 5" or "Exercise 3.2".
NUMBERED = re.compile(
    r"\bch\d{1,2}\b|\bch\d\d[_-]\w|\bex-\d|\bfig-ch\d|test_chapter\d|\b[Cc]hapters? \d|\bch\. ?\d"
    r"|\b[Ee]xercises? \d+\.\d|\bbook/\d\d_|\b\d\d_[a-z][a-z_]*\.(?:ipynb|md|po)\b")
SUFFIXES = {".py", ".md", ".yml", ".yaml", ".toml", ".cfg", ".txt", ".json"}
NOT_SCANNED = {"book/trainer/quiz.md", "constraints.txt", "locales/textlint/package-lock.json",
               "tests/test_chapter_ids.py",       # spells the patterns out
               "tests/built/test_reorder.py"}     # reads the rendered numbers of a reordered build


def _files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    return sorted(f for f in out if (Path(f).suffix in SUFFIXES or f in {"Makefile", ".ci/run"})
                  and not f.startswith("locales/ja/LC_MESSAGES/") and f not in NOT_SCANNED
                  and (ROOT / f).is_file())


def numbered(text: str) -> list[tuple[int, str]]:
    """``(line, match)`` for every chapter number written by hand in ``text``."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in NUMBERED.finditer(text)]


def test_no_chapter_number_outside_the_toc():
    found = [f"{f}:{line}: {what!r}" for f in _files()
             for line, what in numbered((ROOT / f).read_text(encoding="utf-8", errors="replace"))]
    assert not found, ("a chapter number written by hand (name the chapter by its label, an exercise by "
                       "its label; in a page use {numref}):\n" + "\n".join(found[:40]))


def test_no_chapter_number_in_the_catalogs_msgids():
    """The catalogs' English (msgid) follows the pages: an old label or glue key left there would be a
    translation that no page uses any more."""
    import polib

    found = []
    for po in sorted((ROOT / "locales").rglob("*.po")):
        if "trainer" in po.parts:          # the quiz (see the module docstring)
            continue
        for entry in polib.pofile(str(po)):
            found += [f"{po.relative_to(ROOT)}: {what!r} in {entry.msgid[:60]!r}"
                      for _, what in numbered(entry.msgid)]
    assert not found, "\n".join(found[:40])


@pytest.mark.parametrize("text", [
    "(ch03)=", "{numref}`chapter %s <ch03>`", "glue('ch07_ratio', x)", "fig-ch02-exam", "ex-10-cost",
    "book/03_variance.md", "03_variance.ipynb", "def test_chapter9_solutions():", "as chapter 3 shows",
    "Chapter 12's check", "chapters 6 and 7", "(ch. 05)", "Exercise 4.2(1)", "exercises 5.1 and 5.4"])
def test_the_scan_finds_a_hand_written_number(text):
    assert numbered(text), text


@pytest.mark.parametrize("text", [
    "(variance)=", "{numref}`Chapter %s <variance>`", "glue('ratio', x)", "fig-test-scores-exam",
    "ex-speed-cost", "book/variance.md", "float16 at d_k = 64", "Exercise `ex-practice-dot3`", "sha256"])
def test_the_scan_lets_labels_pass(text):
    assert not numbered(text), text


def test_every_chapter_is_a_myst_notebook_in_the_toc():
    order = chapters.chapters()
    assert len(order) == len(set(order)) >= 12
    assert not list((ROOT / "book").glob("*.ipynb")), "a chapter stored as .ipynb: convert it with jupytext"
    for topic in order:
        path = chapters.source(topic)
        assert path.is_file(), f"_toc.yml names book/{topic}, which has no {path.name}"
        nb = chapters.read(path)
        assert nb is not None, f"{path.name}: no jupytext/kernelspec header (a plain page, not a notebook)"
        assert nb.cells[0].source.startswith(f"({chapters.label(topic)})=\n"), \
            f"{path.name}: its first line is not its label ({chapters.label(topic)})="
    # a page with an objectives box is a chapter, and a chapter is in the numbered part
    boxed = {p.stem for p in (ROOT / "book").glob("*.md") if ":::{admonition} In this chapter" in p.read_text(encoding="utf-8")}
    assert boxed == set(order), f"chapters not in _toc.yml's numbered part: {sorted(boxed - set(order))}"


def test_numbers_and_learner_names_follow_the_toc(tmp_path):
    order = chapters.chapters()
    swapped = list(order)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    a, b = (f"- file: book/{t}\n" for t in order[:2])
    moved = tmp_path / "_toc.yml"
    moved.write_text(toc.replace(a, "\0").replace(b, a).replace("\0", b), encoding="utf-8")
    assert chapters.chapters(moved) == swapped
    assert chapters.number(order[0], moved) == 2 and chapters.number(order[1], moved) == 1
    assert chapters.notebook_name(order[0]) == f"01_{order[0]}.ipynb"
    assert chapters.notebook_name(order[0], moved) == f"02_{order[0]}.ipynb"
    assert chapters.notebook_name("primer") == "primer.ipynb"
    with pytest.raises(ValueError, match="not a chapter"):
        chapters.number("primer")
