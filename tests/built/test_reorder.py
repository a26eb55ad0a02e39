"""Moving a chapter is an edit of ``_toc.yml`` alone: the English edition, built strictly (warnings are
errors) from a copy of ``_toc.yml`` with the first two chapters swapped, numbers them, their exercises
and the references to them the other way round, and names the learner notebooks in the new order.

It reuses the English build's execution cache (run after ``make html-en``; ``make test`` does), so
nothing is executed again; it takes about a minute. Its output goes to a temporary folder, its learner
notebooks too (``BOOK_NOTEBOOKS``), so the real build is untouched.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402

CACHE = ROOT / "_build" / ".jupyter_cache"
BUILD = """
import sys
sys.path.insert(0, "tools")
import build
sys.exit(build._sphinx("html", build.Path(sys.argv[1]), build.Path(sys.argv[2]), {
    "external_toc_path": sys.argv[3], "nitpicky": True, "latex_individualpages": False,
    "nb_execution_cache_path": sys.argv[4]}))
"""


def _swapped_toc(out: Path) -> tuple[Path, str, str]:
    first, second = chapters.chapters()[:2]
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    a, b = f"- file: book/{first}\n", f"- file: book/{second}\n"
    assert toc.count(a) == toc.count(b) == 1
    path = out / "_toc.yml"
    path.write_text(toc.replace(a, "\0").replace(b, a).replace("\0", b), encoding="utf-8")
    return path, first, second


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture(scope="module")
def swapped(tmp_path_factory):
    if not CACHE.is_dir():
        pytest.fail(f"{CACHE} missing: build the English edition first (make html-en)")
    out = tmp_path_factory.mktemp("reordered")
    toc, first, second = _swapped_toc(out)
    env = {**os.environ, "BOOK_NOTEBOOKS": str(out / "notebooks")}
    run = subprocess.run([sys.executable, "-c", BUILD, str(out / "html"), str(out / "doctrees"), str(toc),
                          str(CACHE)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, "the build with two chapters swapped failed:\n" + (run.stdout + run.stderr)[-4000:]
    return out, first, second


def test_swapped_chapters_are_numbered_in_the_new_order(swapped):
    out, first, second = swapped
    page = {t: _text((out / "html" / "book" / f"{t}.html").read_text(encoding="utf-8")) for t in (first, second)}
    assert "Exercise 2.1" in page[first] and "Exercise 1.1" not in page[first]
    assert "Exercise 1.1" in page[second] and "Exercise 2.1" not in page[second]
    # the first-week paragraph of each names its own exercises (where it names any), with the new numbers
    named = 0
    for topic, n in ((first, "2"), (second, "1")):
        core = re.search(r"First-week core:(.*?)(?:Going further|go further)", page[topic])
        assert core, f"{topic}: no first-week paragraph"
        numbers = set(re.findall(r"\b(\d+)\.\d", core.group(1)))
        assert numbers <= {n}, (topic, core.group(1))
        named += len(numbers)
    assert named, "neither chapter's first-week paragraph names an exercise by number: pick other chapters"


def test_references_to_a_moved_chapter_follow_it(swapped):
    """Every {numref} to the first chapter, on any page, now reads chapter 2."""
    out, first, _ = swapped
    links = []
    for page in sorted((out / "html" / "book").glob("*.html")):
        html = page.read_text(encoding="utf-8")
        links += [_text(m.group(1)) for m in re.finditer(
            rf'<a class="reference internal" href="{first}\.html#{chapters.label(first)}"[^>]*>(.*?)</a>', html, re.S)]
    numbered = [t for t in links if re.search(r"\d", t)]
    assert numbered, f"no numbered reference to {first} found"
    assert all(re.search(r"\b2\b", t) and not re.search(r"\b1\b", t) for t in numbered), numbered


def test_learner_notebooks_are_named_in_the_new_order(swapped):
    out, first, second = swapped
    names = sorted(p.name for p in (out / "notebooks" / "en" / "learner").glob("*.ipynb"))
    assert f"01_{second}.ipynb" in names and f"02_{first}.ipynb" in names
    assert f"01_{first}.ipynb" not in names
