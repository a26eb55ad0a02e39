"""lib.i18n: the .po reader against polib (a reader nobody here wrote), and tr's language switch."""
import textwrap
import unicodedata
from pathlib import Path

import polib
import pytest

import lib
from lib import i18n

SAMPLE = textwrap.dedent(r'''
    # A catalog with every shape Sphinx and sphinx-intl write.
    msgid ""
    msgstr ""
    "Content-Type: text/plain; charset=UTF-8\n"

    msgid "attention weight"
    msgstr "アテンションの重み"

    #, fuzzy
    msgid "key index $j$"
    msgstr "古い訳"

    msgid ""
    "A message over "
    "two lines with \"quotes\", a back\\slash and a\nnew line"
    msgstr ""
    "二行の"
    "メッセージ \"引用\" \\ と\n改行"

    msgctxt "figure"
    msgid "scaled"
    msgstr "スケールあり"

    msgid "not translated yet"
    msgstr ""

    #, python-format, fuzzy
    msgid "{n} keys"
    msgstr "キー{n}個"
    #~ msgid "obsolete"
    #~ msgstr "廃止"

    msgid "{n} keys, fresh"
    msgstr "キー{n}個（新）"
    ''')


def test_read_po_agrees_with_polib(tmp_path):
    path = tmp_path / "sample.po"
    path.write_text(SAMPLE, encoding="utf-8")
    ours = i18n.read_po(path)
    theirs = {e.msgid: e.msgstr for e in polib.pofile(str(path))
              if e.msgid and e.msgstr and not e.fuzzy and not e.obsolete}
    assert ours == theirs
    assert ours["scaled"] == "スケールあり" and "key index $j$" not in ours and "{n} keys" not in ours
    assert ours['A message over two lines with "quotes", a back\\slash and a\nnew line'].endswith("と\n改行")


def test_read_po_agrees_with_polib_on_the_books_catalogs():
    folder = i18n._locales_dir()
    paths = sorted(folder.rglob("*.po"))
    if not paths:
        pytest.skip("no catalogs yet")
    for path in paths:
        theirs = {e.msgid: e.msgstr for e in polib.pofile(str(path))
                  if e.msgid and e.msgstr and not e.fuzzy and not e.obsolete}
        assert i18n.read_po(path) == theirs, path


def test_an_installed_lib_reads_the_catalogs_inside_the_package(tmp_path):
    """lib installed from classroom/room.py's wheel has no ../locales: it reads lib/locale-catalogs (the
    offline bundle's and the JupyterHub's Japanese notebooks printed English before)."""
    import shutil
    import subprocess
    import sys

    root = Path(i18n.__file__).resolve().parents[2]
    site = tmp_path / "site-packages"
    shutil.copytree(root / "lib", site / "lib", ignore=shutil.ignore_patterns("__pycache__", "locale-catalogs"))
    probe = ("import lib, lib.infra.i18n as i; lib.set_language('ja'); "
             "print(i._locales_dir().name, lib.tr('attention weights'))")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("BOOK_LOCALES", "BOOK_LANG")}
    env["PYTHONPATH"] = str(site)
    def run():
        return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                              cwd=tmp_path, check=True).stdout.strip().split(maxsplit=1)
    assert run() == ["locales", "attention weights"]                   # no catalogs at all: English
    (site / "locales").mkdir()                   # another package's top-level folder of that name is not read
    shutil.copytree(root / "locales" / "ja" / "LC_MESSAGES", site / "lib" / "locale-catalogs" / "ja" / "LC_MESSAGES")
    assert run() == ["locale-catalogs", i18n.catalog("ja")["attention weights"]]
    assert i18n.catalog("ja")["attention weights"] != "attention weights"


def test_tr_follows_the_language(tmp_path, monkeypatch):
    cat = tmp_path / "ja" / "LC_MESSAGES" / "book"
    cat.mkdir(parents=True)
    (cat / "page.po").write_text(SAMPLE, encoding="utf-8")
    monkeypatch.setenv("BOOK_LOCALES", str(tmp_path))
    monkeypatch.setattr(i18n, "_catalogs", {})
    monkeypatch.delenv("BOOK_LANG", raising=False)
    try:
        assert lib.tr("attention weight") == "attention weight" and lib.language() == "en"
        monkeypatch.setenv("BOOK_LANG", "ja")
        assert lib.tr("attention weight") == "アテンションの重み"
        assert lib.tr("key index $j$") == "key index $j$"            # fuzzy: the English shows
        assert lib.tr("{n} keys", n=3) == "3 keys"                   # fuzzy, with a field
        assert lib.tr("{n} keys, fresh", n=3) == "キー3個（新）"
        lib.set_language("en")
        assert lib.tr("attention weight") == "attention weight"
    finally:
        lib.set_language(None)


