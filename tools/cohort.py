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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lib import progress  # noqa: E402


ROOT = Path(__file__).resolve().parents[1]
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
    records = progress.gather(a.paths)
    if not records:
        print(f"no self-check records found in {', '.join(a.paths)}", file=sys.stderr)
        return 1
    folder = Path(a.notebooks) if a.notebooks else ROOT / "_build" / "notebooks" / a.lang / "learner"
    names = exercise_names(folder)
    if not names:
        print(f"no learner notebooks in {folder}: exercises are named by their check functions "
              "(build the book, or pass --notebooks)", file=sys.stderr)
    summary = progress.summarise(name_exercises(records, names))
    out.mkdir(parents=True, exist_ok=True)
    title = "# セルフチェックの報告" if a.lang == "ja" else "# Self-check report"
    (out / "report.md").write_text(title + "\n\n" + progress.report_markdown(summary), encoding="utf-8")
    if a.lang == "ja":              # Japanese exercise names on the figure's axis, not empty boxes
        import matplotlib
        import matplotlib_fontja  # noqa: F401 - registers the bundled IPAexGothic with matplotlib

        matplotlib.rcParams["font.family"] = ["IPAexGothic", "DejaVu Sans"]
    progress.report_figure(summary, out / "report.png")
    print(f"{len(summary['learners'])} learners, {len(summary['exercises'])} exercises: "
          f"{out / 'report.md'}, {out / 'report.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
