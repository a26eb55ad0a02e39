"""The fence: every patch of the book stack and every use of its private internals, in one module.

Jupyter Book 1 is in maintenance mode, and the gaps below will not be closed upstream. Each entry of
:data:`PATCHES` says what the patch does, which upstream file it depends on, and which test guards it.
``constraints.txt`` pins the versions these patches were written for, and
``tests/test_upstream.py`` fails in seconds, naming the patches to re-check, when an installed version
differs from its pin. After an upgrade: re-read each named upstream file, run ``make test``, then
update the pin. ``CONTRIBUTING.md`` ("The book stack and its patches") explains why each exists.

What the extension (``tools/bookext.py``) installs from here: patches 1-7 (:func:`install`). What
``tools/learner.py`` and ``tools/build.py`` call from here: the helpers of patches 9-15.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Patch:
    number: int
    what: str                 # what it does and why
    where: str                # where in this repository
    upstream: tuple[str, ...]  # the distributions (PyPI names) whose internals it relies on
    depends_on: str           # the upstream file or behaviour it relies on
    guard: str                # the test that fails when it stops working


PATCHES: tuple[Patch, ...] = (
    Patch(1, "glued values inside translated paragraphs: the translation is parsed as a small document "
             "of its own, and myst-nb finds no glue data for it; we give it the notebook's",
          "tools/upstream.py: _patch_myst_nb_parser", ("myst-nb", "sphinx"),
          "myst_nb/sphinx_.py Parser.parse; myst_nb/ext/glue/utils.py (document['nb_renderer']"
          ".renderer.nb_client.glue_data); sphinx/transforms/i18n.py (source suffix '<translated>')",
          "the strict Japanese build (-W: 'No key ... found in glue data'); "
          "tests/built/test_upstream_patches.py::test_glued_numbers_in_translated_paragraphs"),
    Patch(2, "exercise titles are not extracted for translation: in the gettext builder, leave "
             "sphinx-exercise's titles as read",
          "tools/upstream.py: _keep_exercise_titles_for_gettext", ("sphinx-exercise",),
          "sphinx_exercise/post_transforms.py ResolveTitlesInExercises.run",
          "tests/built/test_upstream_patches.py::test_exercise_titles_translated"),
    Patch(3, "exercise subtitles get a source, a line and their MyST text before Sphinx's Locale "
             "transform (priority 5 < 20), so they are extracted and replaced",
          "tools/upstream.py: ExerciseTitlesTranslatable", ("sphinx-exercise", "sphinx"),
          "sphinx_exercise/nodes.py exercise_title, exercise_subtitle; sphinx/transforms/i18n.py Locale",
          "tests/built/test_upstream_patches.py::test_exercise_titles_translated"),
    Patch(4, "the project's catalogs for the extensions' own words (演習, not 練習) are loaded first "
             "(the first catalog loaded for a domain wins; bookext is listed before sphinx_exercise)",
          "tools/upstream.py: _project_catalogs; _config.yml extensions order", ("sphinx", "sphinx-exercise"),
          "sphinx/locale/__init__.py init (catalog order); sphinx_exercise's 'exercise' domain",
          "tests/built/test_upstream_patches.py::test_exercise_titles_translated"),
    Patch(5, "a solution's title repeats its exercise's title as translated: the registry entry is "
             "pointed at the translated exercise node (priority 19 < 20)",
          "tools/upstream.py: SolutionTitlesFromTranslatedExercises", ("sphinx-exercise",),
          "sphinx_exercise/post_transforms.py (env.sphinx_exercise_registry[label]['node'])",
          "tests/built/test_upstream_patches.py::test_solution_titles_repeat_the_translated_exercise"),
    Patch(6, "full-width parentheses in Japanese exercise titles: replaces the Text nodes ' (' and ')' "
             "that sphinx-exercise writes (priority 23, after its 20-22); a solution's title in Japanese "
             "order (演習 1.1 の解答（…）, from the 'Solution to' + link nodes)",
          "tools/upstream.py: FullWidthParenthesesInExerciseTitles", ("sphinx-exercise",),
          "sphinx_exercise/post_transforms.py (title built from Text ' (' + subtitle + ')')",
          "tests/built/test_upstream_patches.py::test_japanese_exercise_titles_use_full_width_parentheses"),
    Patch(20, "no space between an exercise's number and its full-width bracket: sphinx-exercise writes "
              "the number as '演習 1.1 ' (trailing space) inside span.caption-number; the page's HTML is "
              "edited in html-page-context", "tools/upstream.py: _no_space_before_full_width_bracket",
          ("sphinx-exercise",), "sphinx_exercise/post_transforms.py (caption-number text with a trailing space)",
          "tests/built/test_upstream_patches.py::test_japanese_exercise_titles_use_full_width_parentheses"),
    Patch(7, "the execution-statistics table header in the page's language (after myst-nb's "
             "post-transform, priority 8)",
          "tools/upstream.py: TranslatedExecutionTableHeader", ("myst-nb",),
          "myst_nb/ext/execution_tables.py (header words, priority 8)",
          "tests/built/test_japanese_pages.py::test_execution_table_header_is_japanese"),
    Patch(8, "the pages an HTML build writes, recorded on Sphinx's application object",
          "tools/bookext.py: _record_page (app._book_pages_written)", ("sphinx",),
          "sphinx/application.py (a plain object we add an attribute to)",
          "tests/built/test_learner_notebooks.py (every chapter has its notebooks)"),
    Patch(9, "a node's notebook cell from its line number: myst-nb encodes lines as "
             "(cell_index + 1) * 10000 + line",
          "tools/upstream.py: cell_index_of_line (used by tools/learner.py)", ("myst-nb",),
          "myst_nb/core/nb_to_tokens.py (line encoding)",
          "tests/test_upstream.py::test_myst_nb_line_encoding; tests/built/test_learner_notebooks.py"),
    Patch(10, "code cells in the resolved doctree: myst-nb's node attributes nb_element == 'cell_code' "
              "/ 'cell_code_source' and cell_index",
          "tools/upstream.py: is_code_cell, code_source (used by tools/learner.py)", ("myst-nb",),
          "myst_nb/core/render.py (nb_element, cell_index)",
          "tests/built/test_learner_notebooks.py::test_figures_and_numbers_as_on_the_page"),
    Patch(11, "figure, section and theorem numbers from Sphinx's environment (env.toc_fignumbers, "
              "env.toc_secnumbers) and sphinx-proof's nodes by module name",
          "tools/learner.py: Writer", ("sphinx", "sphinx-proof"),
          "sphinx/environment/collectors/toctree.py; sphinx_proof/nodes.py",
          "tests/built/test_learner_notebooks.py::test_figures_and_numbers_as_on_the_page"),
    Patch(12, "the trainer notebook's outputs from the execution cache "
              "(jupyter_cache.get_cache(...).merge_match_into_notebook); a chapter missing from the "
              "cache is an error, never silently an empty notebook",
          "tools/upstream.py: executed_notebook (used by tools/learner.py)", ("jupyter-cache", "myst-nb"),
          "jupyter_cache/cache/main.py merge_match_into_notebook; myst-nb's execution_cache_path",
          "tests/built/test_learner_notebooks.py::test_trainer_notebooks_have_outputs_and_runnable_solutions"),
    Patch(13, "cell ids for new cells from nbformat's corpus", "tools/learner.py", ("nbformat",),
          "nbformat/corpus/words.py generate_corpus_id",
          "tests/built/test_learner_notebooks.py (notebooks validate)"),
    Patch(14, "the theme's download button serves the learner notebook: _sources/book/NN.ipynb is "
              "overwritten", "tools/learner.py: write_all", ("sphinx-book-theme",),
          "sphinx_book_theme header buttons (download link to _sources/)",
          "tests/built/test_learner_notebooks.py::test_download_button_offers_the_learner_notebook"),
    Patch(15, "the build calls jupyter-book's internal build_sphinx (not the CLI), with confoverrides "
              "(language, external_toc_path, paths)", "tools/build.py: _sphinx", ("jupyter-book",),
          "jupyter_book/sphinx.py build_sphinx",
          "every build (make html-en, make html-ja)"),
    Patch(16, "_toc.yml rewritten per edition with translated part captions (sphinx-external-toc "
              "inserts them after Sphinx's translation step)", "tools/build.py: _translated_toc",
          ("sphinx-external-toc",), "sphinx_external_toc/events.py (toctrees inserted after i18n)",
          "tests/browser/test_pages.py (the Japanese sidebar)"),
    Patch(17, "_config.yml replaces jupyter-book's extension list; relies on jupyter-book dropping "
              "local_extensions when extensions is given and appending its own two",
          "_config.yml sphinx.config.extensions", ("jupyter-book",),
          "jupyter_book/config.py get_final_config",
          "every build (a missing extension fails the strict build)"),
    Patch(18, "github_user: null etc., so that sphinx-book-theme does not fail on an empty repository URL",
          "_config.yml html.* / sphinx.config.html_context", ("sphinx-book-theme",),
          "sphinx_book_theme/header_buttons (repository buttons)", "every build"),
    Patch(19, "lib.MultiHeadAttention reads torch.nn.MultiheadAttention's _qkv_same_embed_dim to copy "
              "its weights", "lib/formula/mha.py", ("torch",), "torch/nn/modules/activation.py",
          "tests/test_mha.py"),
    Patch(21, "the theme's search field and colour-mode button, overridden so that each button's "
              "accessible name contains its visible text (WCAG 2.5.3)",
          "tools/templates/search-button-field.html, tools/templates/theme-switcher.html",
          ("pydata-sphinx-theme",),
          "pydata_sphinx_theme/theme/pydata_sphinx_theme/components/search-button-field.html and "
          "theme-switcher.html",
          "tests/browser/test_pages.py::test_axe_catches_the_defects_the_book_had"),
    Patch(22, "myst-nb's aria-label 'Toggle hidden content' on 'Show code cell source' removed, and "
              "sphinxcontrib-bibtex's role doc-biblioentry made listitem, in the written HTML",
          "tools/bookext.py (html-page-context)", ("myst-nb", "sphinxcontrib-bibtex"),
          "myst_nb's hide-input summary markup; sphinxcontrib-bibtex's bibliography list",
          "tests/browser/test_pages.py::test_axe_catches_the_defects_the_book_had"),
    Patch(23, "tabindex=0 for the boxes book.css makes scroll, while they scroll (as the theme does for "
              "its own); links in admonitions a darker blue (contrast 5.2:1)",
          "tools/static/book.js, tools/static/book.css", ("pydata-sphinx-theme", "sphinx-book-theme"),
          "the theme's admonition colours and its own tabindex script for scrolling boxes",
          "tests/browser/test_pages.py::test_axe_catches_the_defects_the_book_had"),
)


def patches_depending_on(distribution: str) -> list[Patch]:
    """The patches to re-check when ``distribution``'s installed version differs from its pin."""
    key = distribution.lower().replace("_", "-")
    return [p for p in PATCHES if key in p.upstream]


