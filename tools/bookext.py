"""The book's own Sphinx extension: what the Japanese edition and the learner notebooks need.

Loaded by ``_config.yml`` (listed in ``sphinx.config.extensions``, before sphinx_exercise, and in
``sphinx.local_extensions`` for its path). Each part fixes one gap of the stack (jupyter-book 1.0.4,
myst-nb 1.4, sphinx-exercise 1.2, Sphinx 7.4), found by trying the translation on this book
(``../shared/reference/i18n-notes.md``):

1. ``{glue:text}`` in a translated paragraph. Sphinx parses each translation as a small document of
   its own; myst-nb then has no notebook for it and the glued value vanishes ("No key ... found in
   glue data"). We give that small document the glue data of the notebook it belongs to.
2. Exercise titles (``{exercise} Shapes``) are not extracted for translation: sphinx-exercise builds
   the subtitle node without a source line, which Sphinx takes for a built-in message. We give it the
   line of its exercise, so the title is extracted and translated like any heading.
3. Project message catalogs for extensions' own words (``locales/<lang>/LC_MESSAGES/exercise.po``:
   "演習", not sphinx-exercise's "練習"), loaded before the extensions' own catalogs; and solution
   titles that repeat their exercise's title as translated, not as first read.
4. The language switch: every page gets ``other_language_url`` and ``other_language_label`` for the
   template ``tools/templates/language-switch.html`` (a link to the same page in the other edition).
5. At the end of an HTML build, the learner's and the trainer's notebook of every chapter
   (``tools/learner.py``), from the resolved documents of that edition.
6. The Japanese search index and the search page split words the same way, with the book's terms as
   a dictionary (``tools/booksearch.py``).
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: The editions: language code -> (folder under the English HTML root, label shown in the switch).
EDITIONS = {"en": ("", "English"), "ja": ("ja/", "日本語")}


# 1. Glue data for translated paragraphs ---------------------------------------------------------

_glue_data: dict[str, dict] = {}


def _patch_myst_nb_parser():
    from myst_nb import sphinx_ as mnb

    if getattr(mnb.Parser.parse, "_book_patched", False):
        return
    original = mnb.Parser.parse

    def parse(self, inputstring, document):
        env = document.settings.env
        if not document.current_source.endswith("<translated>"):
            original(self, inputstring, document)
            _glue_data[env.docname] = _read_glue(env)
            return None
        data = _glue_data.get(env.docname)
        if data is None:
            return original(self, inputstring, document)
        stand_in = SimpleNamespace(renderer=SimpleNamespace(nb_client=SimpleNamespace(glue_data=data)))
        document.attributes["nb_renderer"] = stand_in
        try:
            return original(self, inputstring, document)
        finally:
            document.attributes.pop("nb_renderer", None)

    parse._book_patched = True
    mnb.Parser.parse = parse


def _read_glue(env) -> dict:
    """The glue data myst-nb just wrote for ``env.docname`` (``<output_folder>/<doc>.glue.json``)."""
    path = Path(env.mystnb_config.output_folder, *env.docname.split("/")).with_suffix(".glue.json")
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


# 2. Exercise titles become translatable -------------------------------------------------------------

class ExerciseTitlesTranslatable(SphinxTransform):
    """Give sphinx-exercise's subtitle nodes a source, a line and their MyST text, before the i18n
    transform runs, so that the gettext builder extracts them and the translation replaces them."""

    default_priority = 5  # sphinx.transforms.i18n.Locale runs at 20

    def apply(self, **kwargs):
        from sphinx_exercise.nodes import exercise_subtitle, exercise_title

        for node in self.document.findall(exercise_title):
            node["translatable"] = False        # "Exercise" + subtitle: only the subtitle is a message
        for node in self.document.findall(exercise_subtitle):
            if node.source and node.rawsource:
                continue
            owner = node.parent
            while owner is not None and not owner.source:
                owner = owner.parent
            node.source = owner.source if owner is not None else self.document["source"]
            node.line = owner.line if owner is not None and owner.line else 1
            node.rawsource = "".join(_myst(child) for child in node.children)


def _keep_exercise_titles_for_gettext():
    """sphinx-exercise's post-transform folds the subtitle into a new title node without a source
    before the gettext builder extracts messages; in that builder, leave the titles as read."""
    from sphinx_exercise.post_transforms import ResolveTitlesInExercises

    original = ResolveTitlesInExercises.run

    def run(self, **kwargs):
        if self.app.builder.name == "gettext":
            return None
        return original(self, **kwargs)

    ResolveTitlesInExercises.run = run


def _myst(node) -> str:
    """The MyST text of a simple inline node (what an exercise title can hold)."""
    if isinstance(node, nodes.math):
        return f"${node.astext()}$"
    if isinstance(node, nodes.literal):
        return f"`{node.astext()}`"
    if isinstance(node, nodes.strong):
        return "**" + "".join(_myst(c) for c in node.children) + "**"
    if isinstance(node, nodes.emphasis):
        return "*" + "".join(_myst(c) for c in node.children) + "*"
    return node.astext()


# 3. Project catalogs for extensions' own words --------------------------------------------------------

def _project_catalogs(app: Sphinx):
    """Load ``locales/<lang>/LC_MESSAGES/{exercise,proof}.po`` ahead of the extensions' own catalogs
    (this extension is listed before them, and the first catalog loaded for a domain wins)."""
    import polib

    locale_dir = ROOT / "locales"
    for catalog in ("exercise", "proof"):
        for po in locale_dir.glob(f"*/LC_MESSAGES/{catalog}.po"):
            mo = po.with_suffix(".mo")
            if not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime:
                polib.pofile(str(po)).save_as_mofile(str(mo))
        app.add_message_catalog(catalog, str(locale_dir))


class SolutionTitlesFromTranslatedExercises(SphinxPostTransform):
    """sphinx-exercise builds a solution's title from the exercise node it registered while reading,
    before the translation replaced the exercise's title. Point the registry at this document's
    (translated) exercise, copied before sphinx-exercise's own title post-transform (priority 20)."""

    default_priority = 19

    def run(self, **kwargs):
        from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node

        registry = getattr(self.env, "sphinx_exercise_registry", None)
        if not registry:
            return
        for node in self.document.findall(lambda n: isinstance(n, (exercise_node, exercise_enumerable_node))):
            label = node.get("label")
            if label in registry:
                registry[label]["node"] = node.deepcopy()


