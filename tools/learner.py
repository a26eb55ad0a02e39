"""Notebooks for learners and trainers, written from the book as Sphinx resolved it.

Called by ``tools/bookext.py`` at the end of every HTML build, for each chapter (``book/<topic>.md``)
and in the edition's language. The resolved document already holds what the HTML page shows: glued numbers and
figures, the numbers of figures, equations, exercises and theorems, references as text and, in the
Japanese edition, the translated prose. Each chapter gives two notebooks, in
``_build/notebooks/<lang>/``:

- ``learner/NN_topic.ipynb`` (NN: the chapter's place in ``_toc.yml``, so that a file browser lists
  them in the book's order; ``primer.ipynb`` for the primer): plain Jupyter Markdown that stock
  JupyterLab renders (numbers filled in, figures embedded, admonitions as quotes, exercises and theorems numbered as in the book, solutions
  folded in ``<details>``, code solutions as text inside them); every code cell of the chapter, in order,
  with the set-up folded (``jupyter.source_hidden``) and without the checks of the page's claims
  (``lib.claims``: the book's build checks them, a learner's machine may round otherwise); no outputs;
  no cell that only checks the book's own solution (tag ``solution-check``), so nothing in it
  computes an answer.
  The HTML book's download button offers it (it replaces ``_sources/book/<topic>.ipynb``, the
  notebook the theme offers for a MyST page).
- ``trainer/NN_topic.ipynb``: the same with the outputs of the build's execution, and the code solutions
  as runnable code cells after their folded text.

Both start with a folded cell ``lib.progress_bars(True)`` (a tqdm bar under each cell that trains,
:mod:`lib.infra.bars`; the HTML book has none), in the Japanese edition after ``lib.set_language("ja")``,
so figures and self-check verdicts come out in Japanese wherever the notebook runs.

Links between pages become plain text (the notebooks travel without the HTML book), links within the
page become anchors (``#fig-test-scores-exam``), links to the web stay links. A node this writer does not know
is an error, so a new construct in a chapter cannot silently vanish from the learner's notebook.
"""
from __future__ import annotations

import ast
import base64
import copy
import html as html_lib
import os
import re
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx import addnodes

import chapters
from upstream import cell_index_of_line, code_source, executed_notebook, is_code_cell

ROOT = Path(__file__).resolve().parents[1]

HIDDEN_TAGS = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
BANNER = {
    "en": ("*{kind} notebook of the course book **Why attention divides by √d_k**, generated from the "
           "book: run the cells from the top. {extra}*"),
    "ja": ("*コースブック「**なぜアテンションは √d_k で割るのか**」から生成した{kind}ノートブックです。"
           "上のセルから順に実行してください。{extra}*"),
}
KIND = {"en": {"learner": "Learner's", "trainer": "Trainer's"},
        "ja": {"learner": "学習者用", "trainer": "講師用"}}
EXTRA = {
    "en": {"learner": "Solutions are folded under each exercise; folded code cells are the book's set-up "
                      "and checks.",
           "trainer": "Outputs are those of the book's build; code solutions follow their folded text."},
    "ja": {"learner": "解答は各演習の下に折りたたんであります。折りたたまれたコードセルは本の準備とチェックです。",
           "trainer": "出力は本のビルド時のものです。コードの解答は折りたたまれた解説の後にあります。"},
}


class UnknownNode(Exception):
    pass


