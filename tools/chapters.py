"""The chapters: their order, their sources and the notebooks made from them.

A chapter is a MyST Markdown notebook, ``book/<topic>.md`` (jupytext's ``myst`` format, which myst-nb
executes as it is). Its identity is its topic: the file name, the page label ``(<topic-with-hyphens>)=``,
the exercise labels ``ex-<label>-…``, the figure names ``fig-<label>-…``; glue keys are the page's own
(myst-nb looks a key up in its own page; another page reads it as ``{glue:text}`topic.md::key```).
Its number exists only in ``_toc.yml`` (the order of the numbered part) and in what the build renders
from it ("Chapter N", "Exercise N.M", the learner notebook ``NN_topic.ipynb``).

    python tools/chapters.py list              the chapters in the book's order, numbered as rendered
    python tools/chapters.py notebooks OUT     each chapter as a Jupyter notebook in OUT/<topic>.ipynb,
                                               for nbval (``make test-notebooks``); each code cell
                                               starts with a comment naming its source line
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


def chapters(toc: Path | None = None) -> list[str]:
    """The chapters' topics (``formula``, ``variance``, …) in the order of the numbered parts of
    ``_toc.yml``: the only place that knows the order."""
    data = yaml.safe_load((toc or ROOT / "_toc.yml").read_text(encoding="utf-8"))
    out = []
    for part in data.get("parts", []):
        if part.get("numbered"):
            out += [Path(c["file"]).name for c in part.get("chapters", [])]
    return out


def number(topic: str, toc: Path | None = None) -> int:
    """The chapter's number as the build renders it (its place in ``_toc.yml``)."""
    order = chapters(toc)
    if topic not in order:
        raise ValueError(f"{topic!r} is not a chapter of _toc.yml's numbered part: {order}")
    return order.index(topic) + 1


def label(topic: str) -> str:
    """The page label of a chapter: its topic with hyphens (``real_code`` -> ``real-code``)."""
    return topic.replace("_", "-")


def source(topic: str) -> Path:
    return BOOK / f"{topic}.md"


def notebook_name(page: str, toc: Path | None = None) -> str:
    """The file name of a page's learner and trainer notebooks: a chapter's carries its number, so
    that a file browser lists them in the book's order (``NN_topic.ipynb``); another page's is
    its name (``primer.ipynb``)."""
    order = chapters(toc)
    if page in order:
        return f"{order.index(page) + 1:02d}_{page}.ipynb"
    return f"{page}.ipynb"


def read(path: Path):
    """A page's notebook as myst-nb reads it (with its ``source_map``, the line of each cell), or None
    for a page that is plain Markdown."""
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook

    text = Path(path).read_text(encoding="utf-8")
    if not is_myst_markdown_notebook(text):
        return None
    return read_myst_markdown_notebook(text, add_source_map=True, path=path)


def cells(path: Path) -> list[dict]:
    """The cells of a chapter's source, as dicts with ``cell_type``, ``source`` (a string) and
    ``metadata``."""
    nb = read(path)
    if nb is None:
        raise ValueError(f"{path} is not a MyST Markdown notebook (no jupytext/kernelspec header)")
    return nb.cells


def write_notebooks(out: Path) -> list[Path]:
    """Every chapter as ``out/<topic>.ipynb`` for nbval: the notebook myst-nb executes, with a first
    line ``# book/<topic>.md:<line>`` in each code cell, so that nbval's report of a failing cell names
    the line of the source to open."""
    import nbformat

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for topic in chapters():
        path = source(topic)
        nb = read(path)
        lines = nb.metadata.pop("source_map", [])
        for i, cell in enumerate(nb.cells):
            cell.setdefault("id", f"{topic}-{i:03d}")
            if cell.cell_type == "code" and not cell.source.lstrip().startswith("%"):
                where = f"book/{path.name}:{lines[i]}" if i < len(lines) else f"book/{path.name}"
                cell.source = f"# {where}\n{cell.source}"
        nb.metadata.pop("jupytext", None)
        target = out / f"{topic}.ipynb"
        nbformat.write(nb, target)
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    if argv[:1] == ["list"]:
        for i, topic in enumerate(chapters(), 1):
            print(f"{i:2d}  {topic}")
        return 0
    if argv[:1] == ["notebooks"] and len(argv) == 2:
        for p in write_notebooks(Path(argv[1])):
            print(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
