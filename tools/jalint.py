"""Japanese technical-writing checks over the catalogs: textlint, with the glossary as termbase.

    python tools/jalint.py termbase            # print the prh dictionary generated from the glossary
    python tools/jalint.py lint [PAGE ...]     # textlint over every catalog's Japanese (or the pages named)
    python tools/jalint.py lint --summary      # counts per catalog and rule, never fails

``make test-textlint`` runs ``lint``: it installs textlint and the rule presets pinned by
``locales/textlint/package-lock.json`` into ``locales/textlint/node_modules`` (``npm ci``; gitignored).

What is checked: the ``msgstr`` of every translated, non-fuzzy entry of every catalog under
``locales/ja/LC_MESSAGES`` (the pages, ``lib.po``, ``exercise.po``, ``sphinx.po``). Each entry becomes one
paragraph of a Markdown file in ``_build/textlint/`` with its MyST markup reduced to what a reader
sees: ``$math$`` and the roles that show no words (``{glue:text}``, ``{cite}``, ``{eq}``...) become
inline code, which the rules skip; ``{term}`注意重み <attention weights>``` and ``{doc}`` keep their
Japanese link text, which the rules read. Entries that are only math or code are skipped. The rules and
the reason for every rule turned off are in ``locales/textlint/textlintrc.json``; a finding is reported
as ``catalog #N (the msgid's first words): rule: message``.

The termbase: ``book/glossary.md`` is the one source. Its ``{glossary}`` entries give the preferred
Japanese term of each concept (the Japanese before the first bracket or full stop of a definition, as
the catalog's headword repeats it); comment lines of the form

    % termbase: 生のスコア <- スケーリング前のスコア, スケーリングしていないスコア

record the variants a preferred term replaces (also for a concept that has no glossary entry, such as
the self-check), and optionally ``(regex)`` variants written ``/.../``. The generated prh dictionary
turns each variant into an error "use 生のスコア"; the generator fails on a variant that is itself a
preferred term.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lib.infra.i18n import read_po  # noqa: E402

CONFIG_DIR = ROOT / "locales" / "textlint"
CATALOGS = ROOT / "locales" / "ja" / "LC_MESSAGES"
GLOSSARY = ROOT / "book" / "glossary.md"
# one folder per run, so that two runs side by side never delete each other's files
WORK = ROOT / "_build" / "textlint" / f"run-{os.getpid()}"

TERMBASE_LINE = re.compile(r"^%\s*termbase:\s*(?P<term>[^<]+?)\s*<-\s*(?P<variants>.+?)\s*$")
GLOSSARY_ENTRY = re.compile(r"^(?P<en>[^\s`].*?)\n  (?P<ja>[^.\n]*?)(?: \(|\.)", re.M)


# --- the termbase -----------------------------------------------------------------------------------

def glossary_terms(text: str | None = None) -> dict[str, str]:
    """English glossary term -> its preferred Japanese term (the definition's first words)."""
    text = GLOSSARY.read_text(encoding="utf-8") if text is None else text
    m = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S)
    if not m:
        raise ValueError(f"{GLOSSARY}: no ```{{glossary}} block")
    out = {}
    for e in GLOSSARY_ENTRY.finditer(m.group(1)):
        out[e.group("en").strip()] = e.group("ja").strip()
    return out


def termbase(text: str | None = None) -> list[dict]:
    """The ``% termbase:`` lines of the glossary: [{"expected": term, "patterns": [variants]}]."""
    text = GLOSSARY.read_text(encoding="utf-8") if text is None else text
    preferred = set(glossary_terms(text).values())
    rules = []
    for line in text.splitlines():
        m = TERMBASE_LINE.match(line)
        if not m:
            if line.lstrip("% ").startswith("termbase"):
                raise ValueError(f"{GLOSSARY}: cannot read the termbase line {line!r} "
                                 "(write `% termbase: PREFERRED <- VARIANT, VARIANT`)")
            continue
        term = m.group("term")
        variants = [v.strip() for v in m.group("variants").split(",") if v.strip()]
        clash = [v for v in variants if v in preferred | {term}]
        if clash:
            raise ValueError(f"{GLOSSARY}: {clash} is a preferred term, not a variant of {term}")
        rules.append({"expected": term, "patterns": variants})
        preferred.add(term)
    return rules


