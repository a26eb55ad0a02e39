"""tools/catalogs.py's status rules: a finished page must be 100 % translated; a page a contributor who
cannot translate declared ``pending`` may carry fuzzy entries until the Japanese maintainer finishes it."""
import sys
from pathlib import Path

import polib
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import catalogs  # noqa: E402

PARAGRAPHS = ["The scale keeps the scores near unit variance.", "Adam divides each step by its gradient's size."]


def _tree(tmp_path, status, fuzzy=True):
    """A one-page catalog (book/demo) whose second paragraph changed in English (fuzzy) or not."""
    pot_dir, loc = tmp_path / "gettext", tmp_path / "locales"
    (pot_dir / "book").mkdir(parents=True, exist_ok=True)
    (loc / "ja" / "LC_MESSAGES" / "book").mkdir(parents=True, exist_ok=True)
    pot, po = polib.POFile(), polib.POFile()
    for text, ja in zip(PARAGRAPHS, ["スケールはスコアの分散を 1 付近に保ちます。", "Adam は各ステップを勾配の大きさで割ります。"]):
        pot.append(polib.POEntry(msgid=text, msgstr=""))
        po.append(polib.POEntry(msgid=text, msgstr=ja))
    if fuzzy:
        po[1].flags.append("fuzzy")
    pot.save(str(pot_dir / "book" / "demo.pot"))
    po.save(str(loc / "ja" / "LC_MESSAGES" / "book" / "demo.po"))
    (loc / "ja" / "status.yml").write_text("# the rules\nfinished:\n" + "".join(f"  - {p}\n" for p in status.get("finished", []))
                                           + ("pending:\n" + "".join(f"  - {p}\n" for p in status["pending"])
                                              if "pending" in status else ""), encoding="utf-8")
    return pot_dir, loc


@pytest.fixture
def tree(tmp_path, monkeypatch):
    def make(status, fuzzy=True):
        pot_dir, loc = _tree(tmp_path, status, fuzzy)
        monkeypatch.setattr(catalogs, "POT", pot_dir)
        monkeypatch.setattr(catalogs, "LOCALES", loc)
        return loc
    return make


def test_a_finished_page_with_a_fuzzy_entry_fails_and_names_the_way_out(tree, capsys):
    tree({"finished": ["book/demo"]})
    with pytest.raises(SystemExit, match="translation check"):
        catalogs.check()
    err = capsys.readouterr().err
    assert "fuzzy" in err and "catalogs.py pending book/demo" in err


def test_a_pending_page_may_carry_fuzzy_entries_and_is_listed(tree, capsys):
    tree({"finished": [], "pending": ["book/demo"]})
    table = catalogs.check()
    assert "pending" in table.splitlines()[-1]
    assert "translation pending (1 message(s) to translate" in capsys.readouterr().out


def test_pending_and_complete_or_both_lists_fail(tree, capsys):
    tree({"finished": [], "pending": ["book/demo"]}, fuzzy=False)
    with pytest.raises(SystemExit):
        catalogs.check()
    assert "catalogs.py finish book/demo" in capsys.readouterr().err
    tree({"finished": ["book/demo"], "pending": ["book/demo"]}, fuzzy=False)
    with pytest.raises(SystemExit):
        catalogs.check()
    assert "both finished and pending" in capsys.readouterr().err


def test_pending_and_finish_move_a_page_and_keep_the_comments(tree):
    loc = tree({"finished": ["book/demo"]})
    status = loc / "ja" / "status.yml"
    catalogs.set_status("book/demo", "pending")
    assert yaml.safe_load(status.read_text()) == {"finished": None, "pending": ["book/demo"]}
    assert status.read_text().startswith("# the rules\n")
    with pytest.raises(SystemExit, match="1 message"):       # still fuzzy: cannot be finished
        catalogs.set_status("book/demo", "finished")
    with pytest.raises(SystemExit, match="is not finished"):
        catalogs.set_status("book/demo", "pending")


def test_a_pending_page_gets_the_notice_below_its_title_and_no_other_page_does(monkeypatch):
    import types

    from docutils import nodes
    from docutils.core import publish_doctree

    import bookext
    tree = lambda: publish_doctree("Title\n=====\n\nA paragraph.\n")  # noqa: E731
    app = lambda lang, doc: types.SimpleNamespace(config=types.SimpleNamespace(language=lang),  # noqa: E731
                                                  env=types.SimpleNamespace(docname=doc))
    monkeypatch.setattr(bookext, "_pending_pages", lambda a: {"book/demo"})
    for lang, doc, want in (("ja", "book/demo", 1), ("ja", "book/other", 0), ("en", "book/demo", 0)):
        doctree = tree()
        bookext._pending_notice(app(lang, doc), doctree)
        notes = [n for n in doctree.findall(nodes.note) if "translation-pending" in n["classes"]]
        assert len(notes) == want, (lang, doc)
        if want:
            assert bookext.PENDING_NOTICE in notes[0].astext()
            assert notes[0].parent.index(notes[0]) == 1   # right below the title
