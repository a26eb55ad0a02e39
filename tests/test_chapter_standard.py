"""Every chapter meets the chapter standard (COURSE_GUIDE.md): objectives, time, prerequisites,
at least 3 exercises each with a solution, one code exercise with a lib self-check, key takeaways,
a Next link (except the last chapter), and {term} links only to terms the glossary defines."""
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import chapters  # noqa: E402  (tools/chapters.py: the order lives in _toc.yml)
BOOK = ROOT / "book"
CHAPTERS = [chapters.source(c) for c in chapters.chapters()]
GLOSSARY = (BOOK / "glossary.md").read_text(encoding="utf-8")
TERMS = {m.group(1).strip().lower() for m in re.finditer(r"^(\S[^\n]*)\n  \S", GLOSSARY.split("```{glossary}")[1], re.M)}


def _cells(path):
    cells = chapters.cells(path)
    md = [c["source"] for c in cells if c["cell_type"] == "markdown"]
    code = [c["source"] for c in cells if c["cell_type"] == "code"]
    return md, code


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_standard(path):
    md, code = _cells(path)
    text = "\n".join(md)
    first = md[0] if md else ""
    problems = []
    if not re.search(rf"^\({chapters.label(path.stem)}\)=", first, re.M):
        problems.append(f"first markdown cell has no ({chapters.label(path.stem)})= label")
    if "In this chapter" not in first or len(re.findall(r"^\d\. ", first, re.M)) < 3:
        problems.append("no 'In this chapter' admonition with at least 3 numbered objectives")
    if not re.search(r"\*\*Time:\*\*\s*about \d+ minutes", first):
        problems.append("no '**Time:** about N minutes'")
    if "**You need:**" not in first:
        problems.append("no '**You need:**' prerequisites")
    labels = re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", text)
    if len(labels) < 3:
        problems.append(f"{len(labels)} exercises, need at least 3")
    for lab in labels:
        if not re.search(r"```\{solution(?:-start)?\} " + re.escape(lab) + r"\s*\n:class: dropdown", text):
            problems.append(f"exercise {lab} has no dropdown solution")
    if not any(re.search(r"lib\.check_\w+\(", c) for c in code):
        problems.append("no code exercise with a lib self-check")
    if "## Key takeaways" not in text:
        problems.append("no '## Key takeaways'")
    if path != CHAPTERS[-1] and "**Next:**" not in text:
        problems.append("no '**Next:**' link")
    unknown = {t for t in re.findall(r"\{term\}`([^`<]+)`", text) if t.strip().lower() not in TERMS}
    unknown |= {t for t in re.findall(r"\{term\}`[^`<]*<([^>]+)>`", text) if t.strip().lower() not in TERMS}
    if unknown:
        problems.append(f"{{term}} links to terms not in the glossary: {sorted(unknown)}")
    assert not problems, f"{path.name}: " + "; ".join(problems)


