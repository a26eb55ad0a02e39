"""The book's own Sphinx extension: what the Japanese edition and the learner notebooks need.

Loaded by ``_config.yml`` (listed in ``sphinx.config.extensions``, before sphinx_exercise, and in
``sphinx.local_extensions`` for its path). It does three things:

1-3. The patches of the stack's gaps (glued values in translated paragraphs, translatable exercise
   titles, the project's catalogs for the extensions' own words, solution titles, full-width
   parentheses, the execution table's header). They live, with every other use of the stack's
   private internals, in ``tools/upstream.py`` (the fence: what each patch does, which upstream file it
   depends on, which test guards it); ``CONTRIBUTING.md`` says why each exists.
4. The language switch: every page gets ``other_language_url`` and ``other_language_label`` for the
   template ``tools/templates/language-switch.html`` (a link to the same page in the other edition).
5. At the end of an HTML build, the learner's and the trainer's notebook of every chapter
   (``tools/learner.py``), from the resolved documents of that edition.
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
    logging.getLogger(__name__).info(f"[bookext] {len(written)} learner and trainer notebooks in "
                                     f"_build/notebooks/{app.config.language or 'en'}/")


def setup(app: Sphinx):
    import upstream

    upstream.install(app)
    app.connect("html-page-context", _language_switch)
    app._book_pages_written = set()
    app.connect("html-page-context", _record_page)
    app.connect("build-finished", _learner_notebooks)
    return {"parallel_read_safe": False, "parallel_write_safe": True, "version": "1"}