class Writer:
    """Markdown for the nodes of one resolved document."""

    def __init__(self, app, docname, doctree):
        self.app, self.docname, self.doctree = app, docname, doctree
        self.env = app.env
        self.numbers = self.env.toc_fignumbers.get(docname, {})
        self.ids_here = {i for n in doctree.findall(nodes.Element) for i in n.get("ids", [])}

    # -- numbers -------------------------------------------------------------------------------------
    def number(self, figtype, node) -> str:
        for i in node.get("ids", []):
            if i in self.numbers.get(figtype, {}):
                return ".".join(map(str, self.numbers[figtype][i]))
        return ""

    def fmt(self, figtype, number) -> str:
        return self.app.config.numfig_format.get(figtype, figtype + " %s") % number

    # -- inline ----------------------------------------------------------------------------------------
    def inline(self, node) -> str:
        if isinstance(node, nodes.Text):
            return escape(node.astext())
        if isinstance(node, nodes.math):
            return f"${node.astext()}$"
        if isinstance(node, nodes.literal):
            text = node.astext()
            tick = "``" if "`" in text else "`"
            return f"{tick}{text}{tick}"
        if isinstance(node, nodes.strong):
            return wrap("**", self.inlines(node))
        if isinstance(node, nodes.emphasis):
            return wrap("*", self.inlines(node))
        if isinstance(node, nodes.reference):
            return self.reference(node)
        if isinstance(node, (nodes.inline, nodes.abbreviation, addnodes.literal_emphasis,
                             addnodes.literal_strong)):
            return self.inlines(node)
        if isinstance(node, nodes.target):
            return "".join(f'<a id="{i}"></a>' for i in node.get("ids", []))
        if isinstance(node, nodes.raw):
            return ""
        if isinstance(node, (nodes.footnote_reference, nodes.citation_reference)):
            return self.inlines(node)
        if isinstance(node, nodes.subtitle):           # exercise subtitles
            return self.inlines(node)
        if isinstance(node, nodes.image):
            return self.image(node)
        raise UnknownNode(f"{self.docname}: inline node {node.__class__.__name__}: {node.astext()[:60]!r}")

    def inlines(self, node) -> str:
        return "".join(self.inline(c) for c in node.children)

    def reference(self, node) -> str:
        text = self.inlines(node)
        uri = node.get("refuri", "")
        if node.get("refid") and node["refid"] in self.ids_here:
            return f"[{text}](#{node['refid']})"
        if uri.startswith(("http://", "https://", "mailto:")):
            return f"[{text}]({uri})"
        if "#" in uri and uri.split("#")[0] in ("", f"{Path(self.docname).name}.html"):
            anchor = uri.split("#", 1)[1]
            if anchor in self.ids_here:
                return f"[{text}](#{anchor})"
        return text                                     # another page of the book: readable text

    def image(self, node) -> str:
        uri = node["uri"]
        path = (Path(self.app.srcdir) / uri) if not Path(uri).is_absolute() else Path(uri)
        if not path.is_file():
            path = Path(self.env.doc2path(self.docname)).parent / uri
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        mime = "image/svg+xml" if path.suffix == ".svg" else f"image/{path.suffix.lstrip('.').lower()}"
        alt = escape(node.get("alt", ""))
        return f"![{alt}](data:{mime};base64,{data})"

    # -- blocks ------------------------------------------------------------------------------------------
    def block(self, node, depth=1) -> str:
        from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node, solution_node

        if isinstance(node, nodes.paragraph):
            return self.inlines(node)
        if isinstance(node, nodes.section):            # the body of an exercise or a solution
            if node.next_node(nodes.title) is not None and node.next_node(nodes.title).parent is node:
                raise UnknownNode(f"{self.docname}: a titled section inside a block")
            return self.blocks(node)
        if isinstance(node, nodes.math_block):
            return self.math_block(node)
        if isinstance(node, nodes.literal_block):
            lang = node.get("language") or ""
            lang = {"ipython3": "python", "ipython": "python", "default": "", "none": ""}.get(lang, lang)
            return f"```{lang}\n{node.astext()}\n```"
        if isinstance(node, nodes.bullet_list):
            return "\n".join(self.list_item(li, "- ") for li in node.children)
        if isinstance(node, nodes.enumerated_list):
            start = node.get("start", 1)
            return "\n".join(self.list_item(li, f"{start + i}. ") for i, li in enumerate(node.children))
        if isinstance(node, nodes.table):
            return self.table(node)
        if isinstance(node, nodes.figure):
            return self.figure(node)
        if isinstance(node, nodes.image):
            return self.image(node)
        if isinstance(node, (exercise_enumerable_node, exercise_node)):
            return self.exercise(node)
        if isinstance(node, solution_node):
            return self.solution(node, code=None)
        if type(node).__module__ == "sphinx_proof.nodes":
            return self.proof(node)
        if isinstance(node, nodes.Admonition):
            return self.admonition(node)
        if isinstance(node, nodes.target):
            return "".join(f'<a id="{i}"></a>' for i in node.get("ids", []))
        if isinstance(node, (nodes.comment, nodes.raw, nodes.substitution_definition)):
            return ""
        if isinstance(node, nodes.block_quote):
            return quote(self.blocks(node))
        if isinstance(node, nodes.transition):
            return "---"
        if isinstance(node, nodes.definition_list):
            return "\n\n".join(f"**{self.inlines(item.children[0])}**  \n" +
                               self.blocks(item.children[-1]) for item in node.children)
        if isinstance(node, nodes.container):
            return self.blocks(node)
        if isinstance(node, nodes.rubric):
            return f"**{self.inlines(node)}**"
        raise UnknownNode(f"{self.docname}: block node {node.__class__.__name__}: {node.astext()[:60]!r}")

    def blocks(self, node) -> str:
        return "\n\n".join(s for s in (self.block(c) for c in node.children) if s)

    def list_item(self, li, bullet) -> str:
        body = self.blocks(li)
        pad = " " * len(bullet)
        lines = body.split("\n")
        return bullet + lines[0] + "".join("\n" + (pad + line if line else "") for line in lines[1:])

    def math_block(self, node) -> str:
        anchors = "".join(f'<a id="{i}"></a>' for i in node.get("ids", []))
        latex = node.astext().strip()
        num = self.number("displaymath", node) or (str(node["number"]) if node.get("number") else "")
        tag = f" \\tag{{{num}}}" if num else ""
        return (anchors + "\n\n" if anchors else "") + f"$$\n{latex}{tag}\n$$"

    def table(self, node) -> str:
        rows = []
        head_rows = 0
        for group in node.findall(nodes.tgroup):
            for part in group.children:
                if isinstance(part, (nodes.thead, nodes.tbody)):
                    for row in part.children:
                        rows.append([self.cell(e) for e in row.children])
                        if isinstance(part, nodes.thead):
                            head_rows += 1
        if not rows:
            return ""
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        if head_rows == 0:
            rows.insert(0, [""] * width)
            head_rows = 1
        out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
        out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        caption = node.next_node(nodes.title)
        cap = ""
        if caption is not None and caption.parent is node:
            num = self.number("table", node)
            cap = f"**{self.fmt('table', num)}** " if num else ""
            cap += self.inlines(caption) + "\n\n"
        return cap + "\n".join(out)

    def cell(self, entry) -> str:
        parts = []
        for c in entry.children:
            parts.append(self.inlines(c) if isinstance(c, nodes.paragraph) else self.block(c))
        return " ".join(parts).replace("\n", " ").replace("|", "\\|")

    def figure(self, node) -> str:
        anchors = "".join(f'<a id="{i}"></a>' for i in node.get("ids", []))
        images = [self.image(i) for i in node.findall(nodes.image)]
        caption = node.next_node(nodes.caption)
        num = self.number("figure", node)
        text = ""
        if caption is not None:
            text = (f"**{self.fmt('figure', num)}.** " if num else "") + self.inlines(caption)
        legend = node.next_node(nodes.legend)
        if legend is not None:
            text += "\n\n" + self.blocks(legend)
        return "\n\n".join(s for s in (anchors + "\n" + "\n\n".join(images), text) if s.strip())

    def title_of(self, node, figtype) -> str:
        """'Exercise N.M (Shapes)' / '演習 N.M（行列の形）', as the HTML page numbers and brackets it."""
        title = node.children[0]
        num = self.number(figtype, node)
        sub = ""
        for child in title.children:
            if isinstance(child, nodes.subtitle):
                sub = self.inlines(child)
        rest = "".join(self.inline(c) for c in title.children[1:])
        wide = "（" in rest or "）" in rest   # the Japanese edition's full-width brackets (tools/upstream.py)
        if not sub and len(title.children) > 1:
            sub = rest.strip(" ()（）")
        head = self.fmt(figtype, num) if num else title.children[0].astext()
        return head + ((f"（{sub}）" if wide else f" ({sub})") if sub else "")

    def exercise(self, node) -> str:
        anchors = "".join(f'<a id="{i}"></a>' for i in node.get("ids", []))
        body = "\n\n".join(self.block(c) for c in node.children[1:])
        return anchors + "\n\n" + quote(f"**{self.title_of(node, 'exercise')}**\n\n{body}")

    def solution(self, node, code) -> str:
        """A folded solution. ``code`` lists the code of a gated solution's cells (learner) or None."""
        title = summary(node.children[0]).strip()
        parts = []
        for c in node.children[1:]:
            if is_code_cell(c):
                if code is not None:
                    parts.append(f"```python\n{code_source(c).rstrip()}\n```")
                continue
            parts.append(self.block(c))
        body = "\n\n".join(p for p in parts if p)
        return f"<details>\n<summary><b>{title}</b></summary>\n\n{body}\n\n</details>"

    def proof(self, node) -> str:
        """A theorem ('Theorem 3.1 (title)', numbered as the page numbers it) or a proof."""
        from sphinx.locale import get_translation

        _ = get_translation("proof")
        anchors = "".join(f'<a id="{i}"></a>' for i in node.get("ids", []))
        realtype = node.get("realtype")
        if not realtype:                                  # a proof: an admonition with its own words
            inner = [c for c in node.children]
            body = "\n\n".join(self.blocks(c) if isinstance(c, nodes.Admonition) else self.block(c)
                                for c in inner)
            return anchors + quote(body)
        num = self.number(node.get("countertype", realtype), node)
        title = node.children[0]
        sub = self.inlines(title).strip() if isinstance(title, nodes.title) else ""
        head = f"{_(realtype.title())} {num}".strip()
        rest = node.children[1:] if isinstance(title, nodes.title) else node.children
        body = "\n\n".join(self.block(c) for c in rest)
        return anchors + "\n\n" + quote(f"**{head}{' ' + sub if sub else ''}**\n\n{body}")

    def admonition(self, node) -> str:
        title_node = node.next_node(nodes.title)
        if title_node is not None and title_node.parent is node:
            title = self.inlines(title_node)
            children = [c for c in node.children if c is not title_node]
        else:
            from sphinx.locale import admonitionlabels

            title = admonitionlabels.get(node.tagname, node.tagname.title())
            children = node.children
        body = "\n\n".join(self.block(c) for c in children)
        if "dropdown" in node.get("classes", []):
            return f"<details>\n<summary><b>{summary(title_node) if title_node is not None else title}</b></summary>\n\n{body}\n\n</details>"
        return quote(f"**{title}**\n\n{body}")


