"""Notebook 09's GPU fixture against its claims: a misspelled job key, GPU watts under a CPU key, a pick the job
does not fit, or an activation verdict without agreeing slopes is refused (each passed silently before)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from claims import nb09

FIXTURE = Path(__file__).resolve().parent / "claims" / "gpu_nb09.json"


def run_of(change=None):
    data = json.loads(FIXTURE.read_text())
    r = copy.deepcopy(data["results"])
    if change:
        change(r)
    return SimpleNamespace(results=r, outputs_text=lambda: "\n".join(data["text"]), stderr_text=lambda: "")


def test_the_fixture_passes_the_claims_it_feeds():
    run = run_of()
    for claim in (nb09.job_names, nb09.picks, nb09.activation_term, nb09.fits_with_measured, nb09.benchmark_power):
        claim(run)


def test_a_job_key_the_notebook_never_writes_is_refused():
    def misspell(r):
        r["jobs"]["transformer 1e+09 inference"] = r["jobs"].pop("transformer 1B inference")
    with pytest.raises(AssertionError, match="job names the notebook does not write"):
        nb09.job_names(run_of(misspell))


def test_gpu_watts_under_a_cpu_key_are_refused():
    def cpu_key(r):
        r["benchmark_power"]["CPU:0"] = dict(r["benchmark_power"]["GPU:0"])
    with pytest.raises(AssertionError, match="CPU:0"):
        nb09.benchmark_power(run_of(cpu_key))


def test_a_pick_the_job_does_not_fit_is_refused():
    def t4_fastest(r):
        r["run_cost"]["Tesla T4"]["hours"] = 0.1
        r["picks"]["fastest"] = "Tesla T4"
    with pytest.raises(AssertionError):
        nb09.picks(run_of(t4_fastest))


def test_a_verdict_from_slopes_that_disagree_is_refused():
    def disagree(r):
        a = r["activation_check"]
        a["peaks"][2] = a["peaks"][1] + 2 * (a["peaks"][1] - a["peaks"][0])  # the second slope twice the first
    with pytest.raises(AssertionError):
        nb09.activation_term(run_of(disagree))