class FullWidthParenthesesInExerciseTitles(SphinxPostTransform):
    """sphinx-exercise joins a number and a short title as "Exercise 5.1 (title)", with half-width
    parentheses; Japanese text takes full-width ones: "演習 5.1（タイトル）". Runs after
    sphinx-exercise's title post-transforms (priorities 20-22), in editions other than English."""

    default_priority = 23

    def run(self, **kwargs):
        if (self.app.config.language or "en") == "en":
            return
        from sphinx_exercise.nodes import (exercise_enumerable_node, exercise_node,
                                           solution_node)

        wide = {" (": "（", ")": "）"}
        kinds = (exercise_node, exercise_enumerable_node, solution_node)
        for node in self.document.findall(lambda n: isinstance(n, kinds)):
            if not node.children or not isinstance(node.children[0], nodes.title):
                continue
            for text in list(node.children[0].findall(nodes.Text)):
                if str(text) in wide:
                    text.parent.replace(text, nodes.Text(wide[str(text)]))
            if isinstance(node, solution_node):
                _solution_title_in_japanese_order(node.children[0])


def _solution_title_in_japanese_order(title) -> None:
    """"解答： 演習 1.1（行列の形）" (sphinx-exercise's "Solution to" + link) -> the link
    "演習 1.1 の解答（行列の形）", the order a Japanese heading takes (exercise.po: "Solution to" = "の解答")."""
    import re

    from sphinx.locale import get_translation

    suffix = get_translation("exercise")("Solution to")
    first = title.children[0] if title.children else None
    refs = [c for c in title.children if isinstance(c, nodes.reference)]
    if not (isinstance(first, nodes.Text) and str(first).strip() == suffix.strip() and refs):
        return
    ref = refs[0]
    m = re.match(r"\s*(\S+ [\d.]+)\s*(（.*）)?\s*$", ref.astext(), re.S)
    if not m:
        return
    title.remove(first)
    ref.children = []
    ref += nodes.Text(f"{m.group(1)} {suffix.strip()}{m.group(2) or ''}")


class TranslatedExecutionTableHeader(SphinxPostTransform):
    """myst-nb writes the header of the execution-statistics table ({nb-exec-table}) in English; take
    its words from the ``sphinx`` catalog (``locales/<lang>/LC_MESSAGES/sphinx.po``). After myst-nb's
    table post-transform (priority 8)."""

    default_priority = 9

    WORDS = ("Document", "Modified", "Method", "Run Time (s)", "Status")

    def run(self, **kwargs):
        if (self.app.config.language or "en") == "en":
            return
        from sphinx.locale import _

        for thead in self.document.findall(nodes.thead):
            for text in list(thead.findall(nodes.Text)):
                if str(text) in self.WORDS:
                    text.parent.replace(text, nodes.Text(_(str(text))))


# 4. The language switch -------------------------------------------------------------------------------