def summary(node) -> str:
    """A title as HTML for ``<summary>`` (no Markdown is rendered there): text escaped, math as $...$."""
    if isinstance(node, nodes.Text):
        return html_lib.escape(node.astext())
    if isinstance(node, nodes.math):
        return f"${html_lib.escape(node.astext())}$"
    if isinstance(node, nodes.literal):
        return f"<code>{html_lib.escape(node.astext())}</code>"
    return "".join(summary(c) for c in node.children)


def wrap(mark, text):
    stripped = text.strip()
    if not stripped:
        return text
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()):]
    return f"{lead}{mark}{stripped}{mark}{trail}"


def escape(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_").replace("$", "\\$")
    text = text.replace("<", "&lt;").replace("`", "\\`")
    return text


def quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.split("\n"))


# --- notebooks -----------------------------------------------------------------------------------------

def _tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def _code_cell(cell, *, outputs, fold):
    new = nbformat.v4.new_code_cell(source=cell["source"])
    if cell.get("id"):
        new["id"] = cell["id"]
    meta = copy.deepcopy(cell.get("metadata", {}))
    if fold:
        meta.setdefault("jupyter", {})["source_hidden"] = True
    new["metadata"] = meta
    if outputs is not None:
        new["outputs"] = outputs
        new["execution_count"] = None
    return new