def test_glossary_terms_have_japanese():
    body = GLOSSARY.split("```{glossary}")[1].split("```")[0]
    entries = re.findall(r"^(\S[^\n]*)\n  ([^\n]*)", body, re.M)
    assert len(entries) >= 28
    missing = [t for t, d in entries if not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", d)]
    assert not missing, f"terms without a Japanese equivalent: {missing}"


def test_only_code_is_folded():
    """The Japanese edition's fold buttons say コードを表示 (locales/ja/conf.yml): right only while the
    chapters fold code (hide-input), not outputs or whole cells."""
    for nb in CHAPTERS:
        for cell in chapters.cells(nb):
            tags = set(cell.get("metadata", {}).get("tags", []))
            assert not tags & {"hide-output", "hide-cell"}, \
                f"{nb.name}: a folded output or cell; reword nb_code_prompt_show in locales/ja/conf.yml"


def test_bibliography_has_no_latex_pybtex_cannot_render():
    """pybtex (sphinxcontrib-bibtex) prints unknown LaTeX commands such as \\texttt literally."""
    import re

    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    bad = sorted(set(re.findall(r"\\(?:texttt|textit|textbf|emph)\b", bib)))
    assert not bad, f"references.bib uses {bad}: write the text plainly (braces keep its case)"


# --- the first-week core, and one source for each chapter's time ---------------------------------------

def _first_cell(path):
    md, _ = _cells(path)
    return md[0] if md else ""


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_first_week_core(path):
    """Right after the prerequisites, one paragraph beginning exactly **First-week core:** that names
    the core sections and what goes further."""
    first = _first_cell(path)
    paras = [p.strip() for p in re.split(r"\n\s*\n", first)]
    need = [i for i, p in enumerate(paras) if "**You need:**" in p]
    assert need, f"{path.name}: no **You need:** paragraph"
    core = [i for i, p in enumerate(paras) if p.startswith("**First-week core:**")]
    assert core == [need[0] + 1], f"{path.name}: no '**First-week core:**' paragraph right after the prerequisites"
    assert re.search(r"\b(?:[Gg]oing|go(?:es)?) further\b", paras[core[0]]), \
        f"{path.name}: the core paragraph does not say what goes further"
    # the exercises it names are this chapter's (a renumbering once left another chapter's exercise
    # numbers in one), named by label ({numref}), never by a number typed in; English and Japanese
    labels = set(re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", "\n".join(_cells(path)[0])))
    core_en = "\n".join(line for line in paras[core[0]].splitlines() if not line.startswith(":::"))
    for lang in ("en", "ja"):
        text = core_en if lang == "en" else _ja_msgstr(path, core_en)
        typed = re.findall(r"(?:[Ee]xercises?|演習)\s*\d+\.\d+", text)
        assert not typed, f"{path.name} ({lang}): exercise numbers typed by hand: {typed}; use {{numref}}"
        named = re.findall(r"<(ex-[^>]+)>", text)
        wrong = [x for x in named if x not in labels]
        assert not wrong, f"{path.name} ({lang}): the core paragraph names exercises {wrong} of another " \
                          f"chapter; this chapter's are {sorted(labels)}"


def _ja_msgstr(path, msgid):
    import polib
    po = polib.pofile(str(ROOT / "locales" / "ja" / "LC_MESSAGES" / "book" / f"{path.stem}.po"))
    hits = [e.msgstr for e in po if not e.obsolete and " ".join(e.msgid.split()) == " ".join(msgid.split())]
    assert hits and hits[0], f"{path.name}: the Japanese catalog has no translation of the core paragraph"
    return hits[0]


def chapter_minutes() -> dict:
    """Each chapter's own time, from its **Time:** line: the one source of every time in the book."""
    out = {}
    for path in CHAPTERS:
        m = re.search(r"\*\*Time:\*\*\s*about (\d+) minutes", _first_cell(path))
        assert m, f"{path.name}: no '**Time:** about N minutes'"
        out[path.stem] = int(m.group(1))
    return out


def classroom_minutes(self_study: int) -> int:
    """The instructor guide's rule: the chapter's own time plus 30 %, rounded up to 5 minutes."""
    return -(-self_study * 13 // 50) * 5


def _table_rows(text):
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("|") and not line.startswith("| ---")]


def test_times_agree_with_the_chapters():
    minutes = chapter_minutes()
    guide = (BOOK / "instructor_guide.md").read_text(encoding="utf-8")
    intro = (BOOK / "intro.md").read_text(encoding="utf-8")
    for name, text, cols in (("instructor guide", guide, (-2,)), ("intro", intro, (-1,))):
        seen = {}
        for row in _table_rows(text):
            docs = [c for c in row if re.fullmatch(r"\{doc\}`\w+`", c) and c[6:-1] in minutes]
            if docs:
                stem = docs[0][6:-1]
                seen[stem] = [int(re.fullmatch(r"(\d+) min", row[c]).group(1)) for c in cols]
        assert set(seen) == set(minutes), f"{name}: chapters in its table {sorted(seen)} != {sorted(minutes)}"
        for stem, (m,) in seen.items():
            assert m == minutes[stem], f"{name}: {stem} has {m} min, the chapter says {minutes[stem]}"
    for row in _table_rows(guide):
        docs = [c for c in row if re.fullmatch(r"\{doc\}`\w+`", c) and c[6:-1] in minutes]
        if docs:
            stem = docs[0][6:-1]
            assert row[-1] == f"{classroom_minutes(minutes[stem])} min", (stem, row[-1])


def _clock(t):
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def test_schedules_add_up():
    """Every schedule table of the guide: blocks follow each other without gap or overlap, each
    chapter gets its classroom time (summed over its blocks), and no block of a chapter is longer
    than 65 minutes without a break."""
    minutes = chapter_minutes()
    by_label = {chapters.label(stem): stem for stem in minutes}
    guide = (BOOK / "instructor_guide.md").read_text(encoding="utf-8")
    tables, current = [], []
    for line in guide.splitlines() + [""]:
        if re.match(r"\| \d{1,2}:\d\d–\d{1,2}:\d\d \|", line):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    assert len(tables) == 4, f"expected four schedules (three sessions, one day); found {len(tables)}"
    for table in tables:
        end, per_chapter = None, {}
        for line in table:
            start_s, end_s = re.match(r"\| (\d{1,2}:\d\d)–(\d{1,2}:\d\d) \|", line).groups()
            start, stop = _clock(start_s), _clock(end_s)
            assert stop > start and (end is None or start == end), f"gap or overlap at {line[:40]}"
            end = stop
            block = line.split("|")[2]
            m = re.match(r"\s*\{numref\}`Chapter %s <([\w-]+)>`", block)
            if m:
                assert stop - start <= 65, f"a block over 65 minutes: {line[:60]}"
                n = m.group(1)
                assert n in by_label, f"a schedule block names {n!r}, which is not a chapter"
                per_chapter[n] = per_chapter.get(n, 0) + stop - start
        for n, got in per_chapter.items():
            want = classroom_minutes(minutes[by_label[n]])
            assert got == want, f"chapter {n}: {got} min in a schedule, its classroom time is {want}"
