"""Claims: how a page checks what its prose says, in one call that also records it.

Every sentence of a chapter that states a result is checked by a hidden cell. A check is one call::

    claims.claim("ratio", ratio, ">", 2.0, "best against best, still at least 2x")
    claims.check(ratio, ">", 2.0, "best against best, still at least 2x")
    claims.check(0.6, "<", ratio_shared, "about equally fast at SGD 0.1")
    claims.holds(all(r.steps_to(1.0) < STEPS for r in runs), "every scaled seed got there")

``claim`` glues the number under ``key`` for the page's prose (``{glue:text}`key:.1f```, through myst-nb,
when it is installed: lib does not depend on it) and checks it, so the number the reader sees and the
claim about it are one statement; ``check`` is the same without the glue (a claim about a number the
prose does not print). Both compare a value with a threshold (``>``, ``>=``, ``<``, ``<=``, ``==``, ``!=``) and know its
margin (how far the value is from failing, relative to the threshold); ``holds`` takes a condition that
has no single threshold. What happens on a failure depends on who runs the page:

- ``BOOK_CLAIMS=strict`` (the book's build and nbval, ``tools/build.py`` and the Makefile set it): a
  failed claim raises ``ClaimFailed``, which says the claim in words, the value and the threshold, so the
  build stops on a sentence that is no longer true.
- ``BOOK_CLAIMS=record`` (``make test-robust``): nothing raises; every claim is appended as one JSON line
  to ``BOOK_CLAIMS_LOG`` (page, its place on the page, words, value, threshold, margin, verdict), for the
  table of claims against CPU kernels and seed sets.
- unset (a learner's notebook, anywhere): nothing raises and nothing is printed. The learner's Run All
  never stops on a check of the book's own numbers: their machine may round differently.

``varies(key, pattern, within, text)`` states how far a page's glued numbers move on another machine or
another seed set ("the medians moved by up to 30 %"): it glues ``within`` as a percentage under ``key`` for
the prose, and the robustness check measures the spread of every glued number whose key matches
``pattern`` across its configurations and fails when one moved further than ``within``.

``seed(s)`` adds ``BOOK_SEED_OFFSET`` (default 0) to a seed, so that the robustness check can run every
seeded experiment of a page on a second, disjoint seed set; lib's seeded helpers call it.
"""
from __future__ import annotations

import json
import math
import operator
import os
import re
from numbers import Real

import numpy as np

__all__ = ["claim", "check", "holds", "varies", "ClaimFailed", "seed", "mode"]

_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
        "==": operator.eq, "!=": operator.ne}
_count = {"n": 0}


class ClaimFailed(AssertionError):
    """A claim of the page does not hold for the numbers this run produced."""


def mode() -> str:
    """``strict``, ``record`` or ``quiet`` (the learner's default), from ``BOOK_CLAIMS``."""
    m = os.environ.get("BOOK_CLAIMS", "").strip().lower()
    if m not in {"", "strict", "record", "quiet"}:
        raise ValueError(f"BOOK_CLAIMS must be strict, record or quiet (or unset), not {m!r}")
    return m or "quiet"


def seed(s: int) -> int:
    """``s`` plus ``BOOK_SEED_OFFSET``: the same seed on the book's own set (offset 0), another on the
    robustness check's second set."""
    offset = os.environ.get("BOOK_SEED_OFFSET", "0").strip() or "0"
    try:
        return int(s) + int(offset)
    except ValueError:
        raise ValueError(f"BOOK_SEED_OFFSET must be an integer, not {offset!r}") from None


def _number(x, what):
    if isinstance(x, bool) or not isinstance(x, Real) and not hasattr(x, "__float__"):
        raise TypeError(f"claims.check: {what} must be a real number, not {type(x).__name__}")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise TypeError(f"claims.check: {what} must be a real number (a single value), not {x!r}") from None


def _margin(value: float, op: str, threshold: float) -> float | None:
    """How far ``value`` is from failing, as a fraction of the threshold (or of 1 when it is 0):
    positive when the claim holds, negative when it fails; None for == and !=."""
    if op in ("==", "!="):
        return None
    scale = abs(threshold) if threshold != 0 else 1.0
    gap = value - threshold if op in (">", ">=") else threshold - value
    return gap / scale


