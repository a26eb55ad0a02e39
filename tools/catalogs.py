"""The translation workflow: refresh the catalogs from the English, and check them.

    python tools/catalogs.py update        refresh locales/<lang>/LC_MESSAGES/**/*.po from the English
                                       (``make translations``): new paragraphs appear untranslated,
                                       changed ones become fuzzy (the build shows the English until
                                       someone retranslates them and removes the fuzzy flag)
    python tools/catalogs.py check         the checker run by ``make test`` (see below); prints the
                                       progress of every page
    python tools/catalogs.py todo PAGE     the untranslated and fuzzy messages of one page, e.g.
                                       ``todo book/softmax_saturation`` (or ``lib``)
    python tools/catalogs.py pending PAGE  for a contributor who cannot translate: move a finished page
                                       whose English changed to ``pending`` in status.yml (its Japanese
                                       page says so at the top and shows the changed paragraphs in English)
    python tools/catalogs.py finish PAGE   back to ``finished`` once it is 100 % translated again
    python tools/catalogs.py comments      refresh only ``comments.po``, the comments of the book's code
                                       (``tools/comments.py``; ``update`` runs it too)

One catalog per page (``book/formula.po`` ...), plus ``lib.po`` for the messages lib shows (self-check
verdicts), plus hand-written catalogs for the extensions' own words (``exercise.po``, ``proof.po``,
``sphinx.po``). A page's catalog holds its prose (extracted by Sphinx's gettext builder) and the strings
its code shows in figures and widgets (every ``tr("...")`` of its code cells, marked ``#. code``).

The checker fails on:
- a catalog older than the English (a message of the English missing from it, or a message it still
  translates that the English no longer has): run ``make translations``;
- a fuzzy entry (an English edit that is not retranslated yet), except on a page declared ``pending``;
- a translation that drops or alters math (``$...$``, ``$$...$$``), a glue key and its format, a
  reference target (``{ref}``, ``{numref}``, ``{doc}``, ``{eq}``, ``{term}``, ``{cite}``, ``{prf:ref}``),
  inline code, a link target, or a ``{field}`` of a code message;
- a display-math block whose translation is not identical (Sphinx would render it empty);
- unparsed emphasis: ``**`` or ``*`` left as literal characters when the translation is rendered
  (CommonMark does not close ``**...。**`` before a letter: put the 。 outside, or add a space);
- a page declared finished in ``locales/<lang>/status.yml`` that is below 100 %; a page declared
  both finished and pending, or pending but complete (``finish`` it).

``pending`` is the path for a contributor who cannot translate: ``make translations``, then
``tools/catalogs.py pending PAGE``; ``make test`` passes, the check lists the page as pending, and the
Japanese edition's maintainer translates it and runs ``finish`` (CONTRIBUTING.md, "If you cannot
translate").
"""
from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import polib
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))
import build  # noqa: E402  (tools/build.py; it does not import this module)
from messages import CODE_FLAG, POT, code_messages_by_catalog, tr_calls  # noqa: E402,F401
LOCALES = ROOT / "locales"
LANGS = ("ja",)
HAND_WRITTEN = {"exercise", "proof", "sphinx"}


