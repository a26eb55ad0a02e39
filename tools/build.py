"""Build every face of the book from the one English source.

    python tools/build.py html en        English HTML          -> _build/html
    python tools/build.py html ja        Japanese HTML         -> _build/ja/html, copied to _build/html/ja
    python tools/build.py site           the entry page        -> _build/html/index.html (opens the
                                         reader's language: the last choice, else the browser's)
    python tools/build.py gettext        messages to translate -> _build/gettext/**/*.pot
    python tools/build.py trainer en|ja  the trainer's quiz     -> _build/trainer/<lang>/quiz.html (the
                                         learner handout) and quiz_key.html (the answer key), and
                                         each as a PDF (quiz.pdf, quiz_key.pdf) when Chromium is there

Every HTML build is strict (warnings are errors, nitpicky references, keep going to list them all;
the pages' claims raise, ``BOOK_CLAIMS=strict``, see ``lib/infra/claims.py``),
like ``jupyter-book build . -W -n --keep-going``; it calls jupyter-book's own ``build_sphinx`` with the
book's ``_config.yml``, plus a few settings per edition:

- English: as ``jupyter-book build .`` would, output in ``_build/html``.
- Japanese: ``language: ja``, the catalogs in ``locales/``, the settings in ``locales/ja/conf.yml``, a
  table of contents whose part captions come from the catalogs, and its own execution cache
  (``_build/ja/.jupyter_cache``): the notebooks run with ``BOOK_LANG=ja``, so figures and self-check
  verdicts are drawn in Japanese (``lib.i18n.tr``).

The execution cache re-runs a notebook only when its own code changes. A chapter's results also depend
on ``lib/``, ``requirements.txt`` and, in Japanese, the translations of the strings that code shows;
when any of these changed since the last build, that edition's cache and doctrees are cleared first.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
LOCALES = ROOT / "locales"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import messages  # noqa: E402  (tools/messages.py, a leaf: the strings code shows)


def edition_dirs(lang: str) -> dict[str, Path]:
    """Where an edition's build lives: html, doctrees, execution cache, deps hash."""
    base = BUILD if lang == "en" else BUILD / lang
    return {"html": base / "html", "doctrees": base / ".doctrees", "cache": base / ".jupyter_cache",
            "hash": base / ".deps-hash", "base": base}


def deps_hash(lang: str) -> str:
    h = hashlib.sha256()
    for p in sorted((ROOT / "lib").rglob("*.py")) + [ROOT / "requirements.txt", ROOT / "constraints.txt"]:
        h.update(p.read_bytes())
    if lang != "en":
        from lib import i18n

        i18n._catalogs.clear()
        cat = i18n.catalog(lang)
        for msg in sorted(messages.code_messages()):
            h.update(f"{msg}\0{cat.get(msg, '')}\0".encode())
    return h.hexdigest()[:16]


def _clear_stale_cache(lang: str) -> str:
    d = edition_dirs(lang)
    new = deps_hash(lang)
    old = d["hash"].read_text().strip() if d["hash"].is_file() else None
    if old != new and (d["cache"].exists() or d["doctrees"].exists()):
        # Both go: with the cache alone cleared, Sphinx would see no changed document, execute
        # nothing and keep the old outputs (and the trainer's notebooks, which take their outputs
        # from the cache, would have none).
        print(f"[{lang}] lib/, requirements.txt or code strings' translations changed since the last "
              "build: clearing the execution cache and the doctrees", flush=True)
        shutil.rmtree(d["cache"], ignore_errors=True)
        shutil.rmtree(d["doctrees"], ignore_errors=True)
    return new


def _translated_toc(lang: str) -> Path:
    """``_toc.yml`` with its part captions translated from the catalogs (the extension cannot:
    sphinx-external-toc inserts the captions after Sphinx's translation step)."""
    from lib import i18n

    i18n._catalogs.clear()
    cat = i18n.catalog(lang)
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    for part in toc.get("parts", []):
        if "caption" in part:
            part["caption"] = cat.get(part["caption"], part["caption"])
    out = edition_dirs(lang)["base"] / "_toc.yml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(toc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return out


def _sphinx(builder: str, outdir: Path, doctrees: Path, overrides: dict) -> int:
    from jupyter_book.sphinx import build_sphinx

    os.chdir(ROOT)
    # The pages' claims (lib.claims) stop the build when they fail; a learner's notebook never stops.
    os.environ.setdefault("BOOK_CLAIMS", "strict")
    # lib.explorable: the pages' explorable figures carry their HTML form (the notebooks do not)
    os.environ["BOOK_EXPLORABLE_HTML"] = "1"
    result = build_sphinx(ROOT, outdir, noconfig=True, path_config=str(ROOT / "_config.yml"),
                          confoverrides=overrides, doctreedir=doctrees, builder=builder,
                          warningiserror=True, keep_going=True)
    if isinstance(result, Exception):
        print(f"build failed: {result}", file=sys.stderr)
        return 1
    return int(result or 0)