def _record(entry: dict) -> None:
    _count["n"] += 1
    entry = {"page": os.environ.get("BOOK_CLAIMS_PAGE", ""), "n": _count["n"], **entry}
    path = os.environ.get("BOOK_CLAIMS_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _outcome(ok: bool, text: str, entry: dict) -> bool:
    m = mode()
    if m == "record":
        _record({"claim": text, "ok": ok, **entry})
    elif m == "strict" and not ok:
        detail = ""
        if "value" in entry:
            detail = f": {entry['value']:.6g} {entry['op']} {entry['threshold']:.6g} is false"
        raise ClaimFailed(f"claim no longer holds, {text!r}{detail}")
    return ok


def check(value, op: str, threshold, text: str) -> bool:
    """The claim ``value op threshold`` (say it in words in ``text``). Returns whether it holds."""
    return _check(value, op, threshold, text, {})


def _check(value, op, threshold, text, extra: dict) -> bool:
    if op not in _OPS:
        raise ValueError(f"claims.check: op must be one of {sorted(_OPS)}, not {op!r}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("claims.check: say the claim in words (text)")
    v, t = _number(value, "value"), _number(threshold, "threshold")
    ok = bool(_OPS[op](v, t)) and not math.isnan(v)
    return _outcome(ok, text, {**extra, "value": v, "op": op, "threshold": t, "margin": _margin(v, op, t)})


def claim(key: str, value, op: str, threshold, text: str) -> bool:
    """Glue ``value`` under ``key`` (for ``{glue:text}`key```) and check ``value op threshold``, the claim
    said in words in ``text``. Returns whether it holds. The glue needs myst-nb (the book's build); where
    it is not installed (a learner's environment) only the check runs."""
    if not isinstance(key, str) or not key.strip():
        raise ValueError(f"claims.claim: key must be the glue key the page reads (a non-empty str), not {key!r}")
    ok = _check(value, op, threshold, text, {"key": key})   # first: a bad value or op raises before anything is glued
    _glue(key, value)
    return ok


def _glue(key: str, value) -> None:
    """Glue ``value`` for the page's prose through myst-nb, where it is installed (the book's build)."""
    try:
        from myst_nb import glue  # noqa: PLC0415 - optional: lib does not depend on the book stack
    except ImportError:
        return
    if isinstance(value, np.generic):   # a NumPy scalar would be glued as its repr, "np.float64(...)",
        value = value.item()            # which a {glue:text}`key:.2f` cannot format
    glue(key, value, display=False)


def varies(key: str, pattern: str, within: float, text: str) -> float:
    """The page's statement that its glued numbers whose keys match ``pattern`` (a regular expression,
    matched whole) move by at most ``within`` (a fraction: 0.3 for 30 %) between configurations of the
    robustness check: (largest - smallest) / smallest of each number. Glues ``100 * within`` under
    ``key``; recorded for ``make test-robust``, which checks it. Returns ``100 * within``."""
    if not isinstance(key, str) or not key.strip():
        raise ValueError(f"claims.varies: key must be the glue key the page reads, not {key!r}")
    try:
        re.compile(pattern)
    except (re.error, TypeError) as e:
        raise ValueError(f"claims.varies: pattern must be a regular expression over glue keys: {e}") from None
    w = _number(within, "within")
    if not 0 < w < 10:
        raise ValueError(f"claims.varies: within is a fraction (0.3 for 30 %), not {within!r}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("claims.varies: say the statement in words (text)")
    if mode() == "record":
        _record({"varies": pattern, "within": w, "claim": text, "key": key})
    _glue(key, 100 * w)
    return 100 * w


def holds(condition, text: str) -> bool:
    """A claim with no single threshold (a condition over many runs, an equality of arrays)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("claims.holds: say the claim in words (text)")
    if type(condition).__name__ not in ("bool", "bool_"):
        raise TypeError(f"claims.holds: condition must be True or False, not {type(condition).__name__} "
                        "(reduce an array with .all() or .any(), or wrap the expression in bool())")
    return _outcome(bool(condition), text, {})
