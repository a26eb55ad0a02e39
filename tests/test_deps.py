"""One dependency source: pyproject.toml declares, tools/deps.py writes the files pip installs from, and
the learner's environment holds every package that lib and the chapters' code import.

The reference for "which package provides this import" is the installed packages' own metadata
(importlib.metadata: each distribution's file list and its Requires-Dist), not a list kept here."""
import ast
import importlib.metadata as md
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402
import deps  # noqa: E402

# imports that are not a package the learner installs: lib itself, and myst_nb, which the learner
# notebooks replace by a stand-in (tools/learner.py; tests/classroom checks no notebook keeps it)
NOT_INSTALLED = {"lib", "myst_nb"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_requirement_files_are_written_from_pyproject():
    out = subprocess.run([sys.executable, ROOT / "tools" / "deps.py", "check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_requires_python_is_what_the_lock_requires():
    """pyproject's requires-python admits no Python that a locked package refuses (numpy 2.4 and its
    neighbours need 3.11), read from the installed packages' own Requires-Python."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    declared = SpecifierSet(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"])
    floor = min((Version(f"3.{m}") for m in range(8, 20) if Version(f"3.{m}") in declared))
    too_strict = []
    for name in ("numpy", "scipy", "matplotlib", "ipython", "budoux", "torch"):
        need = md.metadata(name).get("Requires-Python")
        if need and floor not in SpecifierSet(need):
            too_strict.append(f"{name} {md.version(name)} needs Python {need}")
    assert not too_strict, f"requires-python {declared} admits {floor}, but " + "; ".join(too_strict)


def _closure(reqs: list[str]) -> set[str]:
    """The distributions a set of requirements installs, following each installed distribution's
    Requires-Dist (extras and environment markers evaluated for this machine)."""
    env = default_environment()
    todo = [Requirement(r) for r in reqs]
    seen: set[str] = set()
    while todo:
        r = todo.pop()
        name = _norm(r.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = md.requires(r.name) or []
        except md.PackageNotFoundError:
            continue
        for line in requires:
            sub = Requirement(line)
            if sub.marker is None or any(sub.marker.evaluate({**env, "extra": e}) for e in (r.extras or {""})):
                todo.append(sub)
    return seen


def _imports(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:   # a cell with IPython magics: drop those lines
        tree = ast.parse("\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def _third_party(modules: set[str]) -> set[str]:
    return {m for m in modules if m not in sys.stdlib_module_names and m not in NOT_INSTALLED}


def _learner_closure() -> set[str]:
    learner = [line.split("#", 1)[0].strip() for line in deps.LEARNER.read_text().splitlines()]
    return _closure([line for line in learner if line])


def test_the_learner_environment_installs_everything_lib_imports():
    """Every module lib imports (lazily too) comes from a distribution that the learner's requirements
    install: budoux, which lib.wrap imports for Japanese line breaks, was once missing."""
    provided = {m: {_norm(d) for d in ds} for m, ds in md.packages_distributions().items()}
    closure = _learner_closure()
    used = set()
    for path in sorted((ROOT / "lib").rglob("*.py")):
        used |= _third_party(_imports(path.read_text(encoding="utf-8")))
    assert {"numpy", "torch", "budoux", "matplotlib"} <= used, used   # the scan sees lazy imports
    missing = {m: sorted(provided.get(m, {"(not installed here)"})) for m in used
               if not provided.get(m, set()) & closure}
    assert not missing, f"lib imports these, and the learner environment does not install them: {missing}"


def test_the_learner_environment_installs_everything_the_chapters_import():
    """The same for the code cells of every chapter and page (what the learner notebooks run)."""
    provided = {m: {_norm(d) for d in ds} for m, ds in md.packages_distributions().items()}
    closure = _learner_closure()
    where: dict[str, str] = {}
    for src in sorted((ROOT / "book").glob("*.md")):
        if chapters.read(src) is None:   # plain Markdown: no code runs
            continue
        for cell in chapters.cells(src):
            if cell.cell_type == "code":
                for m in _third_party(_imports(cell.source)):
                    where.setdefault(m, src.name)
    assert {"numpy", "matplotlib"} <= set(where), where
    missing = {m: where[m] for m in where if not provided.get(m, set()) & closure}
    assert not missing, f"these pages import packages the learner environment lacks: {missing}"


def test_core_dependencies_are_what_import_lib_needs():
    """`import lib` needs numpy alone (torch and matplotlib load on first use); the core list holds it and
    budoux (lib.wrap), and nothing from the book stack."""
    core = {_norm(Requirement(r).name) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    assert core == {"numpy", "budoux"}, core
    out = subprocess.run([sys.executable, "-c", "import sys, lib; print(sorted(m for m in ('torch', 'matplotlib', "
                          "'scipy', 'budoux') if m in sys.modules))"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


@pytest.mark.parametrize("extra", ["learner", "authors"])
def test_every_declared_package_is_pinned_by_the_lock(extra):
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = deps.pins()
    for line in data["dependencies"] + data["optional-dependencies"][extra]:
        req = Requirement(line)
        name = _norm(req.name)
        assert name in pins, f"constraints.txt has no pin for {name}"
        assert req.specifier.contains(pins[name]), f"constraints.txt pins {name}=={pins[name]}, outside {line}"
