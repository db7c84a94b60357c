"""Every ``compile`` of notebooks 05, 06, 09 (their child scripts included) and of their helpers turns XLA off.

Keras 3's ``compile(jit_compile="auto")`` turns XLA on only where a GPU exists, so the learner's laptop and a
Colab GPU would run different programs, and the peaks 06 and 09 compare would not measure the same thing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# notebook -> its compile calls: 05 the sweep, train() and run_updates() (gradient accumulation); 06 train(), the
# auto_scale_loss demo, the memory child; 09 trains with a GradientTape and compiles nothing.
NOTEBOOKS = {"05_batch_size_and_learning_rate.ipynb": 3, "06_mixed_precision.ipynb": 3, "09_choosing_a_gpu.ipynb": 0}
HELPERS = ["batching.py", "precision.py", "gpus.py"]


def compile_calls(code: str) -> list[str]:
    """The argument text of every ``<something>.compile(...)`` call (not ``re.compile``)."""
    calls = []
    for match in re.finditer(r"(\w+)\.compile\(", code):
        if match.group(1) == "re":
            continue
        depth, i = 1, match.end()
        while depth and i < len(code):
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        calls.append(code[match.end():i - 1])
    return calls


def test_compile_calls_finds_calls_and_their_arguments():
    code = 'model.compile(optimizer=f(1), loss="mse")\nregex = re.compile("x")\nm.compile(jit_compile=False)'
    assert compile_calls(code) == ['optimizer=f(1), loss="mse"', "jit_compile=False"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_compile_in_the_notebook_passes_jit_compile_false(name):
    cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    calls = compile_calls(code)
    assert len(calls) == NOTEBOOKS[name], (name, calls)
    assert all("jit_compile=False" in args for args in calls), [a for a in calls if "jit_compile=False" not in a]
    if calls:
        first = code.index("jit_compile=False")
        assert "XLA" in code[first:first + 200], f"{name}: the first jit_compile=False needs its comment"


@pytest.mark.parametrize("name", HELPERS)
def test_every_compile_in_the_helpers_passes_jit_compile_false(name):
    calls = compile_calls((ROOT / "helpers" / name).read_text())
    assert all("jit_compile=False" in args for args in calls), calls