def test_bad_language_and_message():
    with pytest.raises(ValueError, match="unknown book language 'fr'"):
        lib.set_language("fr")
    with pytest.raises(TypeError, match="str"):
        lib.tr(3)


def test_bad_po_line_is_named(tmp_path):
    path = tmp_path / "bad.po"
    path.write_text('msgid "a"\nmsgstr "b"\nnonsense\n', encoding="utf-8")
    with pytest.raises(ValueError, match="bad.po:3"):
        i18n.read_po(path)


# --- wrap: textwrap.fill for both editions -------------------------------------------------------

def test_wrap_is_textwrap_for_english():
    import textwrap

    text = ("The weights of a query sum to 0.25, not 1: something multiplies the weights after the "
            "softmax (a scale applied after it?). Inside the softmax the scale is 1.")
    assert lib.wrap(text, 40) == textwrap.fill(text, 40)


def test_wrap_breaks_japanese_between_characters():
    text = ("1 つのクエリの重みの和が 1 ではなく 0.25 です。ソフトマックスの後で何かが重みに掛けられています"
            "（スケールをソフトマックスの後でかけていませんか？）。ソフトマックスの内側のスケールは 1 です。")
    out = lib.wrap(text, 40)
    lines = out.split("\n")
    assert len(lines) >= 4                                          # textwrap.fill gives 1 long line here
    widths = [sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in ln) for ln in lines]
    assert max(widths) <= 40 + 2                                    # + one closing mark kept on its line
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")  # nothing lost or reordered
    assert not any(ln[0] in "、。）？" for ln in lines)               # no line opens with a closing mark
    assert "0.25" in out                                             # ASCII words are not split


WORDS = ["ソフトマックス", "スケール", "クエリ", "重み", "掛けられて", "内側", "かけていませんか"]


@pytest.mark.parametrize("width", range(20, 61, 4))
def test_wrap_never_breaks_inside_a_japanese_word(width):
    """The editor's finding (ソフ|トマックス at width 78): at every width, no line break falls inside
    one of the words of the message (known words, not the segmenter's own output)."""
    text = ("1 つのクエリの重みの和が 1 ではなく 0.25 です。ソフトマックスの後で何かが重みに掛けられています"
            "（スケールをソフトマックスの後でかけていませんか？）。ソフトマックスの内側のスケールは 1 です。")
    lines = lib.wrap(text, width).split("\n")
    for a, b in zip(lines, lines[1:]):
        joint = a[-8:] + b[:8]
        for word in WORDS:
            for cut in range(1, len(word)):
                assert not (a.endswith(word[:cut]) and b.startswith(word[cut:])), \
                    f"width {width}: {word} broken across lines: {joint!r}"
    widths = [sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in ln) for ln in lines]
    assert max(widths) <= width + 2
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")


def test_wrap_cuts_a_phrase_wider_than_the_line():
    text = "ア" * 30
    lines = lib.wrap(text, 20).split("\n")
    assert "".join(lines) == text and all(len(ln) <= 10 for ln in lines)


def test_wrap_rejects_bad_input():
    with pytest.raises(TypeError, match="str"):
        lib.wrap(3.5)
    with pytest.raises(ValueError, match="width"):
        lib.wrap("abc", 0)


def test_code_strings_prefer_lib_and_code_entries():
    """A string lib shows takes lib.po's translation, a string a page's code shows takes a translation
    marked as code, even where the same English is also prose elsewhere ("attention weights" is a
    glossary heading, translated there with its English in brackets)."""
    folder = Path(i18n.__file__).resolve().parents[2] / "locales" / "ja" / "LC_MESSAGES"
    i18n._catalogs.clear()
    cat = i18n.catalog("ja")
    lib_entries = {e.msgid: e.msgstr for e in polib.pofile(str(folder / "lib.po"))
                   if e.msgstr and not e.fuzzy and not e.obsolete}
    assert lib_entries
    for msgid, msgstr in lib_entries.items():
        assert cat[msgid] == msgstr, msgid
    code_translations: dict[str, set[str]] = {}
    for po_path in sorted((folder / "book").glob("*.po")):
        for e in polib.pofile(str(po_path)):
            if "code" in (e.comment or "").split() and e.msgstr and not e.fuzzy:
                code_translations.setdefault(e.msgid, set()).add(e.msgstr)
    assert code_translations
    for msgid, translations in code_translations.items():
        if msgid not in lib_entries:
            assert cat[msgid] in translations, msgid