# The book's hidden set-up glues numbers and figures into the HTML page with myst-nb. In these notebooks
# the numbers are already in the text, so `glue` becomes a stand-in that needs only IPython (as myst-nb's
# does, it shows the value when display=True): a learner's environment needs no book-building stack.
GLUE_IMPORT = re.compile(r"^(?P<indent>[ \t]*)from myst_nb import glue[ \t]*$", re.M)
GLUE_STANDIN = ("def glue(name, variable, display=True):  # the book glues numbers into its HTML pages; "
                "a no-op here, the numbers are in the text\n"
                "    if display:\n"
                "        from IPython.display import display as _show\n"
                "        _show(variable)")


def _is_claim(stmt) -> bool:
    """A statement that only checks one of the page's claims: ``lib.claims.check(...)``,
    ``claims.holds(...)``, ``lib.claims.claim(...)`` or ``lib.claims.varies(...)`` (the last two also glue a
    number for the HTML page: the learner notebook has it in its text already) as a statement of its own."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    f = stmt.value.func
    return isinstance(f, ast.Attribute) and f.attr in {"claim", "check", "holds", "varies"} and (
        (isinstance(f.value, ast.Name) and f.value.id == "claims")
        or (isinstance(f.value, ast.Attribute) and f.value.attr == "claims"))


def without_claims(source: str) -> str:
    """The cell's code without the checks of the page's claims (``lib.claims``): a learner's Run All
    never stops on a check of the book's own numbers, which another CPU may round differently. A
    block left with nothing else gets a ``pass``."""
    lines = source.split("\n")
    py = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)
    try:
        tree = ast.parse(py)
    except SyntaxError:
        return source
    drop, keep_pass = set(), {}
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, name, None)
            if not isinstance(stmts, list) or not stmts or not isinstance(stmts[0], ast.stmt):
                continue
            claims_here = [s for s in stmts if _is_claim(s)]
            for s in claims_here:
                drop.update(range(s.lineno, s.end_lineno + 1))
            if claims_here and len(claims_here) == len(stmts) and not isinstance(node, ast.Module):
                first = claims_here[0]
                keep_pass[first.lineno] = lines[first.lineno - 1][:first.col_offset] + "pass"
    if not drop:
        return source
    out = [keep_pass.get(i, line) for i, line in enumerate(lines, 1) if i not in drop or i in keep_pass]
    return "\n".join(out).strip("\n")


def without_book_stack(source: str, docname: str = "") -> str:
    """The cell's code with ``from myst_nb import glue`` replaced by the stand-in; any other use of
    myst_nb is an error, so that no learner notebook needs the book's build stack."""
    source = GLUE_IMPORT.sub(lambda m: "\n".join(m["indent"] + line for line in GLUE_STANDIN.split("\n")),
                             source)
    if re.search(r"\bmyst_nb\b", source):
        raise UnknownNode(f"{docname}: a code cell uses myst_nb beyond `from myst_nb import glue`; "
                          "tools/learner.py has no stand-in for it")
    return source


