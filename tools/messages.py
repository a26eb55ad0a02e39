"""The strings that code shows (every ``tr("...")`` call in the chapters and in ``lib``): found once,
here, for the build (``tools/build.py``: the execution caches' hash, the gettext build) and for the
catalogs (``tools/catalogs.py``). A leaf module: it imports nothing else of tools/."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import polib

ROOT = Path(__file__).resolve().parents[1]
POT = ROOT / "_build" / "gettext"
CODE_FLAG = "code"
#: A code cell of a MyST Markdown notebook: ```{code-cell} ... ``` (its option lines start with ":").
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?::[^\n]*\n)*(.*?)^```", re.M | re.S)


def _python(cell: str) -> str:
    """A code cell without its IPython lines (``%magic``, ``!shell``), which ast cannot read."""
    return "\n".join(line for line in cell.splitlines() if not line.lstrip().startswith(("%", "!")))


def tr_calls(source: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) \
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "tr":
            out.append(node.args[0].value)
    return out


def code_messages_by_catalog() -> dict[str, list[str]]:
    """``{"book/formula": [...], "lib": [...]}``: every ``tr("...")`` message, in source order."""
    out: dict[str, list[str]] = {}
    for page in sorted((ROOT / "book").glob("*.md")):        # the chapters and the primer
        cells = CODE_CELL.findall(page.read_text(encoding="utf-8"))
        if cells:
            out[f"book/{page.stem}"] = [m for src in cells for m in tr_calls(_python(src))]
    out["lib"] = [m for p in sorted((ROOT / "lib").rglob("*.py")) for m in tr_calls(p.read_text(encoding="utf-8"))]
    return out


def add_code_messages() -> None:
    """Append each catalog's code messages to its .pot (a separate lib.pot for lib), and drop the code
    messages an earlier run added that the code no longer shows: a warm tree keeps its .pot files
    (Sphinx rewrites a page's .pot only when the page changed, and lib.pot is ours alone), so without
    this a removed message stayed in a warm tree's catalogs while a clean clone saw it gone."""
    for domain, msgs in code_messages_by_catalog().items():
        path = POT / f"{domain}.pot"
        pot = polib.pofile(str(path)) if path.is_file() else polib.POFile()
        if not path.is_file():
            pot.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
        current = set(msgs)
        for stale in [e for e in pot if e.comment == CODE_FLAG and e.msgid not in current]:
            if stale.occurrences:       # the page's prose has it too: only the flag goes
                stale.comment = ""
            else:
                pot.remove(stale)
        known = {e.msgid: e for e in pot}
        for m in dict.fromkeys(msgs):
            if m in known:              # also in the prose: flag it, so that lib.tr prefers this
                known[m].comment = CODE_FLAG   # page's translation to a prose-only one elsewhere
                continue
            known[m] = polib.POEntry(msgid=m, msgstr="", comment=CODE_FLAG)
            pot.append(known[m])
        path.parent.mkdir(parents=True, exist_ok=True)
        pot.save(str(path))


def code_messages() -> set[str]:
    """Every message that code shows, in the chapters and in lib."""
    return {m for msgs in code_messages_by_catalog().values() for m in msgs}