def test_python_error_text_becomes_japanese_in_a_japanese_verdict():
    """Python's own message is English prose; inside a translated verdict the reader gets the type
    name and its meaning in Japanese (an English verdict keeps Python's text)."""
    exc = ValueError("could not convert string to float: 'abc'")
    try:
        i18n.set_language("ja")
        text = lib.tr("{name}: could not read your answer as numbers ({err}).", name="z", err=exc)
        assert "could not convert" not in text and "受け付けられない値" in text
        assert lib.tr("x ({e})", e="TypeError: unsupported operand") == "x (TypeError：型が合いません)"
        assert lib.tr("x ({e})", e="plain text") == "x (plain text)"
    finally:
        i18n.set_language(None)
    assert "could not convert" in lib.tr("({err})", err=exc)


def _bookext():
    import importlib
    import sys as _sys

    _sys.path.insert(0, str(Path(i18n.__file__).resolve().parents[2] / "tools"))
    return importlib.import_module("bookext")


def test_every_learner_prompt_has_a_japanese_translation():
    """The prompts of the cells a learner edits ("# your code here") are replaced in the Japanese
    notebooks from prompts.po: a prompt added to a chapter without a translation fails here."""
    bookext = _bookext()
    import chapters  # tools/chapters.py, on the path from _bookext()

    root = Path(i18n.__file__).resolve().parents[2]
    found = {}
    for nb in sorted((root / "book").glob("*.md")):
        for cell in (chapters.read(nb) or {"cells": []})["cells"]:
            if cell["cell_type"] == "code":
                for p in bookext.prompts("".join(cell["source"])):
                    found[p] = nb.name
    assert "your code here" in found                     # the extraction finds the known prompt
    table = i18n.read_po(root / "locales" / "ja" / "LC_MESSAGES" / "prompts.po")
    missing = {p: nb for p, nb in found.items() if p not in table}
    assert not missing, f"prompts with no translation in locales/ja/LC_MESSAGES/prompts.po: {missing}"


def test_prompts_are_replaced_and_code_kept():
    bookext = _bookext()
    src = "my_raw = None       # your two raw scores, e.g. [.., ..]\nx = 1  # a note\n    return None   # your code here"
    out = bookext.translate_prompts(src, "ja")
    assert out == ("my_raw = None       # 2 つの生のスコア（例：[.., ..]）\nx = 1  # a note\n"
                   "    return None   # ここにコードを書きます")


def test_code_messages_leave_the_pot_when_the_code_drops_them(tmp_path, monkeypatch):
    """tools/messages.py in a warm tree: a message that code no longer shows leaves lib.pot (it stayed
    there, so `make translations` kept it in lib.po while a clean clone's check saw it gone)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import messages

    monkeypatch.setattr(messages, "POT", tmp_path)
    shown = {"lib": ["kept", "dropped"]}
    monkeypatch.setattr(messages, "code_messages_by_catalog", lambda: shown)
    messages.add_code_messages()
    prose = polib.pofile(str(tmp_path / "lib.pot"))
    prose.append(polib.POEntry(msgid="prose, not code", msgstr=""))        # as Sphinx writes one
    prose.save(str(tmp_path / "lib.pot"))
    shown["lib"] = ["kept", "new"]
    messages.add_code_messages()
    assert sorted(e.msgid for e in polib.pofile(str(tmp_path / "lib.pot"))) == ["kept", "new", "prose, not code"]


def test_a_prose_entry_that_code_also_shows_is_flagged_and_kept(tmp_path, monkeypatch):
    """A page whose prose and code both say "step" has one catalog entry; it must carry the code flag,
    or lib.tr ranks it with every other page's prose "step" (issue 39: a figure label took another
    page's table header). When the code stops showing it, the flag goes and the prose entry stays."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import messages

    monkeypatch.setattr(messages, "POT", tmp_path)
    (tmp_path / "book").mkdir()
    pot = polib.POFile()
    pot.append(polib.POEntry(msgid="step", msgstr="", occurrences=[("../book/page.md", "3")]))
    pot.save(str(tmp_path / "book" / "page.pot"))
    shown = {"book/page": ["step"]}
    monkeypatch.setattr(messages, "code_messages_by_catalog", lambda: shown)
    messages.add_code_messages()
    entry = polib.pofile(str(tmp_path / "book" / "page.pot")).find("step")
    assert entry.comment == messages.CODE_FLAG
    shown["book/page"] = []
    messages.add_code_messages()
    entry = polib.pofile(str(tmp_path / "book" / "page.pot")).find("step")
    assert entry is not None and entry.comment == ""


