"""The notebooks a learner runs (``_build/notebooks/<lang>/learner``, written by every HTML build) read
like the HTML page and give no answer away. Run after ``make book`` (``make test`` does); a missing build
is a failure, not a skip. Their execution is nbval's job (``make test-learner``)."""
from __future__ import annotations

import ast
import json
import html
import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "_build" / "notebooks"
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402

CHAPTERS = chapters.chapters()
LANGS = ["en", "ja"]
FINISHED = set((yaml.safe_load((ROOT / "locales" / "ja" / "status.yml").read_text(encoding="utf-8"))
                or {}).get("finished") or [])

RAW_MYST = [
    (re.compile(r"\{[a-z]+(:[a-z]+)?\}`"), "a MyST role"),
    (re.compile(r"^\s*(```|~~~)\{", re.M), "a directive fence"),
    (re.compile(r"^\s*:::", re.M), "a colon fence"),
    (re.compile(r"^\s*:(label|class|name):", re.M), "a directive option"),
    (re.compile(r"^\(\w[\w-]*\)=\s*$", re.M), "a MyST label"),
    (re.compile(r"\bch\d\d_[a-z0-9_]+(:[^\s`]*)?"), "a glue key"),
]


def _nb(lang, variant, chapter):
    path = NB / lang / variant / chapters.notebook_name(chapter)
    assert path.is_file(), f"{path} missing: build the {lang} edition first (make book)"
    return nbformat.read(path, as_version=4)


def _html(lang, chapter):
    path = (HTML if lang == "en" else HTML / lang) / "book" / f"{chapter}.html"
    assert path.is_file(), f"{path} missing: build the {lang} edition first (make book)"
    return path.read_text(encoding="utf-8")


def _md(nb):
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def _tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


CASES = [(lang, ch) for lang in LANGS for ch in CHAPTERS]


@pytest.mark.parametrize("lang,chapter", CASES)
def test_no_myst_left(lang, chapter):
    bad = [f"{what}: ...{m.group(0)}..." for text in _md(_nb(lang, "learner", chapter))
           for pattern, what in RAW_MYST for m in pattern.finditer(re.sub(r"data:[^)]*\)", ")", text))]
    assert not bad, f"{lang}/{chapter}: unresolved MyST in markdown cells:\n" + "\n".join(bad[:10])


@pytest.mark.parametrize("lang,chapter", CASES)
def test_figures_and_numbers_as_on_the_page(lang, chapter):
    nb, page = _nb(lang, "learner", chapter), _html(lang, chapter)
    article = page.split('<article class="bd-article">', 1)[-1].split("</article>", 1)[0]
    figures = len(re.findall(r"<figure[^>]*>\s*(?:<a[^>]*>\s*)?<img", article))
    embedded = sum(len(re.findall(r"!\[[^\]]*\]\(data:image/", t)) for t in _md(nb))
    assert embedded == figures and figures > 0 or embedded == figures, \
        f"{lang}/{chapter}: the page has {figures} figures, the notebook {embedded}"
    text = "\n".join(_md(nb))
    for label in set(re.findall(r'<span class="caption-number">([^<]+?)\s*</span>', article)):
        label = label.strip().rstrip(".")
        assert label in text, f"{lang}/{chapter}: {label!r} (numbered on the page) not in the notebook"
    for number in set(re.findall(r'class="eqno">\((\d+\.\d+)\)', article)):
        assert f"\\tag{{{number}}}" in text, f"{lang}/{chapter}: equation ({number}) not numbered"


def _code_only(src: str) -> str:
    """A cell's code without its comments (its syntax tree; the stripped text where it does not parse)."""
    try:
        return ast.dump(ast.parse(src))
    except SyntaxError:
        return src.strip()


def test_the_leak_check_ignores_comments():
    assert _code_only("x = 1  # the answer\ny = x") == _code_only("x = 1  # 答え\ny = x")
    assert _code_only("x = 1") != _code_only("x = 2")


