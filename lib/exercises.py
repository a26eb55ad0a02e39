"""Self-checks for single exercises: the expected answer is computed here, from the exercise's inputs.

A chapter's exercise cell passes the learner's answer and the exercise's *inputs*; the right answer
never appears in any notebook cell (not even a hidden one), so a learner cannot read it off. Each
function returns a :class:`lib.selfcheck.Verdict` and never raises on the learner's answer. Messages
go through :func:`lib.i18n.tr`, so they follow the book's language.

One section per chapter; add a function to your chapter's section, export it in ``__all__``, and test
it in ``tests/test_exercises.py`` against an independent computation.
"""
from __future__ import annotations

import numpy as np

from .i18n import tr
from .selfcheck import Verdict, check_array, check_number

__all__: list[str] = []

# --- chapter 1 -----------------------------------------------------------------------------------


# --- chapter 2 -----------------------------------------------------------------------------------


# --- chapter 3 -----------------------------------------------------------------------------------


# --- chapter 4 -----------------------------------------------------------------------------------


# --- chapter 5 -----------------------------------------------------------------------------------


# --- chapter 6 -----------------------------------------------------------------------------------


# --- chapter 7 -----------------------------------------------------------------------------------


# --- chapter 8 -----------------------------------------------------------------------------------


# --- chapter 9 -----------------------------------------------------------------------------------


# --- chapter 10 ----------------------------------------------------------------------------------
