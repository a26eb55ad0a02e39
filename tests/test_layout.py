"""lib's modules talk to each other through public names only: no module imports another's private
(underscore) name or reaches into one (``training._x``). A name another module needs is public, even
where lib's ``__all__`` does not export it to the chapters."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib"
#: lib's layers, and the layers each may import from (lib/__init__.py's docstring). experiments and feedback
#: use each other only in the places named in ALLOWED.
LAYERS = {"infra": set(), "formula": {"infra"}, "experiments": {"infra", "formula"}, "feedback": {"infra", "formula"}}
ALLOWED = {("feedback/exercises.py", "experiments"),    # one self-check runs experiments.scale_probe
           ("experiments/port_check.py", "feedback"),   # the port check's report shows as a verdict does
           ("experiments/scale_probe.py", "feedback")}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def crossings(source: str, where: str = "") -> list[str]:
    """``module: name`` for every private name of another lib module that ``source`` uses."""
    tree = ast.parse(source)
    out, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            for a in node.names:
                if node.module is None or node.module in LAYERS:   # from . import training [as _t], from ..infra import claims
                    modules.add(a.asname or a.name)
                elif _private(a.name):
                    out.append(f"{where}:{node.lineno}: from .{node.module} import {a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and _private(node.attr):
            out.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr}")
    return out


def test_no_private_name_crosses_a_module():
    found = [c for p in sorted(LIB.rglob("*.py")) for c in crossings(p.read_text(encoding="utf-8"), p.name)]
    assert not found, "private names used across lib's modules:\n" + "\n".join(found)


def test_the_crossing_detector_can_fail():
    bad = "from .training import _stack_arms, Arm\nfrom . import progress as _p\n_p._append(1)\n"
    assert crossings(bad) == [":1: from .training import _stack_arms", ":3: _p._append"]
    good = "from .training import stack_arms\nfrom . import progress as _p\n_p.tag(1)\nfrom __future__ import annotations\n"
    assert crossings(good) == []


def layer_imports(source):
    """The layers a module of lib imports from (``from ..layer.x import y``): ``{(layer, line)}``."""
    return {(node.module.split(".")[0], node.lineno) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module}


def layer_violations(layer, name, source):
    where = f"{layer}/{name}"
    return [f"{where}:{line} imports from {other}" for other, line in sorted(layer_imports(source))
            if other != layer and other not in LAYERS[layer] and (where, other) not in ALLOWED]


def test_lib_is_in_four_layers_and_each_imports_only_from_those_below_it():
    assert sorted(p.name for p in LIB.iterdir() if p.is_dir() and p.name != "__pycache__"
                  and not p.name.startswith("locale")) == sorted(LAYERS)
    assert sorted(p.name for p in LIB.glob("*.py")) == ["__init__.py"], "every module lives in a layer's folder"
    bad = [v for layer in LAYERS for path in sorted((LIB / layer).glob("*.py"))
           for v in layer_violations(layer, path.name, path.read_text(encoding="utf-8"))]
    assert not bad, "\n".join(bad)


def test_the_layer_check_can_fail():
    source = "from ..formula.attention import softmax\nfrom ..infra import claims\nfrom .x import y\n"
    assert layer_violations("infra", "checks.py", source) == ["infra/checks.py:1 imports from formula"]
    assert layer_violations("experiments", "training.py", source) == []


def test_lib_has_no_star_import_and_an_explicit_public_list():
    tree = ast.parse((LIB / "__init__.py").read_text(encoding="utf-8"))
    stars = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)]
    assert not stars, f"star imports in lib/__init__.py at lines {stars}"
    import lib
    assert len(lib.__all__) == len(set(lib.__all__))
    assert [n for n in lib.__all__ if not hasattr(lib, n)] == []