@pytest.mark.parametrize("lang,chapter", CASES)
def test_solutions_folded_and_answers_absent(lang, chapter):
    nb = _nb(lang, "learner", chapter)
    source = chapters.read(chapters.source(chapter))
    # every solution is inside <details> ...
    for text in _md(nb):
        opened = text.count("<details>")
        assert opened == text.count("</details>"), f"{lang}/{chapter}: unbalanced <details>"
    n_solutions = sum(t.count("<details>") for t in _md(nb))
    n_exercises = len(re.findall(r"```\{exercise", "\n".join(c.source for c in source.cells
                                                            if c.cell_type == "markdown")))
    assert n_solutions >= n_exercises, f"{lang}/{chapter}: {n_exercises} exercises, {n_solutions} folded"
    # ... and no code cell of a solution, nor a check of the book's own solution, is a code cell here
    solution_code, inside = set(), False
    for cell in source.cells:
        if cell.cell_type == "markdown":
            if "{solution-start}" in cell.source:
                inside = True
            if "{solution-end}" in cell.source:
                inside = False
        elif inside:
            solution_code.add(_code_only(cell.source))
    code = [c for c in nb.cells if c.cell_type == "code"]
    # compared without comments: the Japanese notebooks carry translated comments (tools/comments.py)
    leaked = [c.source[:60] for c in code if _code_only(c.source) in solution_code]
    assert not leaked, f"{lang}/{chapter}: solution code as runnable cells: {leaked}"
    assert not [c for c in code if "solution-check" in _tags(c)], f"{lang}/{chapter}: solution checks kept"
    assert not [c for c in code if re.search(r"\b_expected\w*\s*=", c.source)], \
        f"{lang}/{chapter}: a cell holds an expected answer"


def _self_check_args_ok(call):
    simple = (ast.Name, ast.Constant, ast.Attribute)
    for arg in call.args[1:] + [k.value for k in call.keywords if k.arg not in ("name", "hint")]:
        if isinstance(arg, simple):
            continue
        if isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name) \
                and isinstance(arg.slice, ast.Constant):          # one row of an input: Q_b[0]
            continue
        if isinstance(arg, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) or
                                                          (isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant))
                                                          for e in arg.elts):
            continue
        if isinstance(arg, ast.UnaryOp) and isinstance(arg.operand, ast.Constant):
            continue
        return False
    return True


@pytest.mark.parametrize("lang,chapter", CASES)
def test_self_checks_get_only_the_exercise_inputs(lang, chapter):
    """A visible self-check passes the learner's answer, then only names or literals: never an
    expression that computes the expected answer (it would give it away)."""
    bad = []
    for cell in _nb(lang, "learner", chapter).cells:
        if cell.cell_type != "code" or cell.metadata.get("jupyter", {}).get("source_hidden"):
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr.startswith("check_") and not _self_check_args_ok(node):
                bad.append(ast.unparse(node))
    assert not bad, f"{lang}/{chapter}: self-checks computing their expected value in view: {bad}"


def test_the_self_check_rule_can_fail():
    assert not _self_check_args_ok(ast.parse("lib.check_array(x, totals / math.sqrt(30))").body[0].value)
    assert not _self_check_args_ok(ast.parse("lib.check_number(x, lib.softmax(z)[0])").body[0].value)
    assert _self_check_args_ok(ast.parse("lib.check_rescaled_totals(x, totals, n_subjects=30)").body[0].value)


@pytest.mark.parametrize("lang,chapter", CASES)
def test_exercise_titles_as_on_the_page(lang, chapter):
    """Every exercise title the page shows ("演習 N.M（行列の形）", "Exercise N.M (Shapes)") is in the
    learner notebook as written, brackets included: the Japanese page's are full-width."""
    page = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", " ".join(re.findall(
        r'<p class="admonition-title">(<span class="caption-number">.*?)</p>', _html(lang, chapter), re.S)))))
    want = re.findall(r"(?:演習|Exercise) \d+\.\d+\s?[（(][^（）()]*[)）]", page)
    text = "\n".join(_md(_nb(lang, "learner", chapter))).replace("\\_", "_")
    missing = [t for t in want if f"**{t}**" not in text]
    assert want and not missing, f"{lang}/{chapter}: exercise titles not as on the page: {missing[:3]}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_japanese_notebook_sets_its_language(chapter):
    nb = _nb("ja", "learner", chapter)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert 'lib.set_language("ja")' in first_code.source or "lib.set_language('ja')" in first_code.source


