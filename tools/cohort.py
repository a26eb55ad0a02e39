"""The trainer's cohort report from the learners' opt-in self-check records (lib.progress).

    python tools/cohort.py OUT PATH [PATH ...]

PATH is a learner's record (``progress.jsonl``, renamed as you like), a folder of collected records
(every ``*.jsonl`` below it), or a folder of home folders such as a JupyterHub's ``/home``, where each
learner's record is ``<home>/.sqrt-dk-course/progress.jsonl``. OUT receives ``report.md`` (one table
per learner, one per exercise) and ``report.png`` (learner × exercise: passed, trying, stuck, not
tried, with the number of attempts). Nothing is sent anywhere; the records stay where they are.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lib import progress  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out, paths = Path(argv[0]), argv[1:]
    records = progress.gather(paths)
    if not records:
        print(f"no self-check records found in {', '.join(paths)}", file=sys.stderr)
        return 1
    summary = progress.summarise(records)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text("# Self-check report\n\n" + progress.report_markdown(summary),
                                   encoding="utf-8")
    progress.report_figure(summary, out / "report.png")
    print(f"{len(summary['learners'])} learners, {len(summary['exercises'])} exercises: "
          f"{out / 'report.md'}, {out / 'report.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