def _bib_entries(text: str):
    """``(type, key, [(field, raw value)], start, end)`` for each entry of a BibTeX text; a raw value is
    kept exactly as written (``{...}`` with nested braces, ``"..."`` or a bare word such as ``oct``)."""
    import re

    pos = 0
    head = re.compile(r"@(?P<type>\w+)\s*\{\s*(?P<key>[^,\s]+)\s*,")
    while (m := head.search(text, pos)):
        i, fields = m.end(), []
        while True:
            while i < len(text) and text[i] in " \t\r\n,":
                i += 1
            if text[i] == "}":
                break
            eq = text.index("=", i)
            name = text[i:eq].strip().lower()
            j = eq + 1
            while text[j] in " \t\r\n":
                j += 1
            if text[j] in "{\"":
                close, depth, k = {"{": "}", '"': '"'}[text[j]], 0, j
                while True:
                    c = text[k]
                    if text[j] == "{":
                        depth += {"{": 1, "}": -1}.get(c, 0)
                        if depth == 0:
                            break
                    elif c == close and k > j:
                        break
                    k += 1
                end = k + 1
            else:
                end = j
                while text[end] not in ",}\n":
                    end += 1
            fields.append((name, text[j:end].strip()))
            i = end
        yield m.group("type"), m.group("key"), fields, m.start(), i + 1
        pos = i + 1


def edition_bib(lang: str) -> Path:
    """The bibliography of edition ``lang``: ``book/references.bib`` with each entry's ``note`` (the
    authors' reading notes, in English: what was read, quoted from the source) left out, except an
    arXiv identifier it starts with, and the fields ``locales/<lang>/references.yml`` gives for some
    entries (the seed article's title, publisher and note) put in. The commit each source was read at
    stays in ``howpublished``. Written to ``_build/bib/references.<lang>.bib``."""
    import re

    text = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    overlay_path = LOCALES / lang / "references.yml"
    overlay = (yaml.safe_load(overlay_path.read_text(encoding="utf-8")) if overlay_path.is_file() else None) or {}
    out = []
    for kind, key, fields, _start, _end in _bib_entries(text):
        given = {k.lower(): v for k, v in (overlay.get(key) or {}).items()}
        kept = []
        for name, raw in fields:
            if name in given:
                continue
            if name == "note":
                arxiv = re.match(r"\{arXiv:\d{4}\.\d{4,5}", raw)
                if not arxiv:
                    continue
                raw = arxiv.group(0) + "}"
            kept.append((name, raw))
        kept += [(name, "{" + str(value) + "}") for name, value in given.items()]
        out.append(f"@{kind}{{{key},\n" + ",\n".join(f"  {n:<12} = {v}" for n, v in kept) + "\n}\n")
    path = BUILD / "bib" / f"references.{lang}.bib"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out), encoding="utf-8")
    return path


def build_html(lang: str) -> int:
    d = edition_dirs(lang)
    d["base"].mkdir(parents=True, exist_ok=True)
    new_hash = _clear_stale_cache(lang)
    overrides = {"external_toc_path": str(ROOT / "_toc.yml"), "nitpicky": True, "latex_individualpages": False}
    if lang != "en":
        os.environ["BOOK_LANG"] = lang
        conf = yaml.safe_load((LOCALES / lang / "conf.yml").read_text(encoding="utf-8")) or {}
        overrides.update(conf)
        overrides.update({"language": lang, "locale_dirs": [str(LOCALES)], "gettext_compact": False,
                          "bibtex_bibfiles": [str(edition_bib(lang))],
                          "external_toc_path": str(_translated_toc(lang)),
                          "nb_execution_cache_path": str(d["cache"])})
    status = _sphinx("html", d["html"], d["doctrees"], overrides)
    if status == 0:
        d["hash"].write_text(new_hash + "\n")
        _remove_orphan_pages(d["html"])
        if lang != "en":
            target = edition_dirs("en")["html"] / lang
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(d["html"], target)
        write_entry_page()
    return status


def _remove_orphan_pages(html: Path) -> None:
    """Sphinx never deletes an output page: a renamed or removed chapter would stay in the site (and
    in the browser test) as a stale page. Remove every page of book/ whose source is gone."""
    sources = {p.stem for p in (ROOT / "book").iterdir() if p.suffix == ".md"}
    for page in sorted((html / "book").glob("*.html")):
        if page.stem not in sources:
            print(f"build: removing {page.relative_to(BUILD)} (its source is gone)", flush=True)
            page.unlink()
            for extra in (html / "_sources" / "book").glob(page.stem + ".*"):
                extra.unlink()


