"""The book's own Sphinx extension: what the Japanese edition and the learner notebooks need.

Loaded by ``_config.yml`` (listed in ``sphinx.config.extensions``, before sphinx_exercise, and in
``sphinx.local_extensions`` for its path). What it does:

1-3. The patches of the stack's gaps (glued values in translated paragraphs, translatable exercise
   titles, the project's catalogs for the extensions' own words, solution titles, full-width
   parentheses, the execution table's header). They live, with every other use of the stack's
   private internals, in ``tools/upstream.py`` (the fence: what each patch does, which upstream file it
   depends on, which test guards it); ``CONTRIBUTING.md`` says why each exists.
4. The language switch: every page gets ``other_language_url`` and ``other_language_label`` for the
   template ``tools/templates/language-switch.html`` (a link to the same page in the other edition).
5. At the end of an HTML build, the learner's and the trainer's notebook of every chapter
   (``tools/learner.py``), from the resolved documents of that edition.
6. The Japanese search index and the search page split words the same way, with the book's terms as
   a dictionary (``tools/booksearch.py``).
7. In the Japanese notebooks, the prompts of the cells a learner edits ("# your code here") in
   Japanese (``locales/<lang>/LC_MESSAGES/prompts.po``).
8. Accessibility (WCAG 2.1 A and AA; ``tests/browser/test_pages.py`` runs axe-core on every page):
   two fixes of the stack's HTML, at build time (:func:`_accessible_markup`); ``tools/static/book.css``
   and ``tools/static/book.js`` (link contrast, keyboard access to the boxes that scroll) and the two
   theme components overridden in ``tools/templates`` (the colour-mode and search buttons) do the rest.
"""
from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: The editions: language code -> (folder under the English HTML root, label shown in the switch).
EDITIONS = {"en": ("", "English"), "ja": ("ja/", "日本語")}


# 4. The language switch -------------------------------------------------------------------------------

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
    """``tools/static/book.css``: the switch in one header row, no sideways scroll on a phone, link
    contrast; ``tools/static/book.js``: keyboard access to the boxes that scroll (8)."""
    config.html_static_path = [*config.html_static_path, str(HERE / "static")]
    app.add_css_file("book.css")
    app.add_js_file("book.js", loading_method="defer")


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
        for path, copy in written:
            _translate_prompts(path, lang)
            if copy is not None:
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


#: What a Japanese page declared ``pending`` in locales/ja/status.yml says at its top (CONTRIBUTING.md,
#: "If you cannot translate"); tests/browser/test_pages.py looks for its class.
PENDING_NOTICE = ("この章の日本語訳は更新中です。英語版で書き換えられた段落は、翻訳が済むまで英語のまま"
                  "表示されます。")


def _pending_pages(app: Sphinx) -> set:
    import yaml

    path = Path(__file__).resolve().parents[1] / "locales" / (app.config.language or "en") / "status.yml"
    if not path.is_file():
        return set()
    return set((yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("pending") or [])


def _pending_notice(app: Sphinx, doctree):
    """A page whose translation is pending says so at its top, below its title."""
    if (app.config.language or "en") == "en" or app.env.docname not in _pending_pages(app):
        return
    from docutils import nodes

    note = nodes.note("", nodes.paragraph("", PENDING_NOTICE), classes=["translation-pending"])
    top = next(iter(doctree.findall(nodes.section)), None) or doctree
    top.insert(1 if top.children and isinstance(top[0], nodes.title) else 0, note)


# 8. Accessibility: the stack's markup that fails WCAG 2.1, fixed as each page is written ----------------

#: (what the stack writes, what the page gets instead, why). Each is a plain string replacement in the
#: page body (``context["body"]``), so that a change upstream makes it a no-op, never a broken page;
#: the browser test's axe run then names the rule again.
ACCESSIBLE_MARKUP = (
    # myst-nb (sphinx_.py visit_HideCellInput) names the summary of a hidden code cell "Toggle hidden
    # content", while it shows "Show code cell source" (WCAG 2.5.3 Label in Name: a speech user says
    # what they see). Without the aria-label the summary's name is its visible text.
    ('<summary aria-label="Toggle hidden content">', "<summary>", "label-content-name-mismatch"),
    # docutils' HTML5 writer (visit_citation, sphinxcontrib-bibtex's bibliography) puts role
    # "doc-biblioentry" on each entry of a role="list": that role is deprecated in DPUB-ARIA 1.1 and
    # is no listitem, so the list has no valid item (axe: aria-required-children, critical).
    ('role="doc-biblioentry"', 'role="listitem"', "aria-required-children, aria-deprecated-role"),
)


def _accessible_markup(app: Sphinx, pagename, templatename, context, doctree):
    body = context.get("body")
    if not isinstance(body, str):
        return
    for old, new, _rule in ACCESSIBLE_MARKUP:
        body = body.replace(old, new)
    context["body"] = body


def setup(app: Sphinx):
    import booksearch

    # 6. The Japanese search: the same word splitter for the index and the query (tools/booksearch.py)
    app.add_search_language(booksearch.search_language())
    import upstream

    upstream.install(app)          # patches 1-7 and 20 (tools/upstream.py)
    app.connect("html-page-context", _language_switch)
    app.connect("html-page-context", _accessible_markup)
    app.connect("doctree-read", _pending_notice)
    app.connect("config-inited", _book_css)
    app._book_pages_written = set()
    app.connect("html-page-context", _record_page)
    app.connect("build-finished", _learner_notebooks)
    return {"parallel_read_safe": False, "parallel_write_safe": True, "version": "1"}
