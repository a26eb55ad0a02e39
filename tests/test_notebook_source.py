"""Rules on the chapters' source that keep the book honest, readable and translatable.

- Visible code fits the HTML book's code box at a 1366-px window: no visible line over
  ``MAX_LINE`` characters (the box holds about 85 characters of the theme's 14-px monospace).
  Visible means every code cell not tagged ``remove-cell``/``remove-input`` (``hide-input`` cells
  are visible once opened), and every fenced code block in the prose.
- No hidden assertion checks only literals (``assert round(math.sqrt(512)) == 23``) or an
  expression against itself (``assert a == a``): such a check cannot fail. The same detector runs on
  the test files, where calling the project's own code (lib, tools, classroom) is what is tested.
- ``tr(...)`` gets one string literal, so the catalog tool can extract it.
- Figures are glued through ``plotting.glue``, which checks that their text is legible.
"""
from __future__ import annotations

import ast
import builtins
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402

CHAPTERS = [chapters.source(c) for c in chapters.chapters()]
PAGES = sorted(p for p in BOOK.glob("*.md") if p not in CHAPTERS)
MAX_LINE = 80
HIDDEN_TAGS = {"remove-cell", "remove-input"}
FENCE = re.compile(r"^(`{3,}|~{3,})([^\n`]*)\n(.*?)^\1\s*$", re.M | re.S)


def _cells(path):
    return chapters.cells(path)


def _src(cell):
    return "".join(cell["source"])


def _tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def _code_blocks(markdown):
    """Fenced code blocks of a MyST text, without directive fences such as ```{exercise}."""
    for m in FENCE.finditer(markdown):
        if not m.group(2).strip().startswith("{"):
            yield m.group(3)
        else:
            yield from _code_blocks(m.group(3))


def _visible_code(path):
    if path.suffix == ".md":
        yield from (("prose", b) for b in _code_blocks(path.read_text(encoding="utf-8")))
        return
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] == "code" and not (_tags(cell) & HIDDEN_TAGS):
            yield f"cell {i}", _src(cell)
        elif cell["cell_type"] == "markdown":
            yield from ((f"cell {i}", b) for b in _code_blocks(_src(cell)))


@pytest.mark.parametrize("path", CHAPTERS + PAGES, ids=lambda p: p.name)
def test_visible_code_fits_the_box(path):
    long = [f"{where}: {len(line)} chars: {line.strip()[:50]}..."
            for where, code in _visible_code(path) for line in code.splitlines() if len(line) > MAX_LINE]
    assert not long, f"{path.name}: visible code lines over {MAX_LINE} characters:\n" + "\n".join(long)


def _trees(path):
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] != "code":
            continue
        src = "\n".join(line for line in _src(cell).splitlines() if not line.lstrip().startswith(("%", "!")))
        try:
            yield i, ast.parse(src)
        except SyntaxError as err:  # pragma: no cover - the notebook would not run either
            pytest.fail(f"{path.name} cell {i}: {err}")


def imported_names(trees):
    """Names bound by import statements (modules and imported functions): not computed values."""
    names = set(dir(builtins))
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in n.names)
    return names


