"""Notebook 03's compile mode: every Keras ``compile`` turns XLA off, except the one that asks what "auto" picks.

Keras 3's ``compile(jit_compile="auto")`` turns XLA on only where a GPU exists
(``Trainer._resolve_auto_jit_compile`` in keras/src/trainers/trainer.py), so a laptop and a Colab GPU would
time different programs. The compilation section turns XLA on where it is the lesson: ``tf.function(...,
jit_compile=True)`` for the training step and the chain of adds, and one ``compile(jit_compile="auto")`` on a
model that is never trained, to print Keras' choice.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_compile_mode_05_06_09 import compile_calls

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "03_cpu_vs_gpu_timing.ipynb"


def _code_cells() -> list[str]:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def test_every_compile_in_03_passes_jit_compile_false_except_the_auto_probe():
    calls = [call for cell in _code_cells() for call in compile_calls(cell)]
    auto = [c for c in calls if 'jit_compile="auto"' in c]
    assert len(auto) == 1, auto
    assert all("jit_compile=False" in c for c in calls if c not in auto), calls
    probe = next(cell for cell in _code_cells() if 'jit_compile="auto"' in cell)
    assert "on purpose" in probe and ".fit(" not in probe, "the auto probe says why and trains nothing"


def test_xla_is_switched_on_only_in_the_compilation_section_and_says_why():
    code = "\n".join(_code_cells())
    first_false = code.index("jit_compile=False")
    assert "XLA" in code[first_false:first_false + 200], "the first jit_compile=False needs its comment"
    on = [cell for cell in _code_cells() if "jit_compile=True" in cell]
    assert len(on) == 2, on
    assert "XLA on purpose" in on[0] and "LAUNCH_OPS" in on[1]
