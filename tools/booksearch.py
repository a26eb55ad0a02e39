"""The Japanese edition's search: one word splitter for the index (Python) and the query (JavaScript).

Sphinx 7.4 indexes Japanese with TinySegmenter, a statistical splitter whose cuts depend on the
context (注意重み|の but 注意重|み elsewhere), while the search page splits a query only at spaces and
punctuation; so 注意重み, 標準偏差, 勾配消失, 類似度 and ``float32`` found nothing. Here both sides use
the same rules, written twice below (``split`` and ``JS_SPLITTER``; ``tests/test_booksearch.py``
runs both on the same texts and compares):

1. **The book's terms** (``dictionary()``: every preferred Japanese term of ``book/glossary.md`` and
   of its termbase lines): every occurrence in the text is a word, wherever it stands.
2. **Runs of one script**: a katakana run (ソフトマックス) and an ASCII word (``float32``,
   ``scaled_dot_product_attention``, lowercased) are words; hiragana runs (particles, endings) are not.
3. **Kanji runs**: the index keeps each run and every two-character piece of it (分散 inside
   不偏標本分散); a query's kanji run is looked up whole when it has two characters and as its pieces
   when it is longer, so a query matches every page that contains it.

Sphinx requires every word of a query (pieces of fewer than three characters only where a longer
word of the query matched), so a query of a term finds exactly the pages that contain the term.
"""
from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent

_KANJI = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_RUN = re.compile(rf"[{_KANJI}]+|[{_KATAKANA}]+|[A-Za-z0-9_]+|[\u3040-\u309f]+")


@lru_cache(maxsize=1)
def dictionary() -> tuple[str, ...]:
    """The book's Japanese terms, longest first (the glossary and its termbase lines)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import jalint

    terms = set(jalint.glossary_terms().values())
    terms |= {r["expected"] for r in jalint.termbase()}
    words = set()
    for t in terms:
        for part in re.split(r"[\s（）()、,/・]+", t):
            if re.search(rf"[{_KANJI}{_KATAKANA}\u3040-\u309f]", part) and len(part) > 1:
                words.add(part)
    return tuple(sorted(words, key=lambda w: (-len(w), w)))


def _runs(text: str, query: bool) -> list[str]:
    out = []
    for run in _RUN.findall(text):
        c = run[0]
        if "\u3040" <= c <= "\u309f":
            continue                                          # hiragana: particles and endings
        if re.match(rf"[{_KANJI}]", c):
            pieces = [run[i:i + 2] for i in range(len(run) - 1)]
            if query:
                out += [run] if len(run) <= 2 else pieces
            else:
                out += [run] + pieces
        else:
            out.append(run.lower())
    return out


def split(text: str, query: bool = False) -> list[str]:
    """The words of ``text`` for the index (``query=False``) or for a query."""
    words = []
    if query:
        for part in text.split():
            hit = [t for t in dictionary() if t in part]
            if part in hit:
                words.append(part)                            # a term: looked up whole
            else:
                words += _runs(part, query=True)
        return [w for w in words if len(w) > 1]
    for term in dictionary():
        if term in text:
            words.append(term)
    words += _runs(text, query=False)
    return [w for w in words if len(w) > 1]


JS_SPLITTER = r"""
var BOOK_SEARCH_TERMS = __TERMS__;
var splitQuery = (query) => {
  const KANJI = /^[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆]/;
  const RUN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆]+|[\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]+|[A-Za-z0-9_]+|[\u3040-\u309f]+/g;
  const words = [];
  for (const part of query.split(/\s+/).filter((p) => p)) {
    if (BOOK_SEARCH_TERMS.includes(part)) { words.push(part); continue; }
    for (const run of part.match(RUN) || []) {
      const c = run[0];
      if (c >= "\u3040" && c <= "\u309f") continue;
      if (KANJI.test(c)) {
        if (run.length <= 2) words.push(run);
        else for (let i = 0; i + 2 <= run.length; i++) words.push(run.slice(i, i + 2));
      } else words.push(run.toLowerCase());
    }
  }
  return words.filter((w) => w.length > 1);
};
"""


def js_splitter_code() -> str:
    return JS_SPLITTER.replace("__TERMS__", json.dumps(list(dictionary()), ensure_ascii=False))


def search_language():
    """Sphinx's Japanese search language with this splitter (``app.add_search_language``)."""
    from sphinx.search.ja import SearchJapanese

    class BookJapanese(SearchJapanese):
        def init(self, options):
            self.js_splitter_code = js_splitter_code()

        def split(self, input: str) -> list[str]:  # noqa: A002 - Sphinx's SearchLanguage.split signature
            return split(input)

    return BookJapanese
