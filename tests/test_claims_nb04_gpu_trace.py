"""Notebook 04's claims on a GPU whose trace has no GPU side: the page must say so in one sentence, with what to do.

Fed the hand-written GPU run (``tests/claims/gpu_nb04.json``) with its trace's GPU events set to 0, as when
CUPTI refuses the user (``helpers.pipelines.gpu_trace_note``).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from claims import nb04

from helpers import pipelines

DATA = json.loads((Path(__file__).resolve().parent / "claims" / "gpu_nb04.json").read_text())


def run_with(gpu_events: int, extra: list[str]) -> SimpleNamespace:
    text = "\n".join(DATA["text"] + extra)
    return SimpleNamespace(results=DATA["results"] | {"gpu_trace_events": gpu_events}, outputs_text=lambda: text,
                           stderr_text=lambda: "", notebook=None, seconds=0.0, workdir=None)


def test_a_gpu_trace_without_gpu_events_needs_the_sentence():
    with pytest.raises(AssertionError, match="a trace without GPU events and no sentence"):
        nb04.on_gpu(run_with(0, []))
    sentence = pipelines.gpu_trace_note(1, 0, {"cupti_privileges": ["E... CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"]})
    nb04.on_gpu(run_with(0, [sentence]))


def test_a_gpu_trace_with_gpu_events_says_nothing_of_a_missing_side():
    nb04.on_gpu(run_with(2466, []))
    with pytest.raises(AssertionError):
        nb04.on_gpu(run_with(2466, [pipelines.gpu_trace_note(1, 0, {})]))
