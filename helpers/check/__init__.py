"""Feedback for the exercises: one function per exercise, named for what it checks.

Each function takes the learner's answer and returns a :class:`Feedback`, which a notebook cell
shows as a line that says what is right, or what is wrong and where to look. Wrong answers never
raise: a learner gets an explanation, not a traceback.

Exercises by notebook: 00 (below), 01 (:mod:`helpers.check.nb01`), 02 (:mod:`helpers.check.nb02`);
all are importable from ``helpers.check`` directly.
"""

from __future__ import annotations

from helpers.check._feedback import Feedback, not_filled, whole_number, wrong
from helpers.check.nb00 import bf16_tensor_gpus, gpu_count

__all__ = ["Feedback", "not_filled", "whole_number", "wrong", "gpu_count", "bf16_tensor_gpus"]

# Later notebooks register their checks by importing them here.
try:  # pragma: no cover - present once notebook 01's checks exist
    from helpers.check.nb01 import *  # noqa: F403
    from helpers.check.nb01 import __all__ as _nb01_all
    __all__ += _nb01_all
except ImportError:
    pass
try:  # pragma: no cover
    from helpers.check.nb02 import *  # noqa: F403
    from helpers.check.nb02 import __all__ as _nb02_all
    __all__ += _nb02_all
except ImportError:
    pass
