"""The Japanese search splits the index and the query the same way (tools/booksearch.py)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import booksearch  # noqa: E402
import jalint  # noqa: E402

QUERIES = ["注意重み", "標準偏差", "勾配消失", "類似度", "float32", "float16", "ソフトマックス 勾配",
           "不偏標本分散", "スケーリングあり", "softcap", "注意重みの和", "キーの次元数", "scale"]
TEXT = ("1 つのクエリの注意重みの和は 1 です。スコアの標準偏差は √d_k に比例し、飽和すると勾配消失が"
        "起こります。コサイン類似度を float32 で計算し、float16 では softcap を使います。不偏標本分散と"
        "スケーリングありの場合、キーの次元数を scale に渡します。ソフトマックスの勾配。")


def test_every_query_word_is_in_the_index_of_a_text_that_contains_it():
    index = set(booksearch.split(TEXT))
    for q in QUERIES:
        words = booksearch.split(q, query=True)
        assert words, f"{q!r} has no word to look up"
        assert set(words) <= index, f"{q!r}: {set(words) - index} not in the index of a text containing it"


def test_every_glossary_term_finds_a_text_that_contains_it():
    for en, ja in jalint.glossary_terms().items():
        for term in (ja, en):
            text = f"ここでは{term}について説明します。"
            words = booksearch.split(term, query=True)
            assert words and set(words) <= set(booksearch.split(text)), term


def test_a_word_the_text_lacks_is_not_found():
    index = set(booksearch.split(TEXT))
    for q in ["交差エントロピー", "bfloat16", "ヤコビ行列"]:
        assert not set(booksearch.split(q, query=True)) <= index, q


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (make test-textlint needs it)")
def test_the_search_page_splits_a_query_as_python_does():
    queries = QUERIES + [jalint.glossary_terms()[k] for k in sorted(jalint.glossary_terms())]
    script = booksearch.js_splitter_code() + (
        "\nconst qs = " + json.dumps(queries, ensure_ascii=False) + ";\n"
        "console.log(JSON.stringify(qs.map((q) => splitQuery(q))));\n")
    out = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [booksearch.split(q, query=True) for q in queries]
