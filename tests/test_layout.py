"""lib's modules talk to each other through public names only: no module imports another's private
(underscore) name or reaches into one (``training._x``). A name another module needs is public, even
where lib's ``__all__`` does not export it to the chapters."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def crossings(source: str, where: str = "") -> list[str]:
    """``module: name`` for every private name of another lib module that ``source`` uses."""
    tree = ast.parse(source)
    out, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            for a in node.names:
                if node.module is None:              # from . import training [as _t]
                    modules.add(a.asname or a.name)
                elif _private(a.name):
                    out.append(f"{where}:{node.lineno}: from .{node.module} import {a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and _private(node.attr):
            out.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr}")
    return out


def test_no_private_name_crosses_a_module():
    found = [c for p in sorted(LIB.glob("*.py")) for c in crossings(p.read_text(encoding="utf-8"), p.name)]
    assert not found, "private names used across lib's modules:\n" + "\n".join(found)


def test_the_crossing_detector_can_fail():
    bad = "from .training import _stack_arms, Arm\nfrom . import progress as _p\n_p._append(1)\n"
    assert crossings(bad) == [":1: from .training import _stack_arms", ":3: _p._append"]
    good = "from .training import stack_arms\nfrom . import progress as _p\n_p.tag(1)\nfrom __future__ import annotations\n"
    assert crossings(good) == []