class _Assembler:
    """Walks one chapter's resolved doctree and collects the notebook's cells in page order: Markdown
    for the prose, the chapter's code cells where the page shows them, and its hidden cells (absent
    from the page) before the first thing that follows them in the source notebook."""

    def __init__(self, app, docname, doctree, source_nb, executed_nb, trainer):
        self.w = Writer(app, docname, doctree)
        self.docname, self.trainer = docname, trainer
        self.src_cells = source_nb.cells
        self.outputs = {i: c.get("outputs", []) for i, c in enumerate(executed_nb.cells)} if executed_nb else {}
        self.hidden = [i for i, c in enumerate(self.src_cells)
                       if c.cell_type == "code" and "remove-cell" in _tags(c)]
        self.source_map = source_nb.metadata.get("source_map")
        self.cells: list = []
        self.md: list[str] = []
        self.md_cell = None                  # the source cell the Markdown being collected comes from

    def run(self, doctree) -> list:
        self.walk(doctree, 1)
        self.emit_hidden(len(self.src_cells))
        self.flush()
        return self.cells

    def flush(self):
        if self.md:
            self.cells.append(nbformat.v4.new_markdown_cell("\n\n".join(self.md)))
            self.md.clear()

    def emit_hidden(self, upto):
        """Hidden code cells (absent from the page) with an index below ``upto``, in order."""
        while self.hidden and self.hidden[0] < upto:
            i = self.hidden.pop(0)
            cell = self.src_cells[i]
            if "solution-check" in _tags(cell) and not self.trainer:
                continue
            self.flush()
            self.cells.append(_code_cell(cell, outputs=self.outputs.get(i, []) if self.trainer else None,
                                         fold=True))

    def code(self, index, fold_override=None):
        self.emit_hidden(index)
        self.flush()
        cell = self.src_cells[index]
        fold = bool(_tags(cell) & HIDDEN_TAGS) if fold_override is None else fold_override
        self.cells.append(_code_cell(cell, outputs=self.outputs.get(index, []) if self.trainer else None,
                                     fold=fold))

    def place(self, node):
        index = cell_index_of_line(node.line or 0, self.source_map)
        if index is not None and index != self.md_cell:
            self.emit_hidden(index)
            self.flush()
            self.md_cell = index

    def walk(self, parent, depth):
        from sphinx_exercise.nodes import solution_node

        w = self.w
        for node in parent.children:
            if isinstance(node, nodes.section):
                title = node.next_node(nodes.title)
                self.place(title)
                number = ""
                if depth == 1:
                    secnums = w.env.toc_secnumbers.get(self.docname, {})
                    number = ".".join(map(str, secnums.get("", ()))) + ". " if secnums.get("") else ""
                anchors = "".join(f'<a id="{i}"></a>' for i in node.get("ids", []))
                self.md.append(f"{'#' * depth} {number}{w.inlines(title)}" + (f" {anchors}" if anchors else ""))
                self.walk(node, depth + 1)
                continue
            if isinstance(node, nodes.title):
                continue
            if is_code_cell(node):
                self.code(node["cell_index"])
                continue
            if isinstance(node, solution_node) and any(is_code_cell(c) for c in node.children):
                self.place(node)
                self.md.append(w.solution(node, code=None if self.trainer else True))
                if self.trainer:
                    for c in node.children:
                        if is_code_cell(c):
                            self.code(c["cell_index"], fold_override=False)
                continue
            self.place(node)
            text = w.block(node)
            if text.strip():
                self.md.append(text)


