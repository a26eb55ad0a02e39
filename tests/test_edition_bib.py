"""tools/build.py: edition_bib, the Japanese edition's bibliography, read back with pybtex (the parser
sphinxcontrib-bibtex uses): every entry and field of book/references.bib kept as it was, except the
English reading notes (left out; an arXiv identifier stays) and the fields locales/ja/references.yml
gives."""
import sys
from pathlib import Path

import yaml
from pybtex.database import parse_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build  # noqa: E402


def test_the_japanese_bibliography_keeps_everything_but_the_english_notes():
    source = parse_file(str(ROOT / "book" / "references.bib"))
    ja = parse_file(str(build.edition_bib("ja")))
    overlay = yaml.safe_load((ROOT / "locales" / "ja" / "references.yml").read_text(encoding="utf-8"))
    assert list(ja.entries) == list(source.entries)
    notes_before = sum("note" in e.fields for e in source.entries.values())
    for key, entry in source.entries.items():
        got = ja.entries[key]
        assert got.type == entry.type and got.persons == entry.persons, key
        given = {k.lower() for k in overlay.get(key, {})}
        for name, value in entry.fields.items():
            if name.lower() == "note" or name.lower() in given:
                continue
            assert got.fields[name] == value, (key, name)
        for name in given:
            assert got.fields[name] == str(overlay[key][name]), (key, name)
        note = got.fields.get("note")
        if note is not None and "note" not in given:
            assert note.startswith("arXiv:") and entry.fields["note"].startswith(note), key
    notes_after = sum("note" in e.fields for e in ja.entries.values())
    assert notes_before > 30 and notes_after < 15             # the English reading notes are gone
    seed = ja.entries["yusei2026scaling"].fields
    assert "(The key-dimension" not in seed["title"] and "研修記事" in seed["howpublished"]
