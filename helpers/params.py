"""Validation of the notebooks' ``parameters`` cells (every notebook, through ``helpers.setup``).

Every notebook hands its parameters to ``helpers.setup``, which calls :func:`validate` before any
heavy work, so a bad value fails in the first second with a message that names the parameter and
what it accepts. The rules for every parameter used anywhere in the course live here, in one table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


@dataclass(frozen=True)
class Rule:
    """How one parameter is checked: `check(value)` is True when the value is allowed."""

    allowed: str
    check: Callable[[Any], bool]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_in(low: int, high: int | None = None) -> Callable[[Any], bool]:
    return lambda v: _is_int(v) and v >= low and (high is None or v <= high)


def _int_list(low: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, (list, tuple)) and len(v) > 0 and all(_is_int(x) and x >= low for x in v)


RULES: dict[str, Rule] = {
    "SMOKE": Rule("True or False", lambda v: isinstance(v, bool)),
    "SEED": Rule("an integer >= 0", _int_in(0)),
    "RESULTS_PATH": Rule('a file path ending in .json, or "" to write nothing',
                         lambda v: isinstance(v, str) and (v == "" or v.endswith(".json"))),
    "EPOCHS": Rule("an integer from 1 to 1000", _int_in(1, 1000)),
    "SIZES": Rule("a non-empty list of integers >= 1", _int_list(1)),
    "BATCH_SIZE": Rule("an integer from 1 to 65536", _int_in(1, 65536)),
    "BATCH_SIZES": Rule("a non-empty list of integers >= 1", _int_list(1)),
    "POLICY": Rule(" or ".join(repr(p) for p in POLICIES), lambda v: v in POLICIES),
    "N_REPLICAS": Rule("an integer from 1 to 64", _int_in(1, 64)),
    "N_WORKERS": Rule("an integer from 1 to 8", _int_in(1, 8)),
    "PRICE_PER_HOUR": Rule("a dict {GPU name from data/gpu_specs.csv: your price per hour, a number > 0}, or {} "
                           "to skip the cost", lambda v: isinstance(v, dict) and all(
                               isinstance(k, str) and isinstance(p, (int, float)) and not isinstance(p, bool)
                               and p > 0 for k, p in v.items())),
}


def validate(params: dict[str, Any]) -> dict[str, Any]:
    """Check every parameter against its rule; return them unchanged or raise ``ValueError``.

    Example:
        >>> validate({"SMOKE": True, "SEED": 0, "RESULTS_PATH": ""})["SEED"]
        0
        >>> validate({"SEED": "x"})
        Traceback (most recent call last):
        ValueError: SEED='x' is not allowed: use an integer >= 0.
    """
    unknown = sorted(set(params) - set(RULES))
    if unknown:
        raise ValueError(f"Unknown parameter(s) {', '.join(unknown)}: allowed names are {', '.join(RULES)}.")
    for name, value in params.items():
        rule = RULES[name]
        if not rule.check(value):
            raise ValueError(f"{name}={value!r} is not allowed: use {rule.allowed}.")
    return params