#: the comments of the first, folded cell, in the notebook's language
LANGUAGE_COMMENT = {"en": "figures and self-check verdicts in this language",
                    "ja": "図と自己チェックの判定を日本語で出します"}
PROGRESS_COMMENT = {"en": "a bar under each cell that trains", "ja": "学習するセルの下に進み具合のバーを出します"}


def build(app, docname, doctree, source_nb, executed_nb, variant, lang):
    """The learner's or the trainer's notebook of one chapter."""
    trainer = variant == "trainer"
    cells = _Assembler(app, docname, doctree, source_nb, executed_nb, trainer).run(doctree)

    head = [nbformat.v4.new_markdown_cell(BANNER[lang].format(kind=KIND[lang][variant],
                                                              extra=EXTRA[lang][variant]))]
    setup = ["import lib", ""]
    if lang != "en":
        setup.append(f"lib.set_language({lang!r})  # {LANGUAGE_COMMENT.get(lang, LANGUAGE_COMMENT['en'])}")
    setup.append(f"lib.progress_bars(True)  # {PROGRESS_COMMENT[lang]}")
    setup = nbformat.v4.new_code_cell(source="\n".join(setup))
    setup["metadata"] = {"jupyter": {"source_hidden": True}, "tags": ["language", "setup"]}
    if trainer:
        setup["outputs"] = []
    head.append(setup)
    for cell in cells:
        if cell.cell_type == "code":
            cell["source"] = without_book_stack(without_claims(cell["source"]), docname)
    # a hidden cell that held only claim checks (and their comments) is gone altogether
    cells = [c for c in cells if not (c.cell_type == "code" and "remove-cell" in _tags(c) and not any(
        line.strip() and not line.lstrip().startswith("#") for line in c["source"].splitlines()))]
    metadata = copy.deepcopy(source_nb.metadata)
    metadata.pop("source_map", None)
    metadata.pop("jupytext", None)
    nb = nbformat.v4.new_notebook(cells=head + cells, metadata=metadata)
    nb.metadata["language"] = lang
    page = docname.rsplit("/", 1)[-1]
    for i, cell in enumerate(nb.cells):   # ids that a rebuild keeps (a MyST source has none)
        cell["id"] = f"{page}-{i:03d}"
    return nb


