"""Feedback for the exercises: one module per notebook, one function per exercise.

A notebook imports its own module, so the file is one hop away and names never clash::

    from helpers.check import nb02 as check
    check.choose_gpu(choose_gpu)

Each function takes the learner's answer (often a function the check calls on inputs it makes up,
so a constant that happens to be right on this machine does not pass) and returns a
:class:`Feedback`: a line that says what is right, or what is wrong and where to look. Wrong answers
never raise: a learner gets an explanation, not a traceback.
"""

from __future__ import annotations

from helpers.check._feedback import Feedback, not_filled, whole_number, wrong

__all__ = ["Feedback", "not_filled", "whole_number", "wrong"]