def _checks(tree, claims=True):
    """``(line, test)`` for every check in ``tree``: an assert's test, and a page's claim
    (``lib.claims.check(value, op, threshold, words)`` read as ``value > threshold``,
    ``lib.claims.holds(condition, words)`` as its condition)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            yield node.lineno, node.test
        elif claims and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                "claims" in ast.unparse(node.func.value).split(".") and node.args:
            if node.func.attr == "check" and len(node.args) >= 3:
                yield node.lineno, ast.Compare(left=node.args[0], ops=[ast.Gt()], comparators=[node.args[2]])
            elif node.func.attr == "claim" and len(node.args) >= 4:
                yield node.lineno, ast.Compare(left=node.args[1], ops=[ast.Gt()], comparators=[node.args[3]])
            elif node.func.attr == "holds":
                yield node.lineno, node.args[0]


def literal_only_asserts(tree, constants=None, claims=True):
    """Checks (asserts and a page's claims) that read no computed value, or compare an expression with
    itself.

    A computed value is any variable other than builtins and imported names (``np``, ``math``,
    ``lib``, ``glue`` ...): ``round(math.sqrt(512)) == 23`` reads none and cannot fail.
    """
    constants = imported_names([tree]) if constants is None else constants
    bad = []
    for lineno, test in _checks(tree, claims):
        reads = [n for n in ast.walk(test) if isinstance(n, ast.Name) and n.id not in constants]
        if not reads:
            bad.append((lineno, "only literals", ast.unparse(test)))
            continue
        for cmp in (n for n in ast.walk(test) if isinstance(n, ast.Compare)):
            dumps = [ast.dump(s) for s in (cmp.left, *cmp.comparators)]
            if len(set(dumps)) < len(dumps):
                bad.append((lineno, "compares an expression with itself", ast.unparse(cmp)))
        for call in (n for n in ast.walk(test) if isinstance(n, ast.Call) and len(n.args) >= 2):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            if name in ("allclose", "array_equal", "isclose", "equal") and \
                    ast.dump(call.args[0]) == ast.dump(call.args[1]):
                bad.append((lineno, "compares an expression with itself", ast.unparse(call)))
    return bad


def test_the_assert_detector_can_fail():
    flagged = literal_only_asserts(ast.parse(
        "assert round(math.sqrt(512)) == 23\n"
        "assert round(math.sqrt(192), 2) == 13.86\n"
        "assert abs(lib.softmax(np.array([2.0, 0.0]))[0] - 0.881) < 5e-4\n"
        "assert np.array_equal(x + 1, x + 1)\n"
        "assert y == y\n"
        "lib.claims.check(round(math.sqrt(512)), '>', 22, 'words')\n"
        "lib.claims.check(x, '<', x, 'words')\n"
        "lib.claims.holds(bool(np.array_equal(y, y)), 'words')\n"), constants=imported_names([]) | {"np", "math", "lib"})
    assert [line for line, *_ in flagged] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert not literal_only_asserts(ast.parse(
        "assert round(math.sqrt(d_k)) == 23\nassert abs(w[0] - 0.881) < 5e-4\nassert a.shape == (3, 2)\n"
        "assert np.allclose(weights.sum(-1), 1)\n"
        "lib.claims.check(ratio, '>', 2.0, 'words')\nlib.claims.holds(bool(w.min() > 0), 'words')\n"),
        constants=imported_names([]) | {"np", "math", "lib"})


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_assertion_that_cannot_fail(path):
    trees = list(_trees(path))
    constants = imported_names(t for _, t in trees)
    bad = [f"cell {i}, line {line}: {why}: assert {text}"
           for i, tree in trees for line, why, text in literal_only_asserts(tree, constants)]
    assert not bad, f"{path.name}: assertions that cannot fail:\n" + "\n".join(bad)


TEST_FILES = sorted(p for p in (ROOT / "tests").rglob("*.py") if p.name != "__init__.py")
# what the tests' imports may name that is the project's own code (a call into it is the test)
PROJECT_MODULES = {"lib", "conftest", *(p.stem for d in ("tools", "classroom", "tests")
                                          for p in (ROOT / d).rglob("*.py"))}


def project_names(tree):
    """Names a test file binds to the project's own code: ``import lib``, ``from lib.x import f``,
    ``import room`` (classroom/), ``import upstream`` (tools/), ``from conftest import ...``."""
    names = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in n.names
                         if a.name.split(".")[0] in PROJECT_MODULES)
        elif isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] in PROJECT_MODULES:
            names.update(a.asname or a.name for a in n.names)
    return names


def cannot_fail_in_tests(tree):
    """``literal_only_asserts`` for a test file: an assertion that calls the project's code on literal
    inputs tests that code, and one that reads module state (``plt.rcParams``, a call with no
    arguments such as ``tracemalloc.is_tracing()``) reads what the code under test left behind."""
    project = project_names(tree)
    constants = imported_names([tree]) - project
    asserts = {node.lineno: node for node in ast.walk(tree) if isinstance(node, ast.Assert)}
    bad = []
    # (in a test, lib.claims called on literals is the code under test, not a page's claim)
    for line, why, text in literal_only_asserts(tree, constants, claims=False):
        node = asserts[line]
        if why == "only literals":
            reads_state = any(isinstance(n, ast.Call) and not n.args and not n.keywords
                              for n in ast.walk(node.test)) or any(
                isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in constants
                and not any(isinstance(c, ast.Call) and c.func is n for c in ast.walk(node.test))
                for n in ast.walk(node.test))
            if reads_state:
                continue
        bad.append((line, why, text))
    return bad


def test_the_tests_detector_can_fail():
    tree = ast.parse("import math\nimport lib\nfrom packaging.version import Version\n"
                     "assert round(math.sqrt(512)) == 23\n"
                     "assert Version('1.4.1').public != Version('1.4.0').public\n"
                     "assert lib.softmax([0.0])[0] == 1.0\n"
                     "assert x == x\n")
    assert [line for line, *_ in cannot_fail_in_tests(tree)] == [4, 5, 7]


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: str(p.relative_to(ROOT / "tests")))
def test_no_test_assertion_that_cannot_fail(path):
    bad = [f"line {line}: {why}: assert {text}"
           for line, why, text in cannot_fail_in_tests(ast.parse(path.read_text(encoding="utf-8")))]
    assert not bad, f"{path.name}: assertions that cannot fail:\n" + "\n".join(bad)


def _calls(tree, name):
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                yield n


def _lib_trees():
    for path in sorted((ROOT / "lib").rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", CHAPTERS + sorted((ROOT / "lib").rglob("*.py")), ids=lambda p: p.name)
def test_tr_gets_one_literal(path):
    trees = [ast.parse(path.read_text(encoding="utf-8"))] if path.suffix == ".py" else [t for _, t in _trees(path)]
    bad = [ast.unparse(c) for t in trees for c in _calls(t, "tr")
           if path.name != "i18n.py" and not (c.args and isinstance(c.args[0], ast.Constant)
                                              and isinstance(c.args[0].value, str) and len(c.args) == 1)]
    assert not bad, f"{path.name}: tr() needs one string literal (numbers as fields): {bad}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_figures_are_glued_through_plotting(path):
    bad = []
    for i, tree in _trees(path):
        figs = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
                f = n.value.func
                if isinstance(f, ast.Attribute) and f.attr in ("subplots", "figure", "subplot_mosaic"):
                    target = n.targets[0]
                    first = target.elts[0] if isinstance(target, ast.Tuple) else target
                    if isinstance(first, ast.Name):
                        figs.add(first.id)
        for c in _calls(tree, "glue"):
            plain = isinstance(c.func, ast.Name) or not (isinstance(c.func.value, ast.Name)
                                                          and c.func.value.id == "plotting")
            if plain and len(c.args) > 1 and isinstance(c.args[1], ast.Name) and c.args[1].id in figs:
                bad.append(f"cell {i}: {ast.unparse(c)}")
    assert not bad, f"{path.name}: glue figures with plotting.glue (it checks legibility): {bad}"


#: ``{glue:text}`key:fmt``, ``{glue}`key``, ``{glue:figure} key`` and ``page.md::key`` in any page
GLUE_READ = re.compile(r"\{glue(?::[a-z]+)?\}`(?:(?P<page>[\w-]+)\.md::)?(?P<key>[^`:]+)|"
                       r"^```\{glue(?::[a-z]+)?\}\s+(?:(?P<fpage>[\w-]+)\.md::)?(?P<fkey>\S+)", re.M)


def glued_keys(path) -> list[tuple[int, str]]:
    """``(cell, pattern)`` for every key a chapter's code glues (``glue("key", ...)``,
    ``plotting.glue("key", ...)``, ``lib.claims.claim("key", ...)``, ``lib.claims.varies("key", ...)``; an
    f-string key becomes a pattern)."""
    out = []
    for i, tree in _trees(path):
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            if name not in ("glue", "claim", "varies"):
                continue
            key = call.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out.append((i, re.escape(key.value)))
            elif isinstance(key, ast.JoinedStr):
                out.append((i, "".join(re.escape(v.value) if isinstance(v, ast.Constant) else r"[^`:]+?"
                                       for v in key.values)))
    return out


def read_keys() -> set[tuple[str, str]]:
    """``(page, key)`` for every glued value a page shows."""
    out = set()
    for page in sorted(BOOK.glob("*.md")):
        for m in GLUE_READ.finditer(page.read_text(encoding="utf-8")):
            target = m["page"] or m["fpage"] or page.stem
            out.add((target, m["key"] or m["fkey"]))
    return out


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_glued_key_is_read_by_a_page(path):
    """A value glued and shown nowhere is dead code that still runs (and a claim nobody reads)."""
    read = {key for page, key in read_keys() if page == path.stem}
    unread = sorted({pat for _, pat in glued_keys(path) if not any(re.fullmatch(pat, k) for k in read)})
    assert not unread, f"{path.name}: glued but read by no page: {unread}"


def test_the_glue_reader_finds_every_form():
    text = ("{glue:text}`ratio:.1f` and {glue}`n` and {glue:text}`tuning.md::best:.2f`\n"
            "```{glue:figure} fig_sweep\n:name: fig-x\n```\n")
    found = {(m["page"] or m["fpage"], m["key"] or m["fkey"]) for m in GLUE_READ.finditer(text)}
    assert found == {(None, "ratio"), (None, "n"), ("tuning", "best"), (None, "fig_sweep")}


@pytest.mark.parametrize("path", CHAPTERS + [BOOK / "primer.md"], ids=lambda p: p.name)
def test_claims_are_checked_with_lib_claims(path):
    """A page's claim is a ``lib.claims`` call, never a bare ``assert``: an assert would stop a
    learner's Run All on another CPU's rounding, and the robustness check could not record it."""
    bare, cells = [], _cells(path)
    for i, tree in _trees(path):
        if "remove-cell" in _tags(cells[i]):
            bare += [f"cell {i}, line {n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Assert)]
    assert not bare, f"{path.name}: bare assert in a hidden cell (use lib.claims.check/holds): {bare}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_a_page_that_translates_names_itself(path):
    """A chapter whose code calls tr() says which page it is in its first code cell, so that its
    strings take their translations from its own catalog (lib.set_page)."""
    code = [_src(c) for c in _cells(path) if c["cell_type"] == "code"]
    if not any(re.search(r"\btr\(", src) for src in code):
        return
    first = code[0]
    names = re.findall(r'lib\.set_page\("([^"]*)"\)', first)
    assert names == [path.stem], (f"{path.name}: its first code cell must call "
                                  f'lib.set_page("{path.stem}") once; found {names}')