def install(app: Sphinx) -> None:
    """Patches 1-7, for ``tools/bookext.py``'s ``setup``."""
    _patch_myst_nb_parser()
    _keep_exercise_titles_for_gettext()
    _project_catalogs(app)
    app.add_transform(ExerciseTitlesTranslatable)
    app.add_post_transform(SolutionTitlesFromTranslatedExercises)
    app.add_post_transform(FullWidthParenthesesInExerciseTitles)
    app.add_post_transform(TranslatedExecutionTableHeader)
    app.connect("html-page-context", _no_space_before_full_width_bracket)


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

    if getattr(ResolveTitlesInExercises.run, "_book_patched", False):
        return
    original = ResolveTitlesInExercises.run

    def run(self, **kwargs):
        if self.app.builder.name == "gettext":
            return None
        return original(self, **kwargs)

    run._book_patched = True
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
    (this extension is listed before them, and the first catalog loaded for a domain wins). The
    compiled ``.mo`` files go into this build's doctree folder, for this edition's language only, so
    that two editions built side by side never write the same file and nothing is written into
    ``locales/``."""
    import polib

    lang = app.config.language or "en"
    compiled = Path(app.doctreedir) / "book-catalogs"
    for catalog in ("exercise", "proof"):
        po = ROOT / "locales" / lang / "LC_MESSAGES" / f"{catalog}.po"
        if not po.is_file():
            continue
        mo = compiled / lang / "LC_MESSAGES" / f"{catalog}.mo"
        if not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime:
            mo.parent.mkdir(parents=True, exist_ok=True)
            polib.pofile(str(po)).save_as_mofile(str(mo))
        app.add_message_catalog(catalog, str(compiled))


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
    """sphinx-exercise joins a number and a short title as "Exercise N.M (title)", with half-width
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