@pytest.mark.parametrize("lang,chapter", CASES)
def test_learner_and_trainer_notebooks_turn_the_progress_bars_on_first(lang, chapter):
    # the cells that train draw a bar only where lib.progress_bars(True) ran (lib/infra/bars.py)
    for variant in ("learner", "trainer"):
        first_code = next(c for c in _nb(lang, variant, chapter).cells if c.cell_type == "code")
        assert "lib.progress_bars(True)" in first_code.source, f"{lang}/{variant}/{chapter}: {first_code.source!r}"
        assert first_code.metadata.get("jupyter", {}).get("source_hidden"), f"{lang}/{variant}/{chapter}: not folded"


JA = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def untranslated_paragraphs(text: str) -> list[str]:
    """Paragraphs with four or more English words in a row and no Japanese at all."""
    body = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$|`[^`]*`|<[^>]+>|\]\([^)]*\)|data:[^)]*", " ", text, flags=re.S)
    out = []
    for para in re.split(r"\n\s*\n", body):
        if not JA.search(para) and re.search(r"[A-Za-z]{2,}(?:[ ,.;:'’-]+[A-Za-z]{2,}){3}", para):
            out.append(para.strip()[:80])
    return out


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_japanese_notebook_has_no_english_paragraph(chapter):
    if f"book/{chapter}" not in FINISHED:
        pytest.skip(f"book/{chapter} is not declared finished in locales/ja/status.yml")
    left = [p for text in _md(_nb("ja", "learner", chapter)) for p in untranslated_paragraphs(text)]
    assert not left, f"ja/{chapter}: untranslated paragraphs: {left[:5]}"


def test_the_english_detector_can_fail():
    assert untranslated_paragraphs("This paragraph was never translated at all.")
    assert not untranslated_paragraphs("スケールは $\\sqrt{d_k}$ です (Vaswani et al.)。")


@pytest.mark.parametrize("lang", LANGS)
def test_trainer_notebooks_have_outputs_and_runnable_solutions(lang):
    for chapter in CHAPTERS:
        nb = _nb(lang, "trainer", chapter)
        assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{lang}/{chapter}: no outputs"


def test_download_button_offers_the_learner_notebook():
    for lang in LANGS:
        root = HTML if lang == "en" else HTML / lang
        for chapter in CHAPTERS:
            offered = json.loads((root / "_sources" / "book" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
            learner = json.loads((NB / lang / "learner" / chapters.notebook_name(chapter)).read_text(encoding="utf-8"))
            assert offered == learner, f"{lang}/{chapter}: the download button offers another notebook"


@pytest.mark.parametrize("lang,chapter", CASES)
def test_no_claim_check_in_learner_or_trainer_notebooks(lang, chapter):
    """The book's claim checks (lib.claims) are the build's; a learner's Run All never stops on one
    (tools/learner.py removes them), while the set-up they followed stays."""
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import learner

    for variant in ("learner", "trainer"):
        nb = _nb(lang, variant, chapter)
        left = [c.source[:80] for c in nb.cells if c.cell_type == "code" and "claims." in c.source]
        assert not left, f"{lang}/{variant}/{chapter}: claim checks left in: {left[:3]}"
    # the source had them, so the removal did something
    assert any("lib.claims." in c.source for c in chapters.read(chapters.source(chapter)).cells)
    # and the remover keeps what is not a claim (checked here on a known cell)
    kept = learner.without_claims("x = 1\nlib.claims.check(x, '>', 0, 'positive')\nglue('x', x)")
    assert kept == "x = 1\nglue('x', x)"
    kept = learner.without_claims("x = 1\nlib.claims.claim('x', x, '>', 0, 'positive')\n"
                                  "lib.claims.varies('s', 'x', 0.3, 'moves')")
    assert kept == "x = 1"