def read_notebook(path: Path):
    """The notebook of a page: an .ipynb chapter, or a MyST Markdown notebook (a page with a
    jupytext/kernelspec header, such as the primer) as myst-nb reads it, with its source_map; None for
    a plain Markdown page."""
    return chapters.read(path) if path.suffix == ".md" else None


def _drop_explorable_html(nb) -> None:
    """An explorable figure's output keeps its Vega-Lite form only: the HTML form the book's build adds
    needs the page's Vega-Embed, and JupyterLab, which ranks text/html first, would show it empty."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.vegalite.v5+json" in data:
                data.pop("text/html", None)


def write_all(app, pages_written: set[str] | None = None) -> list[tuple[Path, Path | None]]:
    """Write the notebooks of every chapter whose HTML page this build wrote (``pages_written``; all
    chapters if None), and of any chapter whose notebooks are missing or older than this writer, so
    that a warm rebuild after one prose edit rewrites one chapter's notebooks, not all of them.
    Returns each notebook written with the copy the page's download button offers (None for a
    trainer's notebook). ``BOOK_NOTEBOOKS`` (a folder) replaces ``_build/notebooks``."""
    lang = app.config.language or "en"
    base = Path(os.environ.get("BOOK_NOTEBOOKS") or ROOT / "_build" / "notebooks") / lang
    writer_mtime = Path(__file__).stat().st_mtime
    toc = Path(app.config.external_toc_path)   # the build's own (a test builds with chapters swapped)
    written, names = [], set()
    for docname in sorted(app.env.found_docs):
        path = Path(app.env.doc2path(docname))
        source_nb = read_notebook(path)
        if source_nb is None:
            continue
        name = chapters.notebook_name(path.stem, toc)
        names.add(name)
        outs = [base / variant / name for variant in ("learner", "trainer")]
        current = all(o.is_file() and o.stat().st_mtime >= writer_mtime for o in outs)
        if pages_written is not None and docname not in pages_written and current:
            continue
        doctree = app.env.get_and_resolve_doctree(docname, app.builder)
        executed = executed_notebook(app, path, source_nb)
        for variant in ("learner", "trainer"):
            nb = build(app, docname, doctree, source_nb, executed, variant, lang)
            _drop_explorable_html(nb)
            out = base / variant / name
            out.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, out)
            copy = None
            if variant == "learner":           # the download button of the page offers it
                sources = Path(app.outdir) / "_sources" / f"{docname}.ipynb"
                if sources.parent.is_dir():
                    nbformat.write(nb, sources)
                    copy = sources
            written.append((out, copy))
    for variant in ("learner", "trainer"):   # a chapter renamed or moved leaves no stale notebook behind
        for stale in sorted((base / variant).glob("*.ipynb")):
            if stale.name not in names:
                stale.unlink()
    return written