def build_gettext() -> int:
    en = edition_dirs("en")
    new_hash = _clear_stale_cache("en")
    out = BUILD / "gettext"
    status = _sphinx("gettext", out, out / ".doctrees", {
        "external_toc_path": str(ROOT / "_toc.yml"), "latex_individualpages": False,
        "gettext_compact": False, "gettext_uuid": False, "gettext_location": False,
        "gettext_additional_targets": [],
        "nb_execution_cache_path": str(en["cache"]),   # reuse the English executions
        "nb_remove_code_outputs": True,                 # outputs are not prose: lib.i18n translates them
    })
    if status == 0:
        en["hash"].parent.mkdir(parents=True, exist_ok=True)
        en["hash"].write_text(new_hash + "\n")
        # The templates' words (sphinx.pot) are translated in the hand-written sphinx.po, next to
        # Sphinx's and the theme's own words that no .pot lists (tests/built/test_japanese_pages.py
        # checks the built pages); sphinx-intl must not mark those entries obsolete.
        (out / "sphinx.pot").unlink(missing_ok=True)
        # The strings code shows (every tr("...")) join their page's .pot (lib's in lib.pot).
        messages.add_code_messages()
        status = _trainer_sphinx("gettext", "en", out / "trainer", out / ".doctrees-trainer", [])
    return status