def update() -> int:
    status = build.build_gettext()          # the .pots, with the strings code shows (tools/messages.py)
    if status:
        return status
    for lang in LANGS:
        subprocess.run([sys.executable, "-m", "sphinx_intl", "update", "-p", str(POT), "-d", str(LOCALES),
                        "-l", lang, "-w", "0"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        # sphinx-intl keeps messages the English no longer has as obsolete (#~) entries: drop them, so
        # the catalogs hold exactly what the English says now
        for po_path in (LOCALES / lang / "LC_MESSAGES").rglob("*.po"):
            if po_path.stem in HAND_WRITTEN and po_path.parent.name == "LC_MESSAGES":
                continue
            po = polib.pofile(str(po_path), wrapwidth=0)
            for e in [e for e in po if e.obsolete]:
                po.remove(e)
            # sphinx-intl leaves an existing entry's extracted comment as it was: copy the .pot's, so an
            # entry that code came to show (or stopped showing) carries the code flag as the .pot does
            pot_path = POT / po_path.relative_to(LOCALES / lang / "LC_MESSAGES").with_suffix(".pot")
            if pot_path.is_file():
                flags = {e.msgid: e.comment for e in polib.pofile(str(pot_path))}
                for e in po:
                    if e.msgid in flags:
                        e.comment = flags[e.msgid]
            po.save(str(po_path))
    update_comments()
    print(check(verbose=False))
    return 0


def update_comments() -> int:
    """``comments.po`` follows the comments of the book's code (tools/comments.py); the page catalogs
    are not touched."""
    import comments

    for lang in LANGS:
        print(f"{lang}/{comments.CATALOG_NAME}: {comments.update_catalog(lang)}")
    return 0


def comments_failures() -> list[str]:
    """The comments catalog's problems: out of date, untranslated, fuzzy (tools/comments.py)."""
    import comments

    return [f"{lang}/{p}" for lang in LANGS for p in comments.problems(lang)]


# --- the checker ---------------------------------------------------------------------------------------------

ROLE = re.compile(r"\{([a-z:]+)\}`([^`]*)`")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+?\$", re.S)
CODE = re.compile(r"(?<![`}])`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FIELD = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)(?:[:!][^{}]*)?\}(?!\})")
TARGET_ROLES = {"ref", "numref", "doc", "eq", "term", "cite", "prf:ref", "cite:p", "cite:t"}


def _targets(text: str) -> Counter:
    out = Counter()
    for role, content in ROLE.findall(text):
        if role.startswith("glue"):
            out[f"glue {role} {content}"] += 1
        elif role in TARGET_ROLES:
            m = re.search(r"<([^<>]+)>\s*$", content)
            target = (m.group(1) if m else content).strip()
            if role == "term":
                target = target.lower()
            if role.startswith("cite"):
                for key in target.split(","):
                    out[f"cite {key.strip()}"] += 1
            else:
                out[f"{role} {target}"] += 1
        else:
            out[f"role {role} {content}"] += 1
    return out


def _math_key(math: str) -> str:
    """Math as the checker compares it: the words inside ``\\text{...}`` are prose, which a translation
    translates ($\\sqrt{\\text{number of keys}}$ -> $\\sqrt{\\text{キーの個数}}$); all else must be identical."""
    return re.sub(r"\\text\{[^{}]*\}", r"\\text{}", math.strip())


def _plain(text: str) -> str:
    return CODE.sub("", MATH.sub("", ROLE.sub("", text)))


def _is_display_math(msgid: str) -> bool:
    """A display-math block: its message is the LaTeX between newlines (prose never starts with one)."""
    return msgid.startswith("\n")


def needs_translation(msgid: str) -> bool:
    """False for a message with nothing to translate (only math, code, references, numbers)."""
    if _is_display_math(msgid):   # never translated (see problems)
        return False
    return bool(re.search(r"[A-Za-z]{2,}", _plain(LINK.sub("]", msgid))))


def problems(entry: polib.POEntry) -> list[str]:
    src, dst = entry.msgid, entry.msgstr
    out = []
    if _is_display_math(src) and dst not in ("", src):
        # Sphinx inserts a translated display-math block as reST, which MyST renders as an empty
        # "\[::\]" on the page
        out.append("display math translated (leave it empty or identical: it would render empty)")
    if Counter(_math_key(m) for m in MATH.findall(src)) != Counter(_math_key(m) for m in MATH.findall(dst)):
        out.append("math differs")
    if _targets(src) != _targets(dst):
        missing = _targets(src) - _targets(dst)
        extra = _targets(dst) - _targets(src)
        out.append(f"references differ (missing {sorted(missing)}, extra {sorted(extra)})")
    if Counter(CODE.findall(ROLE.sub("", src))) != Counter(CODE.findall(ROLE.sub("", dst))):
        out.append("inline code differs")
    if Counter(LINK.findall(src)) != Counter(LINK.findall(dst)):
        out.append("link targets differ")
    if CODE_FLAG in (entry.comment or "").split() and set(FIELD.findall(src)) != set(FIELD.findall(dst)):
        out.append("{fields} differ")
    if _unparsed_emphasis(dst):
        out.append("unparsed emphasis (** or * left in the rendered text)")
    return out


def _unparsed_emphasis(text: str) -> bool:
    from markdown_it import MarkdownIt

    body = CODE.sub("code", MATH.sub("math", ROLE.sub("role", text)))
    html = MarkdownIt("commonmark").render(body)
    return bool(re.search(r"\*\*|(?<![\w\\])\*(?=\S)", re.sub(r"<[^>]+>", "", html)))


def _domain(po_path: Path, lang: str) -> str:
    return po_path.relative_to(LOCALES / lang / "LC_MESSAGES").with_suffix("").as_posix()


def check(verbose: bool = True) -> str:
    """Run every check; return the progress table, raise SystemExit(1) on any failure."""
    failures: list[str] = []
    lines, notes = [], []
    for lang in LANGS:
        status = yaml.safe_load((LOCALES / lang / "status.yml").read_text(encoding="utf-8")) or {}
        finished = set(status.get("finished") or [])
        pending = set(status.get("pending") or [])
        for page in sorted(finished & pending):
            failures.append(f"{lang}/{page}: declared both finished and pending in status.yml")
        pots = {p.relative_to(POT).with_suffix("").as_posix(): p for p in POT.rglob("*.pot")}
        if not pots:
            raise SystemExit("no English messages in _build/gettext: run `make translations` (or "
                             "`python tools/build.py gettext`) first")
        lines.append(f"{'page':32s} {'translated':>12s} {'fuzzy':>6s}  status   ({lang})")
        for domain, pot_path in sorted(pots.items()):
            po_path = LOCALES / lang / "LC_MESSAGES" / f"{domain}.po"
            if not po_path.is_file():
                failures.append(f"{lang}/{domain}: no catalog; run `make translations`")
                continue
            pot, po = polib.pofile(str(pot_path)), polib.pofile(str(po_path))
            english = {e.msgid for e in pot if e.msgid}
            active = [e for e in po if e.msgid and not e.obsolete]
            have = {e.msgid for e in active}
            if english - have or have - english:
                failures.append(f"{lang}/{domain}: catalog older than the English ({len(english - have)} new, "
                                f"{len(have - english)} gone); run `make translations`")
            todo = [e for e in active if needs_translation(e.msgid)]
            done = [e for e in todo if e.msgstr and not e.fuzzy]
            fuzzy = [e for e in active if e.fuzzy]
            for e in ([] if domain in pending else fuzzy):
                failures.append(f"{lang}/{domain}: fuzzy (the English changed; retranslate and remove "
                                f"the flag): {e.msgid[:70]!r}")
            for e in active:
                if e.msgstr and not e.fuzzy:
                    for p in problems(e):
                        failures.append(f"{lang}/{domain}: {p}: {e.msgid[:70]!r}")
            pct = 100.0 * len(done) / len(todo) if todo else 100.0
            state = "finished" if domain in finished else "pending" if domain in pending else "draft"
            if domain in finished and len(done) < len(todo):
                failures.append(f"{lang}/{domain}: declared finished in status.yml but {pct:.0f} % translated; "
                                f"translate it, or, if you cannot, `python tools/catalogs.py pending {domain}`")
            if domain in pending and len(done) == len(todo) and not fuzzy:
                failures.append(f"{lang}/{domain}: pending in status.yml but 100 % translated: "
                                f"`python tools/catalogs.py finish {domain}`")
            if domain in pending:
                notes.append(f"{lang}/{domain}: translation pending ({len(todo) - len(done)} message(s) to "
                             f"translate: `python tools/catalogs.py todo {domain}`)")
            lines.append(f"{domain:32s} {len(done):5d}/{len(todo):<5d} {len(fuzzy):6d}  {state} {pct:5.0f} %")
        unknown = (finished | pending) - set(pots)
        if unknown:
            failures.append(f"{lang}: status.yml names pages that do not exist: {sorted(unknown)}")
    failures += comments_failures()
    table = "\n".join(lines)
    if verbose:
        print(table)
        if notes:
            print("\n".join(notes))
    if failures:
        print("\n".join(failures), file=sys.stderr)
        raise SystemExit(f"translation check: {len(failures)} problem(s)")
    return table


def set_status(domain: str, to: str, lang: str = "ja", path: Path | None = None) -> None:
    """Move ``domain`` to the ``to`` list ("pending" or "finished") of status.yml, keeping its comments."""
    path = path or LOCALES / lang / "status.yml"
    text = path.read_text(encoding="utf-8")
    status = yaml.safe_load(text) or {}
    frm = "finished" if to == "pending" else "pending"
    if domain not in (status.get(frm) or []):
        raise SystemExit(f"{domain} is not {frm} in {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    if to == "finished":
        po = polib.pofile(str(LOCALES / lang / "LC_MESSAGES" / f"{domain}.po"))
        left = [e for e in po if e.msgid and not e.obsolete and needs_translation(e.msgid) and (e.fuzzy or not e.msgstr)]
        if left:
            raise SystemExit(f"{domain} has {len(left)} message(s) left to translate: "
                             f"`python tools/catalogs.py todo {domain}`")
    lines = [ln for ln in text.splitlines() if ln.strip() != f"- {domain}"]
    if not any(ln.rstrip() == f"{to}:" for ln in lines):
        lines += ["", f"{to}:"]
    at = next(i for i, ln in enumerate(lines) if ln.rstrip() == f"{to}:")
    lines.insert(at + 1, f"  - {domain}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{domain}: {to} in {path.name}")


def todo(domain: str, lang: str = "ja") -> None:
    po = polib.pofile(str(LOCALES / lang / "LC_MESSAGES" / f"{domain}.po"))
    for e in po:
        if e.msgid and not e.obsolete and needs_translation(e.msgid) and (e.fuzzy or not e.msgstr):
            print(("[fuzzy] " if e.fuzzy else "") + e.msgid.replace("\n", "\\n"))
            print()


def main(argv: list[str]) -> int:
    if argv == ["update"]:
        return update()
    if argv == ["check"]:
        check()
        return 0
    if argv == ["comments"]:
        return update_comments()
    if len(argv) == 2 and argv[0] in ("pending", "finish"):
        set_status(argv[1], "pending" if argv[0] == "pending" else "finished")
        return 0
    if len(argv) == 2 and argv[0] == "todo":
        todo(argv[1])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
