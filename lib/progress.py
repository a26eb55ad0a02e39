"""An opt-in record of a learner's self-check results, and the trainer's cohort report.

Nothing is recorded until the learner asks for it, and nothing is ever sent anywhere: the record is
one local file of JSON lines, by default ``~/.sqrt-dk-course/progress.jsonl`` (``BOOK_PROGRESS_FILE``
names another). A learner turns recording on once, in any notebook::

    lib.record_progress("Sato")        # your name as the trainer should see it (default: your login)

From then on every self-check verdict that is *shown* in a notebook (the last line of an exercise
cell, or ``display(...)``) appends one line to that file, in every notebook and every later session,
until ``lib.stop_recording()`` (which deletes the file; copying it first keeps the data)::

    {"learner": "Sato", "notebook": "03_variance", "check": "check_scaled_variance",
     "name": "Var(q·k/√d_k)", "ok": false, "mistake": "unscaled", "time": "2026-12-01T09:41:07+09:00"}

``notebook`` is the running notebook's name where Jupyter tells the kernel (``JPY_SESSION_NAME``,
set by Jupyter Server 2 and JupyterLab 4), else empty. The answer itself is not recorded.

The trainer gathers the files (a folder of copies named anything ``*.jsonl``, or the home folders of
a JupyterHub, ``/home/*/.sqrt-dk-course/progress.jsonl``) with :func:`gather` and :func:`summarise`,
or from the command line with ``python tools/cohort.py``.
"""
from __future__ import annotations

import functools
import getpass
import statistics
import json
import os
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

__all__ = ["record_progress", "stop_recording", "progress_file"]

DIRNAME = ".sqrt-dk-course"
FILENAME = "progress.jsonl"


def progress_file() -> Path:
    """Where this learner's record is (or would be) kept."""
    env = os.environ.get("BOOK_PROGRESS_FILE")
    return Path(env).expanduser() if env else Path.home() / DIRNAME / FILENAME


def _read_learner(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8") as f:
            first = json.loads(f.readline())
        return first.get("learner")
    except (OSError, ValueError, AttributeError):
        return None


def record_progress(learner: str | None = None) -> Path:
    """Turn recording on (opt-in) under the name ``learner``; return the file it writes.

    Raises ``TypeError`` for a name that is not a string, ``ValueError`` for an empty one.
    """
    if learner is None:
        learner = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
    if not isinstance(learner, str):
        raise TypeError(f"learner must be a string (your name); got {type(learner).__name__}")
    learner = learner.strip()
    if not learner:
        raise ValueError("learner must be a non-empty name")
    path = progress_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    _append(path, {"learner": learner, "event": "start", "time": _now()})
    return path


def stop_recording() -> bool:
    """Turn recording off: delete the record. True if there was one."""
    path = progress_file()
    if path.is_file():
        path.unlink()
        return True
    return False


def _now() -> str:
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")


def _append(path: Path, record: dict) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")


def _notebook() -> str:
    name = os.environ.get("JPY_SESSION_NAME", "")
    return Path(name).stem if name else ""


def tag(verdict, check: str, name: str | None) -> None:
    """Remember which check made ``verdict`` (used when it is shown). Never raises."""
    try:
        object.__setattr__(verdict, "_progress_source", (check, name))
    except Exception:  # noqa: BLE001 - recording must never break a check
        pass


def on_shown(verdict) -> None:
    """Append ``verdict`` to the record if recording is on and this verdict was not recorded yet."""
    source = getattr(verdict, "_progress_source", None)
    if source is None or getattr(verdict, "_progress_done", False):
        return
    path = progress_file()
    if not path.is_file():
        return
    try:
        object.__setattr__(verdict, "_progress_done", True)
        check, name = source
        _append(path, {"learner": _read_learner(path) or "?", "notebook": _notebook(), "check": check,
                       "name": name or "", "ok": bool(verdict.ok),
                       "mistake": getattr(verdict, "mistake", None), "time": _now()})
    except Exception:  # noqa: BLE001 - a full disk or a read-only home must not break the notebook
        pass


def recorded(fn):
    """Wrap a public self-check so that its verdict knows its source (for :func:`on_shown`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        v = fn(*args, **kwargs)
        tag(v, fn.__name__, kwargs.get("name"))
        return v

    return wrapper


# --- the trainer's side ------------------------------------------------------------------------------

def _files(paths) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            hub = sorted(p.glob(f"*/{DIRNAME}/{FILENAME}"))       # a folder of home folders
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