ENTRY_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Why attention divides by √d_k / なぜアテンションは √d_k で割るのか</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<script>
// Open the reader's edition: the last one chosen on a language link, else the browser's language.
(function () {{
  var pages = {{"en": "{en}", "ja": "{ja}"}};
  var lang = null;
  try {{ lang = window.localStorage.getItem("book-language"); }} catch (e) {{}}
  if (!pages[lang]) {{
    var prefs = navigator.languages || [navigator.language || "en"];
    lang = "en";
    for (var i = 0; i < prefs.length; i++) {{
      var code = String(prefs[i]).toLowerCase().slice(0, 2);
      if (pages[code]) {{ lang = code; break; }}
    }}
  }}
  window.location.replace(pages[lang]);
}})();
</script>
</head>
<body>
<p><a href="{en}" onclick="try{{localStorage.setItem('book-language','en')}}catch(e){{}}">English edition</a></p>
<p lang="ja"><a href="{ja}" onclick="try{{localStorage.setItem('book-language','ja')}}catch(e){{}}">日本語版</a></p>
</body>
</html>
"""


def write_entry_page() -> None:
    root = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))["root"]
    html = edition_dirs("en")["html"]
    html.mkdir(parents=True, exist_ok=True)
    (html / "index.html").write_text(ENTRY_PAGE.format(en=f"{root}.html", ja=f"ja/{root}.html"),
                                     encoding="utf-8")


TRAINER_SRC = ROOT / "book" / "trainer"


def _trainer_sphinx(builder: str, lang: str, outdir: Path, doctrees: Path, tags: list[str]) -> int:
    """One small Sphinx project of its own for the trainer's pages (``book/trainer/``), outside the
    book: not in its table of contents, its search index or its learner notebooks. Plain MyST, math
    served offline; the Japanese text comes from ``locales/ja/LC_MESSAGES/trainer/*.po``."""
    from sphinx.application import Sphinx

    conf = {
        "project": "Why attention divides by √d_k", "root_doc": "quiz",
        "extensions": ["myst_parser", "sphinx-mathjax-offline"], "source_suffix": {".md": "markdown"},
        "myst_enable_extensions": ["amsmath", "dollarmath", "colon_fence"],
        "html_theme": "alabaster", "html_theme_options": {"nosidebar": True},
        "html_show_sphinx": False, "html_show_copyright": False, "html_show_sourcelink": False,
        "html_copy_source": False, "html_title": "", "gettext_compact": False,
        "gettext_uuid": False, "gettext_location": False, "language": lang,
    }
    if lang != "en":
        # Sphinx looks a page's catalog up by its name (quiz.po); the catalogs live with the book's,
        # under trainer/, so copy them to a locale folder of this project.
        loc = outdir.parent / f".locale-{builder}"
        shutil.rmtree(loc, ignore_errors=True)
        target = loc / lang / "LC_MESSAGES"
        target.mkdir(parents=True)
        for po in (LOCALES / lang / "LC_MESSAGES" / "trainer").glob("*.po"):
            shutil.copy(po, target / po.name)
        conf["locale_dirs"] = [str(loc)]
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    with patch_docutils(None), docutils_namespace():   # as sphinx-build: one registry per build
        app = Sphinx(str(TRAINER_SRC), None, str(outdir), str(doctrees), builder, confoverrides=conf,
                     status=None, warningiserror=True, keep_going=True, tags=tags, freshenv=True)
        app.build()
        return app.statuscode


#: The Japanese handout's font, served with the pages and embedded in their PDFs, so that they show
#: Japanese on a machine without a Japanese system font: IPAexGothic, from matplotlib-fontja (a
#: dependency of the book already, for the figures; IPA Font License, its text copied along).
FONT_CSS = """/* IPAexGothic, served with the page (no system font needed); see fonts/IPA_Font_License_Agreement_v1.0.txt */
@font-face { font-family: "IPAexGothic"; src: url("fonts/ipaexg.ttf") format("truetype"); }
body, div.body, div.body h1, div.body h2, div.body h3, div.body h4, div.body p, div.body li,
div.body td, div.body th, div.admonition p.admonition-title { font-family: "IPAexGothic", sans-serif !important; }
"""


def _add_font(out: Path) -> None:
    """Copy IPAexGothic and its licence into ``out/_static/fonts`` and use it in ``custom.css``."""
    import matplotlib_fontja

    fonts = Path(matplotlib_fontja.__file__).parent / "fonts"
    target = out / "_static" / "fonts"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("ipaexg.ttf", "IPA_Font_License_Agreement_v1.0.txt"):
        shutil.copy(fonts / name, target / name)
    (out / "_static" / "custom.css").write_text(FONT_CSS, encoding="utf-8")


def find_chromium() -> str | None:
    """The Chromium the PDFs and the browser test use: ``$CHROMIUM``, else ``chromium`` on the PATH."""
    for candidate in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def print_pdfs(out: Path, names=("quiz", "quiz_key")) -> list[Path]:
    """Print ``out/<name>.html`` to ``out/<name>.pdf`` in headless Chromium: A4, 15 mm margins, no header
    or footer, after MathJax has typeset the page, with no request leaving the machine. Chromium
    embeds the fonts it draws with. Returns the PDFs written; none (and says so) without Chromium."""
    exe = find_chromium()
    if exe is None:
        print("trainer: Chromium not found, so no PDF was written; print the HTML pages from a browser "
              "(no header or footer), or install Chromium and run make trainer again", file=sys.stderr)
        return []
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, chromium_sandbox=False,
                                     args=["--disable-gpu", "--no-first-run"])
        try:
            for name in names:
                page = browser.new_page()
                page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                           else route.abort())
                page.goto((out / f"{name}.html").as_uri())
                page.wait_for_function("() => !document.querySelector('.MathJax_Preview, mjx-merror') && "
                                       "document.querySelectorAll('mjx-container').length > 10",
                                       timeout=60_000)
                page.evaluate("document.fonts.ready")
                pdf = page.pdf(format="A4", display_header_footer=False, print_background=True,
                               margin={k: "15mm" for k in ("top", "bottom", "left", "right")})
                (out / f"{name}.pdf").write_bytes(pdf)
                written.append(out / f"{name}.pdf")
                page.close()
        finally:
            browser.close()
    return written


def build_trainer(lang: str, out: Path | None = None, pdf: bool = True) -> int:
    """The quiz handout (no answers) and its answer key, from the one source book/trainer/quiz.md:
    the key is the same page built with the tag ``key``, which shows its ``{only} key`` blocks. The
    Japanese pages carry their own font. With ``pdf``, each page is also printed to PDF."""
    out = out or BUILD / "trainer" / lang
    work = out.parent / f".work-{lang}"
    status = _trainer_sphinx("html", lang, out, work / "doctrees-handout", [])
    if status == 0:
        status = _trainer_sphinx("html", lang, work / "key", work / "doctrees-key", ["key"])
    if status == 0:
        shutil.copy(work / "key" / "quiz.html", out / "quiz_key.html")
    for extra in ("search.html", "genindex.html", "searchindex.js", "objects.inv"):
        (out / extra).unlink(missing_ok=True)
    if status == 0 and lang == "ja":
        _add_font(out)
    if status == 0 and pdf:
        for path in print_pdfs(out):
            print(f"trainer: wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return status


def main(argv: list[str]) -> int:
    if argv[:1] == ["trainer"] and len(argv) == 2 and argv[1] in ("en", "ja"):
        return build_trainer(argv[1])
    if argv[:1] == ["html"] and len(argv) == 2 and argv[1] in ("en", "ja"):
        return build_html(argv[1])
    if argv == ["gettext"]:
        return build_gettext()
    if argv == ["site"]:
        write_entry_page()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
