"""The book stack is the one its patches were written for (``constraints.txt``), and the fence
(``tools/upstream.py``) lists every patch with a guard that exists.

An upgrade of a patched package fails here in seconds, naming the patches to re-check, instead of
somewhere inside the 8-minute ``make test``."""
from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import upstream  # noqa: E402


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", f"constraints.txt: {line!r} is not an exact pin"
        pins[canonicalize_name(req.name)] = spec.version
    return pins


def _requirements(path: Path) -> list[Requirement]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            out.append(Requirement(line))
    return out


def pin_mismatches(pins: dict[str, str], installed=metadata.version) -> list[str]:
    """One line per distribution a patch depends on whose installed release is not its pin, naming the
    patches to re-check. ``installed(dist)`` gives a version (the installed one by default)."""
    wrong = []
    for dist in sorted({d for p in upstream.PATCHES for d in p.upstream}):
        pinned = pins.get(canonicalize_name(dist))
        assert pinned is not None, f"constraints.txt does not pin {dist}, which patches depend on"
        have = installed(dist)
        if Version(have).public != Version(pinned).public:
            names = ", ".join(f"#{p.number} ({p.where}: {p.depends_on})"
                              for p in upstream.patches_depending_on(dist))
            wrong.append(f"{dist} {have} is installed, the patches were written for {pinned}; "
                         f"re-check {names}")
    return wrong


def test_patched_packages_are_the_pinned_versions():
    wrong = pin_mismatches(_pins())
    assert not wrong, "\n".join(wrong)


def test_every_requirement_is_pinned_inside_its_range():
    pins = _pins()
    for req in _requirements(ROOT / "requirements.txt"):
        pinned = pins.get(canonicalize_name(req.name))
        assert pinned is not None, f"constraints.txt has no pin for {req.name}"
        assert req.specifier.contains(pinned, prereleases=True), \
            f"constraints.txt pins {req.name}=={pinned}, outside requirements.txt's {req.specifier}"


def test_the_pin_check_can_fail():
    """The check above names the patches of a distribution one point release away from its pin, and
    takes a local build label (torch's +cpu) for the pinned release."""
    pins = _pins()
    dist = "myst-nb"
    pinned = Version(pins[canonicalize_name(dist)])
    bumped = f"{pinned.major}.{pinned.minor}.{pinned.micro + 1}"
    wrong = pin_mismatches(pins, installed=lambda d: bumped if d == dist else pins[canonicalize_name(d)])
    assert len(wrong) == 1 and wrong[0].startswith(f"{dist} {bumped} is installed")
    assert all(f"#{p.number} " in wrong[0] for p in upstream.patches_depending_on(dist))
    assert upstream.patches_depending_on(dist)
    local = pin_mismatches(pins, installed=lambda d: pins[canonicalize_name(d)] + "+cpu")
    assert local == []


def test_every_patch_names_a_guard_that_exists():
    named = re.compile(r"(tests/[\w/]+\.py)(?:::(\w+))?")
    for patch in upstream.PATCHES:
        found = named.findall(patch.guard)
        if not found:          # "every build": the strict builds of both editions are the guard
            assert "build" in patch.guard, f"patch #{patch.number} names no guard"
            continue
        for path, name in found:
            file = ROOT / path
            assert file.is_file(), f"patch #{patch.number}: guard {path} does not exist"
            if name:
                funcs = {n.name for n in ast.walk(ast.parse(file.read_text(encoding="utf-8")))
                         if isinstance(n, ast.FunctionDef)}
                assert name in funcs, f"patch #{patch.number}: {path} has no test {name}"


def test_patch_numbers_are_unique_and_dependencies_are_distributions():
    numbers = [p.number for p in upstream.PATCHES]
    assert len(numbers) == len(set(numbers))
    for p in upstream.PATCHES:
        for dist in p.upstream:
            metadata.version(dist)    # raises PackageNotFoundError for a name that is not installed


def test_myst_nb_line_encoding():
    """Patch 9: myst-nb's tokens carry the line (cell_index + 1) * 10000 + ..., which
    ``cell_index_of_line`` inverts. Checked on myst-nb's own tokenizer, not on a copy of the rule."""
    from markdown_it import MarkdownIt
    from myst_nb.core.nb_to_tokens import notebook_to_tokens

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\n\nFirst paragraph."),
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_code_cell("y = 2"),
        nbformat.v4.new_markdown_cell("Second\n\nparagraph."),
    ])

    class Quiet:
        def warning(self, *a, **k):
            pass

    tokens = notebook_to_tokens(nb, MarkdownIt("commonmark"), {}, Quiet())
    cells = {upstream.cell_index_of_line(t.map[0]) for t in tokens if t.map and t.map[0]}
    assert cells == {0, 2, 3}            # the removed cell 1 gives no token
    assert upstream.cell_index_of_line(5) is None and upstream.cell_index_of_line(None) is None


def test_executed_notebook_refuses_an_uncached_chapter(tmp_path):
    """Patch 12: a chapter missing from the execution cache is an error, not a trainer notebook
    silently without outputs."""
    from types import SimpleNamespace

    app = SimpleNamespace(env=SimpleNamespace(mystnb_config=SimpleNamespace(
        execution_cache_path=str(tmp_path / "cache"))))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    with pytest.raises(upstream.NotExecuted, match="not in the execution cache"):
        upstream.executed_notebook(app, "book/nowhere.md", nb)


def test_contributing_explains_every_patch():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    explained = {int(n) for a, b in re.findall(r"#(\d+)(?: to #(\d+))?", text)
                 for n in (range(int(a), int(b) + 1) if b else [a])}
    missing = [p.number for p in upstream.PATCHES if p.number not in explained]
    assert not missing, f"CONTRIBUTING.md does not say why patches {missing} exist"
