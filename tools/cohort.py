"""The trainer's cohort report from the learners' opt-in self-check records (lib.progress).

    python tools/cohort.py [--lang ja] OUT PATH [PATH ...]

PATH is a learner's record (``progress.jsonl``, renamed as you like), a folder of collected records
(every ``*.jsonl`` below it), or a folder of home folders such as a JupyterHub's ``/home``, where each
learner's record is ``<home>/.sqrt-dk-course/progress.jsonl``. OUT receives ``report.md`` (one table
per learner, one per exercise) and ``report.png`` (learner × exercise: passed, trying, stuck, not
tried, with the number of attempts). Nothing is sent anywhere; the records stay where they are.

Exercises are named as the book names them ("Exercise N.M (Title)", or with ``--lang ja``
「演習 N.M（タイトル）」): the learner notebooks of that language (``_build/notebooks/<lang>/learner``,
or ``--notebooks DIR``) say which exercise's cell calls which self-check. A check called outside any
exercise, or in a notebook that is not there, keeps its function's name.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lib import progress  # noqa: E402  (where a learner's record lives: progress.DIRNAME, FILENAME)


ROOT = Path(__file__).resolve().parents[1]


def _files(paths) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            hub = sorted(p.glob(f"*/{progress.DIRNAME}/{progress.FILENAME}"))       # a folder of home folders
            out += hub if hub else sorted(p.rglob("*.jsonl"))     # or a folder of collected files
        elif p.is_file():
            out.append(p)
    return out


def gather(paths) -> list[dict]:
    """Every verdict record in ``paths`` (files, folders of ``*.jsonl``, or a folder of home folders),
    each with ``exercise`` (notebook and check). Lines that are not records are skipped."""
    records = []
    for f in _files(paths):
        learner = None
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if not isinstance(r, dict):
                continue
            learner = r.get("learner") or learner or f.parent.parent.name
            if r.get("event") == "start" or "ok" not in r:
                continue
            r["learner"] = learner
            label = r.get("check", "?") + (f" ({r['name']})" if r.get("name") else "")
            r["exercise"] = f"{r['notebook']}: {label}" if r.get("notebook") else label
            records.append(r)
    return records


def summarise(records: list[dict], stuck_after: int = 3) -> dict:
    """Per learner and per exercise: attempts, passed or not, the mistakes seen.

    A learner is *stuck* on an exercise after ``stuck_after`` or more attempts without a pass.
    Attempts count every shown verdict up to and including the first pass.
    """
    cells: dict[tuple[str, str], dict] = {}
    for r in sorted(records, key=lambda r: r.get("time", "")):
        c = cells.setdefault((r["learner"], r["exercise"]),
                             {"attempts": 0, "passed": False, "mistakes": Counter(), "last": ""})
        c["last"] = max(c["last"], r.get("time", ""))
        if c["passed"]:
            continue
        c["attempts"] += 1
        if r["ok"]:
            c["passed"] = True
        elif r.get("mistake"):
            c["mistakes"][r["mistake"]] += 1
    for c in cells.values():
        c["stuck"] = not c["passed"] and c["attempts"] >= stuck_after
    learners = sorted({k[0] for k in cells})
    exercises = sorted({k[1] for k in cells})
    per_learner = {}
    for who in learners:
        mine = [c for (w, _), c in cells.items() if w == who]
        per_learner[who] = {"tried": len(mine), "passed": sum(c["passed"] for c in mine),
                            "stuck": sorted(e for (w, e), c in cells.items() if w == who and c["stuck"]),
                            "last": max(c["last"] for c in mine)}
    per_exercise = {}
    for ex in exercises:
        theirs = [c for (_, e), c in cells.items() if e == ex]
        passed = [c["attempts"] for c in theirs if c["passed"]]
        mistakes = sum((c["mistakes"] for c in theirs), Counter())
        per_exercise[ex] = {"tried": len(theirs), "passed": len(passed),
                            "stuck": sorted(w for (w, e), c in cells.items() if e == ex and c["stuck"]),
                            "attempts_to_pass": (statistics.median(passed) if passed else None),
                            "top_mistake": mistakes.most_common(1)[0][0] if mistakes else ""}
    return {"learners": learners, "exercises": exercises, "cells": cells,
            "per_learner": per_learner, "per_exercise": per_exercise}


def report_markdown(summary: dict) -> str:
    """The two tables of the report (per learner, per exercise) as Markdown."""
    lines = ["## Per learner", "", "| learner | exercises tried | passed | stuck on | last activity |",
             "| --- | --- | --- | --- | --- |"]
    for who, s in summary["per_learner"].items():
        lines.append(f"| {who} | {s['tried']} | {s['passed']} | {', '.join(s['stuck']) or '-'} | {s['last']} |")
    lines += ["", "## Per exercise", "",
              "| exercise | learners tried | passed | median attempts to pass | most common mistake | stuck |",
              "| --- | --- | --- | --- | --- | --- |"]
    for ex, s in summary["per_exercise"].items():
        med = "-" if s["attempts_to_pass"] is None else str(s["attempts_to_pass"])
        lines.append(f"| {ex} | {s['tried']} | {s['passed']} | {med} | {s['top_mistake'] or '-'} | "
                     f"{', '.join(s['stuck']) or '-'} |")
    return "\n".join(lines) + "\n"


def report_figure(summary: dict, path) -> Path:
    """A learner × exercise grid: passed (with its attempts), stuck, trying, or not tried."""
    import matplotlib  # noqa: PLC0415 - lazy: `import lib` must not import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.colors import ListedColormap  # noqa: PLC0415

    learners, exercises = summary["learners"], summary["exercises"]
    state = [[0] * len(exercises) for _ in learners]   # 0 not tried, 1 trying, 2 stuck, 3 passed
    for i, who in enumerate(learners):
        for j, ex in enumerate(exercises):
            c = summary["cells"].get((who, ex))
            if c:
                state[i][j] = 3 if c["passed"] else (2 if c["stuck"] else 1)
    from matplotlib.patches import Patch  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(max(6.0, 2.5 + 0.6 * len(exercises)),
                                    max(3.0, 2.2 + 0.35 * len(learners))))
    colours = ["#eeeeee", "#f2c14e", "#d1495b", "#66a182"]
    ax.imshow(state, cmap=ListedColormap(colours), vmin=0, vmax=3, aspect="auto")
    for i, who in enumerate(learners):
        for j, ex in enumerate(exercises):
            c = summary["cells"].get((who, ex))
            if c:
                ax.text(j, i, str(c["attempts"]), ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(exercises)), exercises, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(len(learners)), learners, fontsize=8)
    ax.set_title("Self-checks per learner (the number: attempts)", fontsize=10)
    ax.legend(handles=[Patch(color=c, label=t) for c, t in
                       zip(colours[::-1], ["passed", "stuck", "trying", "not tried"])],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def by_learner_exercise(summary: dict) -> dict:
    """``{learner: {exercise: (passed, attempts)}}``: the grid of the report, for tests and scripts."""
    out: dict = defaultdict(dict)
    for (who, ex), c in summary["cells"].items():
        out[who][ex] = (c["passed"], c["attempts"])
    return dict(out)


# an exercise's heading in a learner notebook: **Exercise N.M (Title)** or **演習 N.M（タイトル）**
EXERCISE = re.compile(r"\*\*(?:Exercise|演習)\s*(\d+\.\d+)\s*[(（](.*?)[)）]\*\*")
CHECK_CALL = re.compile(r"\b(check_\w+)\s*\(")


def exercise_names(folder: Path) -> dict[tuple[str, str], str]:
    """``{(notebook, check): "Exercise N.M (Title)"}`` from the learner notebooks in ``folder``: each
    self-check called in a code cell belongs to the last exercise heading above it (a new section ends an
    exercise). A check that two exercises of one notebook call gets both names."""
    names: dict[tuple[str, str], list[str]] = {}
    for path in sorted(Path(folder).glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        current = None
        for cell in cells:
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            if cell["cell_type"] == "markdown":
                found = EXERCISE.findall(src)
                if found:
                    number, title = found[-1]
                    word = "演習" if "演習" in src else "Exercise"
                    current = f"{word} {number}（{title}）" if word == "演習" else f"{word} {number} ({title})"
                elif re.match(r"\s*#{1,3} ", src) and "<summary>" not in src:
                    current = None
                continue
            if current:
                for check in CHECK_CALL.findall(src):
                    got = names.setdefault((path.stem, check), [])
                    if current not in got:
                        got.append(current)
    return {k: " / ".join(v) for k, v in names.items()}


def name_exercises(records: list[dict], names: dict[tuple[str, str], str]) -> list[dict]:
    """Each record's ``exercise`` as the book names it, where the notebooks say; a record without a
    notebook name (a check run through the REST API) is named when only one exercise calls its check."""
    by_check: dict[str, set[str]] = {}
    for (_, check), name in names.items():
        by_check.setdefault(check, set()).add(name)
    for r in records:
        name = names.get((r.get("notebook", ""), r.get("check", "")))
        if name is None and not r.get("notebook") and len(by_check.get(r.get("check", ""), ())) == 1:
            (name,) = by_check[r["check"]]
        if name:
            r["exercise"] = name + (f" [{r['name']}]" if r.get("name") else "")
    return records


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lang", choices=("en", "ja"), default="en", help="the language of the exercise names")
    ap.add_argument("--notebooks", help="the learner notebooks to read the exercise names from "
                                        "(default _build/notebooks/<lang>/learner)")
    ap.add_argument("out")
    ap.add_argument("paths", nargs="+")
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    a = ap.parse_args(argv)
    out = Path(a.out)
    records = gather(a.paths)
    if not records:
        print(f"no self-check records found in {', '.join(a.paths)}", file=sys.stderr)
        return 1
    folder = Path(a.notebooks) if a.notebooks else ROOT / "_build" / "notebooks" / a.lang / "learner"
    names = exercise_names(folder)
    if not names:
        print(f"no learner notebooks in {folder}: exercises are named by their check functions "
              "(build the book, or pass --notebooks)", file=sys.stderr)
    summary = summarise(name_exercises(records, names))
    out.mkdir(parents=True, exist_ok=True)
    title = "# セルフチェックの報告" if a.lang == "ja" else "# Self-check report"
    (out / "report.md").write_text(title + "\n\n" + report_markdown(summary), encoding="utf-8")
    if a.lang == "ja":              # Japanese exercise names on the figure's axis, not empty boxes
        import matplotlib
        import matplotlib_fontja  # noqa: F401 - registers the bundled IPAexGothic with matplotlib

        matplotlib.rcParams["font.family"] = ["IPAexGothic", "DejaVu Sans"]
    report_figure(summary, out / "report.png")
    print(f"{len(summary['learners'])} learners, {len(summary['exercises'])} exercises: "
          f"{out / 'report.md'}, {out / 'report.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