def test_every_page_shows_its_own_translation_of_what_its_code_says():
    """Strings code shows are looked up book-wide: a message that two pages translate differently would
    show the other page's words on one of them. Every tr() message of a page must come out as that
    page's own translation (or lib's, which every page shares)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import messages

    folder = Path(__file__).resolve().parents[1] / "locales" / "ja" / "LC_MESSAGES"
    shared = i18n.catalog("ja")
    lib_po = i18n.read_po(folder / "lib.po")
    wrong = []
    for domain, msgs in messages.code_messages_by_catalog().items():
        own = i18n.read_po(folder / f"{domain}.po")
        for m in dict.fromkeys(msgs):
            want = lib_po.get(m) or own.get(m)
            if want and shared.get(m) != want:
                wrong.append((domain, m, want, shared.get(m)))
    assert not wrong, wrong


def test_a_page_takes_its_own_meaning_of_a_word(tmp_path, monkeypatch):
    """One English word, two meanings on two pages ("step" of a hand computation, a training step):
    with the page named by set_page, tr gives that page's translation, not the first catalog's."""
    book = tmp_path / "ja" / "LC_MESSAGES" / "book"
    book.mkdir(parents=True)
    head = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    (book / "aaa.po").write_text(head + '#. code\nmsgid "step"\nmsgstr "手順"\n', encoding="utf-8")
    (book / "zzz.po").write_text(head + '#. code\nmsgid "step"\nmsgstr "学習ステップ"\n', encoding="utf-8")
    monkeypatch.setenv("BOOK_LOCALES", str(tmp_path))
    monkeypatch.setattr(i18n, "_catalogs", {})
    monkeypatch.setattr(i18n, "_page_catalogs", {})
    try:
        i18n.set_language("ja")
        assert lib.tr("step") == "手順"                    # no page: the first catalog by path
        lib.set_page("zzz")
        assert lib.tr("step") == "学習ステップ" and i18n.page() == "zzz"
        lib.set_page("book/aaa.md")
        assert lib.tr("step") == "手順"
    finally:
        i18n.set_language(None)
        lib.set_page(None)


def test_every_code_string_takes_its_own_pages_translation():
    """On every page of the book, each string its code shows (``#. code``) comes out of tr as that
    page's catalog translates it (read with polib), never as another page's catalog does."""
    folder = Path(i18n.__file__).resolve().parents[2] / "locales" / "ja" / "LC_MESSAGES" / "book"
    pages = sorted(folder.glob("*.po"))
    assert pages
    checked = 0
    try:
        i18n.set_language("ja")
        for po_path in pages:
            lib.set_page(po_path.stem)
            for e in polib.pofile(str(po_path)):
                if "code" in (e.comment or "").split() and e.msgstr and not e.fuzzy and not e.obsolete:
                    assert lib.tr(e.msgid) == e.msgstr, (po_path.stem, e.msgid)
                    checked += 1
    finally:
        i18n.set_language(None)
        lib.set_page(None)
    assert checked > 100


def test_set_page_rejects_what_is_not_a_page():
    with pytest.raises(ValueError, match="no page 'nope'"):
        lib.set_page("nope")
    with pytest.raises(ValueError, match="not a page name"):
        lib.set_page("../lib")
    with pytest.raises(TypeError, match="page name"):
        lib.set_page(3)
    assert i18n.page() is None


def test_a_japanese_verdict_has_no_space_after_its_full_stop():
    """「✗ まだです。アテンションの出力：…」, not 「まだです。 アテンション」 (ja-review-4 3.2); English keeps it."""
    v = lib.Verdict(False, "attention output: no answer yet.")
    assert "</strong> attention" in v._repr_html_()
    try:
        lib.set_language("ja")
        h = lib.Verdict(False, "アテンションの出力：未回答です。")._repr_html_()
        assert "。</strong>アテンション" in h, h
    finally:
        lib.set_language(None)


def test_ljust_counts_a_japanese_character_as_two_columns():
    """Rows of a printout line up in both editions (the speed chapter's benchmark table)."""
    rows = [lib.i18n.ljust("NumPy：2 つの行列積のみ", 30), lib.i18n.ljust("PyTorch fused SDPA", 30)]
    widths = [sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in r) for r in rows]
    assert widths == [30, 30]
    assert lib.i18n.ljust("abc", 2) == "abc"
    with pytest.raises(TypeError, match="str"):
        lib.i18n.ljust(3, 5)


def test_rjust_and_tables_count_a_japanese_character_as_two_columns():
    """lib.table's printout lines up when its headers or cells are Japanese (the test-scores header)."""
    cols = lambda s: sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)  # noqa: E731
    assert lib.i18n.rjust("分散", 6) == "  分散" and lib.i18n.rjust("abcdef", 2) == "abcdef"
    with pytest.raises(TypeError, match="str"):
        lib.i18n.rjust(3, 5)
    text = str(lib.table([(1, 100.0), (20, 2000.0)], ["科目数", "標準偏差/√n"], [None, ".1f"]))
    lines = text.splitlines()
    assert len({cols(line) for line in lines}) == 1, lines       # every line as wide as the rule
    assert lines[0].index("科目数") == 0 and lines[2].endswith("100.0") and lines[3].endswith("2000.0")