def prh_yaml(rules: list[dict]) -> str:
    """The prh dictionary (YAML; JSON is valid YAML) of the termbase."""
    out = {"version": 1, "rules": []}
    for r in rules:
        for v in r["patterns"]:
            expected = r["expected"]
            if v.startswith("/") and v.endswith("/"):      # a regex variant: the term is the message
                out["rules"].append({"expected": expected, "pattern": v,
                                     "prh": f"用語集の表記「{expected}」を使います"})
            else:
                out["rules"].append({"expected": expected, "pattern": v,
                                     "prh": f"用語集の表記「{expected}」を使います（「{v}」は使いません）"})
    return json.dumps(out, ensure_ascii=False, indent=1)


# --- catalog text -> Markdown that textlint reads ------------------------------------------------

_LINK_ROLE = re.compile(r"\{(?:term|doc|ref|numref)\}`([^`<]*?)\s*(?:<[^`>]*>)?`")
_OTHER_ROLE = re.compile(r"\{[a-z:-]+\}`[^`]*`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_CODE = re.compile(r"`[^`\n]+`")
_FIELD = re.compile(r"\{[a-z_][a-z0-9_]*(?:[:!][^{}]*)?\}")
_FORMULA_RUN = re.compile(r"(^|[\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef])"
                          r"([^\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef`]+)"
                          r"(?=$|[\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef])()")
_ASCII_BRACKETS = re.compile(r"\((?:[^()\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef]|\([^()]*\))*\)"
                             r"|\[(?:[^\[\]\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef]|[、・])*\]")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def reader_text(msgstr: str, *, code: bool) -> str:
    """What a reader sees of one translation, in Markdown, with the parts that show no words as
    inline code (math, glue values, citations, format fields of code strings)."""
    t = msgstr
    t = _MATH.sub("`x`", t)
    t = _LINK_ROLE.sub(lambda m: m.group(1) or "`ref`", t)
    t = _OTHER_ROLE.sub("`x`", t)
    t = _MD_LINK.sub(r"\1", t)
    if code:
        t = _FIELD.sub("`x`", t)
        # formulas and code written out in what code prints (Var(q·k) = d_k σ², [mean, variance]):
        # a run without Japanese that holds a formula sign is code for the reader
        t = _FORMULA_RUN.sub(lambda m: m.group(1) + "`x`" + m.group(3)
                             if re.search(r"[()\[\]=·√²/<>*+]", m.group(2)) else m.group(0), t)
    # half-width brackets around ASCII only (the panel labels (a) (b), rows (A) (B), tuples of glued
    # values, chapter numbers [4]) are code-like; brackets that hold Japanese must be full-width
    t = _CODE.sub("`x`", t)                   # a code span is one word for the sentence length
    t = _ASCII_BRACKETS.sub("`x`", t)
    t = t.replace("\\n", " ")
    return t


def _has_japanese(text: str) -> bool:
    return re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", _CODE.sub("", text)) is not None


def write_sources(pages: list[str] | None = None) -> dict[Path, list[tuple[int, str, int]]]:
    """One Markdown file per catalog under ``_build/textlint``; returns file -> [(line, msgid, #N)]."""
    WORK.mkdir(parents=True, exist_ok=True)
    for old in WORK.rglob("*.md"):
        old.unlink()
    index = {}
    for po in sorted(CATALOGS.rglob("*.po")):
        rel = po.relative_to(CATALOGS).with_suffix("")
        if pages and rel.as_posix() not in pages and rel.name not in pages:
            continue
        code: set[str] = set()
        entries = read_po(po, code=code)
        lines, where = [], []
        for n, (msgid, msgstr) in enumerate(entries.items(), 1):
            if msgid == msgstr or not _has_japanese(msgstr):
                continue
            if msgstr.lstrip().startswith(("$$", "```", ":::")):
                continue                                  # display math, code and directives
            text = reader_text(msgstr, code=msgid in code or po.name in ("prompts.po", "comments.po"))
            for para in re.split(r"\n\s*\n", text):
                para = para.strip()
                if not para or not _has_japanese(para):
                    continue
                where.append((len(lines) + 1, msgid, n))
                lines.extend(para.splitlines())
                lines.append("")
        out = WORK / rel.with_suffix(".md")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines), encoding="utf-8")
        index[out] = where
    return index