# 20. HTML of exercise titles -----------------------------------------------------------------------

def _no_space_before_full_width_bracket(app: Sphinx, pagename, templatename, context, doctree):
    """sphinx-exercise writes an exercise's number as "演習 1.1 " (a trailing space) before its title:
    "演習 1.1 （行列の形）" in Japanese. No space before a full-width bracket."""
    if (app.config.language or "en") != "en" and "body" in context:
        import re

        context["body"] = re.sub(r'(<span class="caption-number">[^<]*?) +(</span>)\s*（', r"\1\2（",
                                 context["body"])


# 9-12. What tools/learner.py reads from myst-nb and jupyter-cache -----------------------------------

#: myst-nb gives the nodes of notebook cell ``i`` the line numbers ``(i + 1) * 10000 + line``
#: (``myst_nb/core/nb_to_tokens.py``).
MYST_NB_LINES_PER_CELL = 10000


def cell_index_of_line(line: int | None, source_map: list[int] | None = None) -> int | None:
    """The notebook cell a resolved node came from, or None for a line that is not inside a cell.
    An .ipynb chapter's lines are myst-nb's (cell + 1) * 10000 + line; a MyST Markdown notebook's
    (``source_map``, the first line of each cell in the file) are the file's own."""
    if source_map:
        import bisect

        return (bisect.bisect_right(source_map, line) - 1) if line and line >= source_map[0] else None
    if not line or line < MYST_NB_LINES_PER_CELL:
        return None
    return line // MYST_NB_LINES_PER_CELL - 1


def is_code_cell(node) -> bool:
    return isinstance(node, nodes.container) and node.get("nb_element") == "cell_code"


def code_source(container) -> str:
    for c in container.findall(nodes.literal_block):
        if c.parent.get("nb_element") == "cell_code_source":
            return c.astext()
    return ""


class NotExecuted(RuntimeError):
    """A chapter the execution cache does not hold: its trainer notebook would have no outputs."""


def executed_notebook(app, path, source_nb):
    """The source notebook merged with its cached outputs (jupyter-cache). Raises
    :class:`NotExecuted` when the cache has no match: the trainer notebook must never lose its
    outputs silently."""
    from jupyter_cache import get_cache

    cache = get_cache(app.env.mystnb_config.execution_cache_path)
    try:
        _, merged = cache.merge_match_into_notebook(copy.deepcopy(source_nb))
    except KeyError as e:  # jupyter-cache: "No cache record found" for a notebook it has not executed
        raise NotExecuted(f"{path}: not in the execution cache ({e}); run the build again") from e
    return merged
