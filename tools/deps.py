"""The requirement files pip installs from, written from the one declaration in ``pyproject.toml``.

    python tools/deps.py write    requirements.txt and classroom/requirements-learner.txt, from pyproject.toml
    python tools/deps.py check    exit 1 (naming the file) when either differs from what `write` would write

- ``requirements.txt``, the authors' environment (``make install``, Binder, the Pages workflow): lib's
  own dependencies and the ``learner`` and ``authors`` extras, with their ranges. Every install adds
  ``-c constraints.txt``, which pins each to the version the book was checked with.
- ``classroom/requirements-learner.txt``, the learner's environment (``room.py install --learner``, the
  offline bundle, the JupyterHub): lib's own dependencies and the ``learner`` extra, each pinned exactly
  to its version in ``constraints.txt``, so that every laptop of a room runs what the book was checked
  with. lib itself is installed from the checkout or from the bundle's wheel.

The comments above each requirement in ``pyproject.toml`` are carried over, so the files still say why.
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
CONSTRAINTS = ROOT / "constraints.txt"
AUTHORS = ROOT / "requirements.txt"
LEARNER = ROOT / "classroom" / "requirements-learner.txt"

HEADER = ("# Written by `python tools/deps.py write` from pyproject.toml, the one place the dependencies are\n"
          "# declared: edit them there, then run it (tests/test_deps.py fails when this file is stale).\n")


def _name(req: str) -> str:
    return re.split(r"[<>=!~;\[ ]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _commented(section: str) -> list[tuple[list[str], str]]:
    """(comment lines, requirement) for each requirement of an array in pyproject.toml, in order: the
    comments are read from the text (tomllib drops them); the requirements are checked against tomllib."""
    text = PYPROJECT.read_text(encoding="utf-8")
    m = re.search(rf"^{re.escape(section)}\s*=\s*\[(.*?)^\]", text, re.S | re.M)
    if not m:
        m = re.search(rf"^{re.escape(section)}\s*=\s*\[(.*?)\]", text, re.M)
    if not m:
        raise SystemExit(f"pyproject.toml: no array {section!r}")
    out, comments = [], []
    for line in m.group(1).splitlines():
        line = line.strip()
        if line.startswith("#"):
            comments.append(line)
        for req in re.findall(r'"([^"]+)"', line.split("#", 1)[0]):
            out.append((comments, req))
            comments = []
    return out


def declared() -> dict[str, list[tuple[list[str], str]]]:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    groups = {"core": _commented("dependencies")}
    for extra in ("learner", "authors"):
        groups[extra] = _commented(extra)
        if [r for _, r in groups[extra]] != data["optional-dependencies"][extra]:
            raise SystemExit(f"pyproject.toml: could not read the extra {extra!r} line by line")
    if [r for _, r in groups["core"]] != data["dependencies"]:
        raise SystemExit("pyproject.toml: could not read the dependencies line by line")
    return groups


def pins() -> dict[str, str]:
    out = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            out[_name(name)] = version.strip()
    return out


def _lines(items, pinned: dict[str, str] | None) -> list[str]:
    out, seen = [], set()
    for comments, req in items:
        name = _name(req)
        if name in seen:
            continue
        seen.add(name)
        out += [c for c in comments]
        if pinned is None:
            out.append(req)
        else:
            if name not in pinned:
                raise SystemExit(f"constraints.txt pins no version of {name} (make lock)")
            out.append(f"{name}=={pinned[name]}")
    return out


def render() -> dict[Path, str]:
    g = declared()
    authors = HEADER + ("# The authors' environment: lib's dependencies, the learner's and the book stack's. Install\n"
                        "# with -c constraints.txt (every path here does).\n")
    authors += "\n".join(_lines(g["core"] + g["learner"] + g["authors"], None)) + "\n"
    learner = HEADER + ("# The learner's environment: what the learner notebooks import, pinned to the versions the book\n"
                        "# is built and tested with (constraints.txt). lib itself comes from the checkout or the bundle.\n")
    learner += "\n".join(_lines(g["core"] + g["learner"], pins())) + "\n"
    return {AUTHORS: authors, LEARNER: learner}


def main(argv: list[str]) -> int:
    if argv[1:] == ["write"]:
        for path, text in render().items():
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    if argv[1:] == ["check"]:
        stale = [p for p, text in render().items() if p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"{p.relative_to(ROOT)} differs from pyproject.toml: run `python tools/deps.py write`")
        return 1 if stale else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