def write_config() -> Path:
    """``locales/textlint/textlintrc.json`` with the prh dictionary generated from the glossary."""
    cfg = json.loads((CONFIG_DIR / "textlintrc.json").read_text(encoding="utf-8"))
    cfg.pop("//", None)
    prh = WORK / "prh.yml"
    prh.write_text(prh_yaml(termbase()), encoding="utf-8")
    cfg.setdefault("rules", {})["prh"] = {"rulePaths": [str(prh), str(CONFIG_DIR / "style.yml")]}
    for key in list(cfg["rules"]):
        if key.startswith("//"):
            del cfg["rules"][key]
    out = WORK / "textlintrc.json"
    out.write_text(json.dumps(cfg, ensure_ascii=False, indent=1), encoding="utf-8")
    return out


def lint(pages: list[str] | None = None) -> list[dict]:
    """Run textlint; every finding as {catalog, entry, msgid, rule, message, text}."""
    exe = CONFIG_DIR / "node_modules" / ".bin" / "textlint"
    if not exe.exists():
        raise SystemExit(f"textlint is not installed: run `npm ci --prefix {CONFIG_DIR.relative_to(ROOT)}` "
                         "(make test-textlint does)")
    index = write_sources(pages)
    config = write_config()
    files = [str(p) for p, where in index.items() if where]
    lint.checked = len(files)                  # how many catalogs were read (main prints it)
    proc = subprocess.run([str(exe), "--config", str(config), "--rules-base-directory",
                           str(CONFIG_DIR / "node_modules"), "--format", "json", *files],
                          capture_output=True, text=True, cwd=CONFIG_DIR)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise SystemExit(f"textlint failed ({proc.returncode}):\n{proc.stderr or proc.stdout}")
    findings = []
    for result in json.loads(proc.stdout):
        path = Path(result["filePath"])
        where = index[path]
        text_lines = path.read_text(encoding="utf-8").splitlines()
        for msg in result["messages"]:
            line = msg.get("loc", {}).get("start", {}).get("line") or msg.get("line")
            entry = max((w for w in where if w[0] <= line), default=(0, "", 0), key=lambda w: w[0])
            findings.append({
                "catalog": path.relative_to(WORK).with_suffix(".po").as_posix(),
                "entry": entry[2], "msgid": entry[1], "rule": msg["ruleId"],
                "message": msg["message"].strip(),
                "text": text_lines[line - 1] if 0 < line <= len(text_lines) else "",
            })
    return findings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("termbase")
    lp = sub.add_parser("lint")
    lp.add_argument("pages", nargs="*", help="catalogs, e.g. book/softmax_saturation or lib")
    lp.add_argument("--summary", action="store_true", help="counts only; exit 0")
    args = ap.parse_args(argv)
    if args.cmd == "termbase":
        print(prh_yaml(termbase()))
        return 0
    findings = lint(args.pages or None)
    if args.summary:
        per = Counter((f["catalog"], f["rule"]) for f in findings)
        for (cat, rule), n in sorted(per.items()):
            print(f"{n:4d}  {cat}  {rule}")
        print(f"{len(findings)} finding(s)")
        return 0
    for f in findings:
        message = " ".join(f["message"].split())
        print(f"{f['catalog']} #{f['entry']} ({f['msgid'][:50]!r}): {f['rule']}: {message}")
    counts = Counter(f["catalog"] for f in findings)
    print(f"textlint: {len(findings)} error(s) in {len(counts)} of the {lint.checked} catalog(s) checked"
          + "".join(f"\n  {n:4d}  {c}" for c, n in sorted(counts.items())))
    return 1 if findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
