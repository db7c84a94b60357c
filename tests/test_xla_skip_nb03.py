"""Notebook 03 on a GPU where XLA cannot compile (compute capability 12.x with a TensorFlow built with CUDA < 12.8).

With fakes: a report shaped like the one ``helpers.setup`` returns makes ``helpers.timing.xla_skip`` skip XLA's row;
a compile error from XLA's jit (TensorFlow's own error classes) skips the row too, any other error still raises; the
readings work without XLA's row; and ``claims.nb03`` accepts a missing XLA row only with its recorded reason.
Also the two Blackwell rows of ``data/gpu_specs.csv`` and the name TensorFlow reports for the RTX PRO 6000.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
from test_claims_any_hardware import gpu_run

from helpers import data, env, gpus, timing

claims = pytest.importorskip("claims.nb03")
XLA = "tf.function + XLA"


def _report(cc, cuda="12.5.1"):
    gpu = env.GpuInfo(index=0, device="/physical_device:GPU:0", name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
                      compute_capability=cc, memory_bytes=None, memory_source="fake")
    return SimpleNamespace(gpus=[gpu], build={"is_cuda_build": True, "cuda_version": cuda})


# --------------------------------------------------------------------------- the decision the cell calls
def test_a_12_0_card_with_an_older_cuda_build_skips_xla_and_says_why(capsys):
    skipped = timing.xla_skip(_report((12, 0)))
    assert list(skipped) == [XLA] and skipped[XLA] == env.xla_compile_problem((12, 0), {"cuda_version": "12.5.1"})
    assert skipped[XLA] in capsys.readouterr().out


@pytest.mark.parametrize("cc, cuda", [((12, 0), "12.8"), ((9, 0), "12.5.1"), ((8, 0), "12.5.1")])
def test_xla_runs_where_it_can_compile(cc, cuda, capsys):
    assert timing.xla_skip(_report(cc, cuda)) == {}
    assert capsys.readouterr().out == ""


def test_a_cpu_run_never_skips_and_a_wrong_argument_is_refused():
    assert timing.xla_skip(SimpleNamespace(gpus=[], build={})) == {}
    with pytest.raises(ValueError, match="hw="):
        timing.xla_skip({"gpus": []})


def test_the_sentence_quotes_the_target_llvm_names():
    problem = env.xla_compile_problem((12, 0), {"cuda_version": "12.5.1"})
    assert "target 'sm_120'" in problem  # LLVM's message names sm_120, not sm_1200
    assert "target 'sm_121'" in env.xla_compile_problem((12, 1), {"cuda_version": "12.6"})


# --------------------------------------------------------------------------- the second line of defence
@pytest.mark.parametrize("error", ["InternalError", "UnknownError", "UnavailableError", "NotFoundError"])
def test_a_compile_error_from_xla_skips_its_row(error, capsys):
    tf = env.tensorflow()
    skipped = {}
    with timing.skip_xla_on_compile_error(XLA, skipped):
        raise getattr(tf.errors, error)(None, None, "No PTX compilation provider is available.\nmore")
    assert skipped[XLA].startswith("XLA could not compile") and "No PTX compilation provider" in skipped[XLA]
    assert "XLA's row is skipped" in capsys.readouterr().out


def test_other_rows_and_other_errors_still_raise():
    tf = env.tensorflow()
    with pytest.raises(tf.errors.InternalError):
        with timing.skip_xla_on_compile_error("tf.function", {}):
            raise tf.errors.InternalError(None, None, "a real failure of the plain graph")
    with pytest.raises(tf.errors.InvalidArgumentError):  # an op XLA does not support is a bug, not the device
        with timing.skip_xla_on_compile_error(XLA, {}):
            raise tf.errors.InvalidArgumentError(None, None, "Detected unsupported operations")
    with pytest.raises(ValueError, match="mode="):
        timing.skip_xla_on_compile_error("XLA", {})


# --------------------------------------------------------------------------- the readings without XLA's row
def test_the_readings_read_two_rows_and_refuse_a_half_missing_xla_row():
    first, steady, spread = {"eager": 0.04, "tf.function": 0.056}, {"eager": 2.5e-3, "tf.function": 5.4e-4}, \
        {"eager": 0.05, "tf.function": 0.08}
    lines = timing.compile_reading(first, steady, spread)
    assert len(lines) == 3 and "skipped" in lines[-1] and "as fast" in lines[1]
    launch = timing.launch_reading({"eager": 3.15e-3, "tf.function": 1.82e-4}, {"eager": 0.01, "tf.function": 0.1}, 200)
    assert len(launch) == 2 and "skipped" in launch[-1]
    with pytest.raises(ValueError, match="when XLA's row was skipped"):
        timing.compile_reading({**first, XLA: 0.2}, steady, spread)


# --------------------------------------------------------------------------- the claims
def _without_xla(reason: str | None):
    run = gpu_run("03")
    r = copy.deepcopy(run.results)
    for key in ("compile_first_s", "compile_steady_s", "compile_spread", "launch_s", "launch_spread"):
        r[key].pop(XLA)
    r["xla_payoff_steps"] = None
    text = run.outputs_text()
    if reason is not None:
        r["xla_skipped"] = {"reason": reason}
        text += f"\n{reason} XLA's row is skipped on this GPU."
    return SimpleNamespace(**{**vars(run), "results": r, "outputs_text": lambda: text})


def test_the_claims_accept_a_missing_xla_row_with_its_reason():
    claims.compilation(_without_xla(env.xla_compile_problem((12, 0), {"cuda_version": "12.5.1"})))


@pytest.mark.parametrize("reason", [None, "", "the machine was busy"])
def test_the_claims_refuse_a_missing_xla_row_without_its_reason(reason):
    with pytest.raises(AssertionError):
        claims.compilation(_without_xla(reason))


def test_the_claims_still_pass_the_full_gpu_fixture():
    claims.compilation(gpu_run("03"))


# --------------------------------------------------------------------------- the Blackwell rows
def test_the_blackwell_rows_are_found_by_the_names_tensorflow_reports():
    table = data.load_gpu_specs()
    pro = gpus.lookup("NVIDIA RTX PRO 6000 Blackwell Server Edition", table)
    assert pro.found and pro.row["compute_capability"] == 12.0 and pro.row["memory_gb"] == 96
    assert gpus.lookup("NVIDIA B200", table).row["compute_capability"] == 10.0
    other = gpus.lookup("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", table)  # other clocks and power
    assert not other.found and "'workstation' names a variant" in other.note
    assert not gpus.lookup("NVIDIA RTX 6000 Ada Generation", table).found  # not the RTX PRO 6000
    for row in (pro.row, gpus.lookup("B200", table).row):
        assert "datasheet" in row["source"] and "https://www.nvidia.com/" in row["source"]
        assert gpus.features(row["compute_capability"])["FP8 Tensor Cores"]
        assert gpus.fits(80 * 2**30, row["memory_gb"])  # 80 GiB: too large for an 80 GB card at 90 % usable
    assert not gpus.fits(80 * 2**30, 80)
