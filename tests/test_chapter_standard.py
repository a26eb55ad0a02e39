"""Every chapter meets the chapter standard (COURSE_GUIDE.md): objectives, time, prerequisites,
at least 3 exercises each with a solution, one code exercise with a lib self-check, key takeaways,
a Next link (except the last chapter), and {term} links only to terms the glossary defines."""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
GLOSSARY = (BOOK / "glossary.md").read_text(encoding="utf-8")
TERMS = {m.group(1).strip().lower() for m in re.finditer(r"^(\S[^\n]*)\n  \S", GLOSSARY.split("```{glossary}")[1], re.M)}


def _cells(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    md = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    return md, code


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_standard(path):
    md, code = _cells(path)
    text = "\n".join(md)
    first = md[0] if md else ""
    problems = []
    if not re.search(r"^\(ch\d\d\)=", first, re.M):
        problems.append("first markdown cell has no (chNN)= label")
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
    import json

    for nb in sorted((ROOT / "book").glob("*.ipynb")):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            tags = set(cell.get("metadata", {}).get("tags", []))
            assert not tags & {"hide-output", "hide-cell"}, \
                f"{nb.name}: a folded output or cell; reword nb_code_prompt_show in locales/ja/conf.yml"


def test_bibliography_has_no_latex_pybtex_cannot_render():
    """pybtex (sphinxcontrib-bibtex) prints unknown LaTeX commands such as \\texttt literally."""
    import re

    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    bad = sorted(set(re.findall(r"\\(?:texttt|textit|textbf|emph)\b", bib)))
    assert not bad, f"references.bib uses {bad}: write the text plainly (braces keep its case)"
