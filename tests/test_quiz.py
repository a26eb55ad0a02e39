"""The end-of-course quiz: a learner handout without answers and an answer key for the trainer, built
from book/trainer/quiz.md outside the book (tools/build.py trainer), printed to PDF in Chromium."""
import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import lib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
LANGS = ["en"] + (["ja"] if (ROOT / "locales/ja/LC_MESSAGES/trainer/quiz.po").is_file() else [])


class _Text(HTMLParser):
    """The visible text of a page, and the text of each answer box (every admonition but a warning)."""

    def __init__(self):
        super().__init__()
        self.parts, self.answers, self._depth, self._in_answer = [], [], 0, None
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if tag in ("script", "style"):
            self._skip += 1
        if tag == "div":
            self._depth += 1
            if "admonition" in cls.split() and self._in_answer is None:
                self._in_answer, self._buf, self._cls = self._depth, [], cls.split()

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        if tag == "div":
            if self._in_answer == self._depth:
                if "warning" not in self._cls:         # the key's note to the trainer is not an answer
                    self.answers.append(" ".join(self._buf))
                self._in_answer = None
            self._depth -= 1

    def handle_data(self, data):
        if self._skip:
            return
        self.parts.append(data)
        if self._in_answer is not None:
            self._buf.append(data)


def _read(path):
    p = _Text()
    p.feed(path.read_text(encoding="utf-8"))
    return re.sub(r"\s+", " ", " ".join(p.parts)), [re.sub(r"\s+", " ", a) for a in p.answers]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    import build

    out = {}
    for lang in LANGS:
        d = tmp_path_factory.mktemp(f"trainer-{lang}") / lang
        assert build.build_trainer(lang, d) == 0, f"trainer build ({lang}) failed"
        out[lang] = d
    return out


@pytest.mark.parametrize("lang", LANGS)
def test_handout_has_no_answer_and_key_has_them(built, lang):
    handout, handout_boxes = _read(built[lang] / "quiz.html")
    key, key_boxes = _read(built[lang] / "quiz_key.html")
    questions = 19
    assert len(re.findall(r"\b[12345]\.\d\b", handout)) >= questions
    assert handout.count("answer-space") == 0                   # (a class, not text)
    assert (built[lang] / "quiz.html").read_text(encoding="utf-8").count('class="answer-space"') == questions
    # the key: a pass mark, points for every question, one answer per question
    answers = key_boxes
    assert len(answers) == questions, len(answers)
    assert re.search(r"60 ?%", key) and "9" in key and "14" in key and "19" in key
    # the handout: no admonition at all, and no sentence of any answer
    assert handout_boxes == []
    for a in answers:
        body = re.sub(r"^\s*(Answer|解答)[:：]?\s*", "", a)
        for chunk in re.split(r"(?<=[.。])\s*", body):
            chunk = chunk.strip()
            if len(chunk) >= 25:
                assert chunk not in handout, (lang, chunk)
    for telltale in ("0.99991", "4.54", "65504", "65,504", "Full (", "Partial (", "pass mark"):
        assert telltale not in handout, telltale


