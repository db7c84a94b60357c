"""A child on a GPU in an exclusive or prohibited compute mode: skipped with its reason, never an unexplained error.

GPU branches run here with tests/fakes.py's FakeNVML (``compute_mode`` is NVML_COMPUTEMODE_*: 0 default,
1 exclusive_thread, 2 prohibited, 3 exclusive_process) and a fake child that fails as CUDA does.
"""

from __future__ import annotations

import sys

import pytest

from helpers import children, nvml
from tests.fakes import FakeNVML

READ_MODES = nvml.compute_modes  # the real function, kept before a test replaces it

BUSY = ("tensorflow.python.framework.errors_impl.InternalError: failed call to cuDevicePrimaryCtxRetain: "
        "CUDA_ERROR_DEVICE_UNAVAILABLE: CUDA-capable device(s) is/are busy or unavailable")


def modes_of(mode: int) -> list[str]:
    fake = FakeNVML([{"name": "NVIDIA A100-SXM4-40GB", "used": 0, "total": 40 * 1024**3, "compute_mode": mode}])
    return READ_MODES(environ={}, nvml=fake)


@pytest.mark.parametrize(("mode", "held", "reason"), [
    (3, True, "exclusive_process"), (1, True, "exclusive_thread"), (2, False, "prohibited"), (2, True, "prohibited"),
    (3, False, ""), (0, True, "")])
def test_gpu_refusal_follows_the_compute_mode_and_the_kernels_context(mode, held, reason):
    assert children.gpu_refusal(0, modes_of(mode), held=held) == reason


def test_gpu_refusal_without_a_gpu_or_a_driver():
    assert children.gpu_refusal(None, ["exclusive_process"], held=True) == ""
    assert children.gpu_refusal(0, [], held=True) == ""  # no NVML: nothing known, the child runs
    with pytest.raises(ValueError, match="gpu="):
        children.gpu_refusal(-1, ["default"])


def busy_script(tmp_path):
    script = tmp_path / "busy.py"
    script.write_text(f"import sys\nsys.stderr.write({BUSY!r} + '\\n')\nsys.exit(1)\n")
    return script


@pytest.mark.parametrize(("mode", "reason"), [(3, "exclusive_process"), (2, "prohibited")])
def test_a_child_refused_a_context_comes_back_skipped_with_the_mode(tmp_path, monkeypatch, mode, reason):
    monkeypatch.setattr(children.nvml, "compute_modes", lambda *a, **k: modes_of(mode))
    child = children.run_script(busy_script(tmp_path), {"m": {"gpu": 0}}, python=sys.executable)["m"]
    assert not child.ok and child.skipped == reason, (child.error, child.skipped)


def test_busy_failure_with_unknown_mode_is_device_busy_and_default_mode_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(children.nvml, "compute_modes", lambda *a, **k: [])
    child = children.run_script(busy_script(tmp_path), {"m": {"gpu": 0}})["m"]
    assert child.skipped == "device_busy"
    monkeypatch.setattr(children.nvml, "compute_modes", lambda *a, **k: modes_of(0))
    child = children.run_script(busy_script(tmp_path), {"m": {"gpu": 0}})["m"]
    assert child.skipped == "" and not child.ok  # a default-mode GPU must measure: its failure stays an error


def test_other_failures_are_not_skips(tmp_path, monkeypatch):
    monkeypatch.setattr(children.nvml, "compute_modes", lambda *a, **k: modes_of(3))
    script = tmp_path / "oom.py"
    script.write_text("import sys\nsys.stderr.write('ResourceExhaustedError: OOM when allocating tensor\\n')\n"
                      "sys.exit(1)\n")
    assert children.run_script(script, {"m": {"gpu": 0}})["m"].skipped == ""


def test_an_mps_client_shares_an_exclusive_gpu_and_is_not_refused(monkeypatch):
    mps = {"CUDA_MPS_PIPE_DIRECTORY": "/var/run/nvidia-mps"}
    assert children.gpu_refusal(0, ["exclusive_process"], held=True, environ=mps) == ""
    monkeypatch.setattr(children.os.path, "exists", lambda path: path == "/tmp/nvidia-mps/control")
    assert children.gpu_refusal(0, ["exclusive_process"], held=True, environ={}) == ""  # the default pipe
    monkeypatch.setattr(children.os.path, "exists", lambda path: False)
    assert children.gpu_refusal(0, ["exclusive_process"], held=True, environ={}) == "exclusive_process"
    assert children.gpu_refusal(0, ["prohibited"], held=True, environ=mps) == "prohibited"  # MPS or not: no context


def test_an_old_drivers_invalid_device_counts_only_on_a_refusing_gpu():
    stderr = "failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_INVALID_DEVICE: invalid device ordinal"
    assert children.busy_reason(stderr, "exclusive_process") == "exclusive_process"
    assert children.busy_reason(stderr, "unknown") == ""  # a wrong CUDA_VISIBLE_DEVICES says the same
    assert children.busy_reason(stderr, "default") == ""