def _no_space_before_full_width_bracket(app: Sphinx, pagename, templatename, context, doctree):
    """sphinx-exercise writes an exercise's number as "演習 1.1 " (a trailing space) before its title:
    "演習 1.1 （行列の形）" in Japanese. No space before a full-width bracket."""
    if (app.config.language or "en") != "en" and "body" in context:
        import re

        context["body"] = re.sub(r'(<span class="caption-number">[^<]*?) +(</span>)\s*（', r"\1\2（",
                                 context["body"])


def _language_switch(app: Sphinx, pagename, templatename, context, doctree):
    lang = app.config.language or "en"
    other = "ja" if lang == "en" else "en"
    here_prefix = EDITIONS.get(lang, EDITIONS["en"])[0]
    other_prefix, label = EDITIONS[other]
    # relative path from this page to the root of the whole site (the English root)
    depth = pagename.count("/") + here_prefix.count("/")
    to_site_root = "../" * depth
    context["other_language"] = other
    context["other_language_label"] = label
    context["other_language_url"] = f"{to_site_root}{other_prefix}{pagename}.html"


def _book_css(app: Sphinx, config):
    """``tools/static/book.css``: the switch in one header row, no sideways scroll on a phone."""
    config.html_static_path = [*config.html_static_path, str(HERE / "static")]
    app.add_css_file("book.css")


# 5. Notebooks for learners and trainers -------------------------------------------------------------

def _record_page(app: Sphinx, pagename, templatename, context, doctree):
    """The pages this build writes (Sphinx writes only what changed): their notebooks are rewritten."""
    app._book_pages_written.add(pagename)


def _learner_notebooks(app: Sphinx, exception):
    if exception is not None or app.builder.name != "html":
        return
    import learner

    from sphinx.util import logging

    written = learner.write_all(app, app._book_pages_written)
    lang = app.config.language or "en"
    if lang != "en":
        sources = Path(app.outdir) / "_sources"
        for path in written:
            _translate_prompts(path, lang)
            copy = sources / "book" / path.name
            if "learner" in path.parts and copy.is_file():
                _translate_prompts(copy, lang)
    logging.getLogger(__name__).info(f"[bookext] {len(written)} learner and trainer notebooks in "
                                     f"_build/notebooks/{app.config.language or 'en'}/")


# 7. The prompts of the cells a learner edits ("# your code here"), in the edition's language ------------

#: A prompt: the comment after a placeholder the learner replaces (``= None``, ``return None``,
#: ``...``, ``pass``) or a comment line that speaks to the learner (``# your ...``).
PROMPT = __import__("re").compile(
    r"(?P<code>(?:=\s*None|return None|\.\.\.|^\s*pass)\s*#\s*)(?P<text>\S.*?)\s*$"
    r"|(?P<lead>^\s*#\s*)(?P<own>[Yy]our .+?)\s*$")


def prompts(source: str) -> list[str]:
    """The English prompts in one code cell's source."""
    out = []
    for line in source.splitlines():
        m = PROMPT.search(line)
        if m:
            out.append(m.group("text") or m.group("own"))
    return out


def translate_prompts(source: str, lang: str) -> str:
    """``source`` with each prompt replaced by its translation (``locales/<lang>/LC_MESSAGES/prompts.po``,
    read through ``lib.i18n``); code and other comments unchanged."""
    from lib import i18n

    table = i18n.catalog(lang)

    def one(line: str) -> str:
        m = PROMPT.search(line)
        if not m:
            return line
        text = m.group("text") or m.group("own")
        start, end = m.span("text") if m.group("text") else m.span("own")
        return line[:start] + table.get(text, text) + line[end:]

    return "\n".join(one(line) for line in source.split("\n"))


def _translate_prompts(path: Path, lang: str) -> None:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        if cell.cell_type == "code":
            new = translate_prompts(cell.source, lang)
            changed |= new != cell.source
            cell.source = new
    if changed:
        nbformat.write(nb, path)


def setup(app: Sphinx):
    import booksearch

    # 6. The Japanese search: the same word splitter for the index and the query (tools/booksearch.py)
    app.add_search_language(booksearch.search_language())
    _patch_myst_nb_parser()
    _keep_exercise_titles_for_gettext()
    _project_catalogs(app)
    app.add_transform(ExerciseTitlesTranslatable)
    app.add_post_transform(SolutionTitlesFromTranslatedExercises)
    app.add_post_transform(FullWidthParenthesesInExerciseTitles)
    app.add_post_transform(TranslatedExecutionTableHeader)
    app.connect("html-page-context", _language_switch)
    app.connect("config-inited", _book_css)
    app.connect("html-page-context", _no_space_before_full_width_bracket)
    app._book_pages_written = set()
    app.connect("html-page-context", _record_page)
    app.connect("build-finished", _learner_notebooks)
    return {"parallel_read_safe": False, "parallel_write_safe": True, "version": "1"}
