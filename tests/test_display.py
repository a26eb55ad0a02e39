"""lib.table: the chapters' tables. Checked against hand-laid-out text, Python's own format(),
and an HTML parser (the standard library's), and with the bad inputs a chapter could pass."""
from html.parser import HTMLParser

import numpy as np
import pytest

import lib
from lib import table


class _Cells(HTMLParser):
    """The text of every <th>/<td> of an HTML table, row by row, and each cell's alignment."""

    def __init__(self):
        super().__init__()
        self.rows, self.align, self._in = [], [], False

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
            self.align.append([])
        if tag in ("th", "td"):
            self._in = True
            self.rows[-1].append("")
            self.align[-1].append(dict(attrs).get("style", ""))

    def handle_endtag(self, tag):
        if tag in ("th", "td"):
            self._in = False

    def handle_data(self, data):
        if self._in:
            self.rows[-1][-1] += data


def test_plain_text_is_aligned_by_column_kind():
    t = lib.table([(64, "scaled", 0.5), (1024, "unscaled", 0.03125)], ["d_k", "model", "1/x"], [None, None, ".3f"])
    assert str(t).splitlines() == [
        " d_k  model       1/x",
        "----  --------  -----",
        "  64  scaled    0.500",
        "1024  unscaled  0.031",
    ]


def test_cells_are_pythons_own_format_and_strings_pass_through():
    rows = [(np.float64(1.5e-7), 0.1234, ">300"), (2.0, 0.9, "12")]
    t = table(rows, ["g", "share", "steps"], {"g": ".1e", "share": ".0%"})
    assert t.cells == [[format(1.5e-7, ".1e"), format(0.1234, ".0%"), ">300"], ["2.0e+00", "90%", "12"]]
    assert t.values == [tuple(r) for r in rows]          # the numbers themselves, for hidden asserts
    assert str(t).splitlines()[2].split() == ["1.5e-07", "12%", ">300"]


def test_html_has_the_same_cells_escaped_and_the_same_alignment():
    t = table([(1, "a<b", ">300")], ["n", "name & kind", "steps"], title="t < 1")
    html = t._repr_html_()
    assert "<caption>t &lt; 1</caption>" in html and "a&lt;b" in html and "name &amp; kind" in html
    p = _Cells()
    p.feed(html)
    assert p.rows == [["n", "name & kind", "steps"], ["1", "a<b", ">300"]]
    assert [("right" in a) for a in p.align[1]] == [True, False, True]   # ">300" reads as a number
    assert str(t).splitlines()[0] == "t < 1"


@pytest.mark.parametrize("call, error, words", [
    (lambda: table([(1, 2, 3)], ["a", "b"]), ValueError, "row 0 has 3 values; the table has 2 columns"),
    (lambda: table([(1,), (1, 2)], ["a", "b"]), ValueError, "row 0 has 1 values"),
    (lambda: table([(1, 2)], "ab"), TypeError, "columns must be a non-empty sequence"),
    (lambda: table([(1, 2)], []), TypeError, "columns must be a non-empty sequence"),
    (lambda: table([(1, 2)], ["a", "b"], [".1f"]), ValueError, "one spec per column (2"),
    (lambda: table([(1, 2)], ["a", "b"], {"c": ".1f"}), ValueError, "columns the table does not have: ['c']"),
    (lambda: table([("x", 2.5)], ["a", "b"], [None, "d"]), ValueError, "row 0, column 'b': cannot format 2.5"),
    (lambda: table([5], ["a"]), TypeError, "row 0 must be a sequence of 1 values"),
    (lambda: table([(1,)], ["a"], title=3), TypeError, "title must be a string"),
])
def test_bad_input_names_the_row_column_or_argument(call, error, words):
    with pytest.raises(error) as e:
        call()
    assert words in str(e.value)


def test_an_empty_table_still_shows_its_headers():
    t = table([], ["d_k", "loss"])
    assert str(t).splitlines() == ["d_k  loss", "---  ----"]
    assert t.cells == [] and "<th" in t._repr_html_()
