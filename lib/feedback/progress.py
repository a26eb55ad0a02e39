"""An opt-in record of a learner's self-check results (the trainer's report of them: tools/cohort.py).

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
a JupyterHub, ``/home/*/.sqrt-dk-course/progress.jsonl``) with ``python tools/cohort.py``: the report is
a trainer's tool and lives with the trainer's tools, not in the package the learners import.
"""
from __future__ import annotations

import functools
import getpass
import json
import os
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