def test_key_numbers_are_the_math():
    text = (ROOT / "book/trainer/quiz.md").read_text(encoding="utf-8")
    p = lib.softmax(np.array([10.0, 0.0, 0.0]))
    assert f"{p[0]:.5f}" == "0.99991" and "0.99991" in text
    assert f"{p[1]:.2e}" == "4.54e-05" and r"4.54 \times 10^{-5}" in text
    assert f"{np.abs(lib.softmax_jacobian(p)).max():.1e}" == "9.1e-05" and r"9.1 \times 10^{-5}" in text
    assert float(np.finfo(np.float16).max) == 65504 and "65504" in text
    torch = pytest.importorskip("torch")                       # 5.3: where the float32 sigmoid gives 0
    assert torch.sigmoid(torch.tensor(-88.6)).item() > 0 and torch.sigmoid(torch.tensor(-88.8)).item() == 0
    assert "$-88.7$" in text
    # the points add up to the stated totals and the pass marks are 60 % of them, rounded up
    parts = {}
    for part, n in re.findall(r"\*\*(\d)\.\d [^*]+\*\* \[(\d) points?\]", text):
        parts[part] = parts.get(part, 0) + int(n)
    assert parts == {"1": 15, "2": 8, "3": 8, "4": 8, "5": 8}
    for total, mark in ((15, 9), (23, 14), (31, 19), (39, 24), (47, 29)):
        assert mark == -(-total * 3 // 5) and f"{mark} of {total}" in text


def test_learner_faces_have_no_key():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert "book/trainer" not in toc                            # not in the book, its sidebar or search
    guide = (ROOT / "book/instructor_guide.md").read_text(encoding="utf-8")
    assert "0.99991" not in guide and "Full (" not in guide
    for html in (ROOT / "_build/html", ROOT / "_build/ja/html"):
        if (html / "searchindex.js").is_file():                # a finished build of that edition
            assert not list(html.rglob("quiz*.html"))
            index = (html / "searchindex.js").read_text(encoding="utf-8")
            assert "pass mark" not in index and "Answer key" not in index
    learner = ROOT / "_build/notebooks"
    if learner.is_dir():
        assert not [p for p in learner.rglob("*.ipynb") if "quiz" in p.name]


@pytest.mark.parametrize("lang", LANGS)
def test_printed_to_pdf(built, lang):
    """The build printed both pages to PDF itself: a few A4 pages, no header or footer (no file path,
    date or page title in the text Chromium adds there), every font embedded, IPAexGothic in Japanese."""
    import build

    if build.find_chromium() is None:
        if os.environ.get("REQUIRE_BROWSER_TEST"):
            pytest.fail("Chromium not found (apt-get install -y chromium)")
        pytest.skip("Chromium not found (apt-get install -y chromium)")
    pages = {}
    for name in ("quiz", "quiz_key"):
        pdf = (built[lang] / f"{name}.pdf").read_bytes()
        pages[name] = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
        # every font with a font program (not a Type3 font, whose glyphs are drawn in the PDF itself)
        # carries it: one /FontFile per such font
        programs = re.findall(rb"/Subtype\s*/(?:CIDFontType[02]|TrueType|Type1C?|OpenType)\b", pdf)
        embedded = re.findall(rb"/FontFile[23]?\b", pdf)
        assert programs and len(embedded) == len(programs), (name, len(programs), len(embedded))
        assert b"file:" not in pdf and str(built[lang]).encode() not in pdf                 # no header
        if lang == "ja":
            assert b"IPAexGothic" in pdf, "the Japanese PDF is not drawn with the page's own font"
    # a few pages for five parts (the Japanese handout was 6 and its key 6 when part 5 was added)
    assert 3 <= pages["quiz"] <= 7, pages        # with room to write
    assert 1 <= pages["quiz_key"] <= 7, pages


def test_japanese_pages_carry_their_font(built):
    """The Japanese handout shows Japanese without a system font: its CSS serves IPAexGothic."""
    if "ja" not in built:
        pytest.skip("no Japanese quiz catalog")
    css = (built["ja"] / "_static" / "custom.css").read_text(encoding="utf-8")
    assert "@font-face" in css and "fonts/ipaexg.ttf" in css
    font = built["ja"] / "_static" / "fonts" / "ipaexg.ttf"
    assert font.stat().st_size > 1_000_000 and font.read_bytes()[:4] == b"\x00\x01\x00\x00"   # TrueType
    assert (built["ja"] / "_static" / "fonts" / "IPA_Font_License_Agreement_v1.0.txt").is_file()
    assert 'href="_static/custom.css' in (built["ja"] / "quiz.html").read_text(encoding="utf-8")


def _quiz_minutes() -> dict[str, int]:
    """{part: minutes} as the quiz states them in its part headings."""
    text = (ROOT / "book/trainer/quiz.md").read_text(encoding="utf-8")
    return {p: int(m) for p, m in re.findall(r"^## Part (\d): .*?(\d+) minutes\)\s*$", text, re.M)}


def _minutes(span: str) -> int:
    (h0, m0), (h1, m1) = (map(int, t.split(":")) for t in re.split(r"[–-]", span))
    return (h1 * 60 + m1) - (h0 * 60 + m0)


def test_the_guides_quiz_blocks_give_each_part_its_own_time():
    """Every schedule block of the instructor guide that runs quiz parts alone is as long as those parts'
    own times in the quiz (a session once gave parts 1 and 2 twenty minutes for a 25-minute quiz); so is
    the further session's sentence."""
    minutes = _quiz_minutes()
    assert set(minutes) == {"1", "2", "3", "4", "5"}, minutes
    guide = (ROOT / "book/instructor_guide.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^\| ([\d:]+[–-][\d:]+) \| quiz, parts? ([\d ,and]+), alone \|", guide, re.M)
    assert len(blocks) >= 2, blocks                      # the three-session plan and the one-day plan
    for span, parts in blocks:
        want = sum(minutes[p] for p in re.findall(r"\d", parts))
        assert _minutes(span) == want, f"{span}: quiz part(s) {parts} take {want} minutes by the quiz"
    for part, alone in re.findall(r"quiz\s+part (\d) \((\d+) minutes alone", guide):
        assert int(alone) == minutes[part], (part, alone)


def test_each_session_adds_up_to_its_stated_length():
    """A session's blocks run without gaps from 0:00 to the length in its heading."""
    guide = (ROOT / "book/instructor_guide.md").read_text(encoding="utf-8")
    sessions = re.findall(r"\*\*(Session \d[^*]*)\*\* \((\d) h(?: (\d+) min)?\)\n\n(.*?)\n\n", guide, re.S)
    assert len(sessions) == 3, [s[0] for s in sessions]
    for title, h, m, table in sessions:
        spans = re.findall(r"^\| (\d+:\d\d)[–-](\d+:\d\d) \|", table, re.M)
        assert spans and spans[0][0] == "0:00", title
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert end == start, f"{title}: a gap or overlap at {end}/{start}"
        assert _minutes(f"0:00–{spans[-1][1]}") == int(h) * 60 + int(m or 0), title
