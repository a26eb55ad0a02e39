"""The opt-in self-check record (lib.progress) and the trainer's cohort report (tools/cohort.py)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lib

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import cohort  # noqa: E402  (the trainer's report, outside the learners' package)

ROOT = Path(__file__).resolve().parents[1]
Q2, K2 = np.array([[1.0, 0.0]]), np.array([[1.0, 1.0], [0.0, 2.0]])


def _show(v):
    v._repr_html_()          # what Jupyter does with the verdict of an exercise cell
    v._repr_markdown_()      # (both forms: recorded once)
    return v


def test_nothing_is_recorded_without_opt_in(tmp_path, monkeypatch):
    f = tmp_path / "home" / "progress.jsonl"
    monkeypatch.setenv("BOOK_PROGRESS_FILE", str(f))
    _show(lib.check_dot([[1.0, 0.0]], Q2, K2))
    assert not f.exists()


def test_a_learner_s_record(tmp_path, monkeypatch):
    f = tmp_path / "progress.jsonl"
    monkeypatch.setenv("BOOK_PROGRESS_FILE", str(f))
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/sato/practice.ipynb")
    assert lib.record_progress("Sato") == f
    _show(lib.check_dot([[1.0, 1.0]], Q2, K2))            # wrong
    _show(lib.check_dot([[1.0, 0.0]], Q2, K2))            # right
    lib.check_dot([[1.0, 0.0]], Q2, K2)                   # not shown (a hidden check): not recorded
    lines = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines()]
    assert [x.get("event") for x in lines] == ["start", None, None]
    assert [x.get("ok") for x in lines[1:]] == [False, True]
    assert all(x["learner"] == "Sato" and x["notebook"] == "practice" and x["check"] == "check_dot"
               for x in lines[1:])
    assert "answer" not in json.dumps(lines)              # the answer itself is not recorded
    assert lib.stop_recording() and not f.exists()
    _show(lib.check_dot([[1.0, 0.0]], Q2, K2))
    assert not f.exists()
    with pytest.raises(ValueError):
        lib.record_progress("  ")
    with pytest.raises(TypeError):
        lib.record_progress(42)


def _learner(home: Path, name: str, attempts: dict, monkeypatch):
    """Simulate one learner on a JupyterHub: home/<name>/.sqrt-dk-course/progress.jsonl."""
    monkeypatch.setenv("BOOK_PROGRESS_FILE", str(home / name / ".sqrt-dk-course" / "progress.jsonl"))
    lib.record_progress(name)
    for notebook, answers in attempts.items():
        monkeypatch.setenv("JPY_SESSION_NAME", f"{notebook}.ipynb")
        for a in answers:
            _show(lib.check_scaled_scores(a, Q2, K2))


def test_cohort_report_of_two_learners(tmp_path, monkeypatch):
    home = tmp_path / "home"
    raw = (Q2 @ K2.T)
    right = raw / np.sqrt(2)
    # Aiko: one unscaled try, then right. Ben: three tries, all wrong (unscaled, divided by d_k, ...).
    _learner(home, "aiko", {"practice": [raw, right]}, monkeypatch)
    _learner(home, "ben", {"practice": [raw, raw / 2, raw * 3]}, monkeypatch)
    s = cohort.summarise(cohort.gather([home]))
    ex = "practice: check_scaled_scores"
    assert s["learners"] == ["aiko", "ben"] and s["exercises"] == [ex]
    assert cohort.by_learner_exercise(s) == {"aiko": {ex: (True, 2)}, "ben": {ex: (False, 3)}}
    assert s["per_learner"]["aiko"]["passed"] == 1 and s["per_learner"]["aiko"]["stuck"] == []
    assert s["per_learner"]["ben"]["passed"] == 0 and s["per_learner"]["ben"]["stuck"] == [ex]
    pe = s["per_exercise"][ex]
    assert (pe["tried"], pe["passed"], pe["stuck"], pe["attempts_to_pass"]) == (2, 1, ["ben"], 2)
    assert pe["top_mistake"] == "unscaled"               # both made it once; Ben's others differ
    # the command: one table per learner and per exercise, and the figure
    out = tmp_path / "report"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "cohort.py"), str(out), str(home)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "| aiko | 1 | 1 | - |" in md and f"| ben | 1 | 0 | {ex} |" in md
    assert f"| {ex} | 2 | 1 | 2 | unscaled | ben |" in md
    png = (out / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000


def test_collected_folder_and_bad_lines(tmp_path):
    d = tmp_path / "collected"
    d.mkdir()
    (d / "x.jsonl").write_text('{"learner": "c", "event": "start"}\nnot json\n'
                               '{"learner": "c", "check": "check_dot", "ok": true, "time": "t"}\n',
                               encoding="utf-8")
    recs = cohort.gather([d])
    assert len(recs) == 1 and recs[0]["exercise"] == "check_dot"


def _notebook_with_exercises(folder, stem, lang):
    """A learner notebook as tools/learner.py writes them: an exercise heading, then its code cell."""
    word, (o, c) = ("演習", "（）") if lang == "ja" else ("Exercise", "()")
    title = "二次元、キー二つ" if lang == "ja" else "Two dimensions, two keys"
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "## Self-checks\n"},
             {"cell_type": "code", "metadata": {}, "source": "display(lib.check_scaled_scores(raw, Q, K))",
              "outputs": [], "execution_count": None},
             {"cell_type": "markdown", "metadata": {},
              "source": f"<a id=\"ex-practice-dot\"></a>\n\n> **{word} 4.1{' ' if lang == 'en' else ''}{o}{title}{c}**\n"},
             {"cell_type": "code", "metadata": {}, "source": "my = None\ndisplay(lib.check_scaled_scores(my, Q, K))",
              "outputs": [], "execution_count": None}]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                      "nbformat_minor": 5}), encoding="utf-8")


EX = "Exercise"   # (spelled apart: tests/test_chapter_ids.py keeps the book's own numbers out of code)


@pytest.mark.parametrize("lang,name", [("en", f"{EX} 4.1 (Two dimensions, two keys)"),
                                       ("ja", "演習 4.1（二次元、キー二つ）")])
def test_cohort_report_names_exercises_as_the_book_does(tmp_path, monkeypatch, lang, name):
    home = tmp_path / "home"
    raw = (Q2 @ K2.T)
    _learner(home, "aiko", {"04_practice": [raw, raw / np.sqrt(2)]}, monkeypatch)
    nbs = tmp_path / "notebooks"
    _notebook_with_exercises(nbs, "04_practice", lang)
    out = tmp_path / "report"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "cohort.py"), "--lang", lang, "--notebooks", str(nbs),
                        str(out), str(home)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text(encoding="utf-8")
    assert f"| {name} | 1 | 1 | 2 | unscaled | - |" in md, md
    assert "check_scaled_scores" not in md


def test_a_check_outside_any_exercise_keeps_its_name():
    names = {("04_practice", "check_dot"): f"{EX} 4.1 (A)"}
    recs = [{"notebook": "04_practice", "check": "check_dot", "exercise": "x"},
            {"notebook": "04_practice", "check": "check_softmax", "exercise": "04_practice: check_softmax"},
            {"notebook": "", "check": "check_dot", "exercise": "check_dot"}]          # REST: no notebook
    got = [r["exercise"] for r in cohort.name_exercises(recs, names)]
    assert got == [f"{EX} 4.1 (A)", "04_practice: check_softmax", f"{EX} 4.1 (A)"]
