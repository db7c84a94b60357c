"""Every notebook's claims hold on a GPU machine too, not only on this CPU-only one.

``tests/claims/gpu_nbNN.json`` is a results dict shaped like a 1-GPU run of notebook NN, written by
hand from the notebook's own result keys, with the text such a run prints. Each claims module is fed
that run with its CPU-only branch (``on_cpu``) replaced by one that fails: the GPU-shaped run must
pass through the shared claims and ``on_gpu`` alone.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import SimpleNamespace

import nbrun
import pytest

CLAIMS = Path(__file__).resolve().parent / "claims"
NOTEBOOKS = nbrun.present()


def gpu_run(number: str) -> SimpleNamespace:
    data = json.loads((CLAIMS / f"gpu_nb{number}.json").read_text())
    text = data.get("text", "")
    if isinstance(text, list):
        text = "\n".join(text)
    return SimpleNamespace(results=data["results"], outputs_text=lambda: text, stderr_text=lambda: "",
                           notebook=None, seconds=0.0, workdir=None)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_claims_module_has_shared_cpu_and_gpu_branches(name):
    claims = importlib.import_module(f"claims.nb{name[:2]}")
    for part in ("check", "on_cpu", "on_gpu"):
        assert callable(getattr(claims, part, None)), f"tests/claims/nb{name[:2]}.py needs {part}(run)"
    assert (CLAIMS / f"gpu_nb{name[:2]}.json").exists(), f"tests/claims/gpu_nb{name[:2]}.json is missing"
    data = json.loads((CLAIMS / f"gpu_nb{name[:2]}.json").read_text())
    assert data.get("written_by", "").startswith("hand"), f"gpu_nb{name[:2]}.json must say it is hand-written"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_one_gpu_run_passes_the_claims_without_reaching_cpu_only_asserts(name, monkeypatch):
    claims = importlib.import_module(f"claims.nb{name[:2]}")
    reached = []

    def fail(run):
        reached.append("on_cpu")
        raise AssertionError("a GPU-shaped run reached the CPU-only claims")

    gpu_branch = claims.on_gpu
    monkeypatch.setattr(claims, "on_cpu", fail)
    monkeypatch.setattr(claims, "on_gpu", lambda run: (reached.append("on_gpu"), gpu_branch(run)))
    claims.check(gpu_run(name[:2]))
    assert reached == ["on_gpu"], reached


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_gpu_shaped_run_is_not_a_cpu_run_in_disguise(name):
    r = gpu_run(name[:2]).results
    assert r["gpu_count"] >= 1, f"gpu_nb{name[:2]}.json must record a GPU (gpu_count >= 1)"
