"""Claims of notebook 02 · GPU detection and device placement, on any hardware."""

from __future__ import annotations

import re

from claims import common

_DEVICE = re.compile(r"device:([A-Za-z_]+):(\d+)$")


def _short(device: str) -> str:
    match = _DEVICE.search(device or "")
    return f"{match.group(1).upper()}:{match.group(2)}" if match else ""


def check(run) -> None:
    common.dispatch(run, __name__)


def shared(run) -> None:
    r = run.results
    common.require(r, ("placements", "gpu_count", "exercises_solved", "logical_devices", "physical_devices",
                "soft_placement_demo", "hard_placement_error", "cuda_visible_devices_demo",
                "utilisation_source", "utilisation_reason", "utilisation", "nvml_status", "nvml_readings",
                "split_child_visible", "split_child_physical_gpus"))

    # Placement: every op ran on a logical device that exists in this run.
    logical = {_short(d) for d in r["logical_devices"]}
    assert logical and "" not in logical, f"logical devices not recognised: {r['logical_devices']}"
    assert len(r["placements"]) >= 3, f"too few placements recorded: {r['placements']}"
    for op, device in r["placements"].items():
        assert _short(device) in logical, f"{op} ran on {device!r}, not one of the logical devices {sorted(logical)}"
    physical_gpus = [d for d in r["physical_devices"] if ":GPU:" in d]
    assert r["gpu_count"] == len(physical_gpus), f"gpu_count {r['gpu_count']} but physical GPUs {physical_gpus}"

    # Soft placement: the request for a missing GPU ran somewhere real; with it off, an error was recorded.
    soft = r["soft_placement_demo"]
    assert soft["requested"] == f"/GPU:{r['gpu_count']}", soft
    assert _short(soft["ran_on"]) in logical, f"soft placement ran on {soft['ran_on']!r}"
    assert "Could not satisfy device specification" in r["hard_placement_error"], r["hard_placement_error"]
    assert r["soft_placement_restored"] is True, "soft placement was not turned back on"

    # Late device configuration is refused (and explained); a fresh process splits a device in two.
    assert r["late_config_error"], "changing logical devices after initialisation should raise RuntimeError"
    assert any("Restart" in n for n in r["setup_again_notes"]), r["setup_again_notes"]

    # CUDA_VISIBLE_DEVICES: every child answered, within this kernel's own GPUs: -1 hides every GPU, the first
    # entry of the kernel's list shows one, the kernel's own value shows what the kernel sees (never more).
    demo = r["cuda_visible_devices_demo"]
    assert sorted(demo) == ["as in this kernel", "every GPU hidden", "first GPU only"], sorted(demo)
    hidden, first, same = demo["every GPU hidden"], demo["first GPU only"], demo["as in this kernel"]
    assert all(child["error"] == "" for child in demo.values()), demo
    assert hidden["value"] == "-1" and hidden["gpu_count"] == 0 and hidden["gpus"] == [], hidden
    assert first["gpu_count"] == min(1, r["gpu_count"]), f"the first-GPU child saw {first['gpu_count']} GPUs"
    assert same["gpu_count"] == r["gpu_count"], f"a child with this kernel's setting saw {same['gpu_count']} GPUs"
    assert r["placement_log_lines"] >= 1, "the placement log child printed no 'Executing op' line"
    # The logical-device child sees only this kernel's first GPU (an entry of its list), as the first-GPU child does.
    assert r["split_child_visible"] == first["value"], (r["split_child_visible"], first["value"])

    # Utilisation: samples in both phases, training busier than idle.
    idle, train = r["utilisation"]["idle"], r["utilisation"]["training"]
    assert idle["n"] >= 3 and train["n"] >= 3, f"too few samples: idle {idle['n']}, training {train['n']}"
    assert 0 <= idle["mean"] <= 100 and 0 <= train["max"] <= 100
    assert train["mean"] > idle["mean"] + 5, f"training {train['mean']} % not above idle {idle['mean']} %"
    assert r["utilisation_reason"] and r["utilisation_reason"] in run.outputs_text(), "the page says what was measured"

    assert r["exercises_solved"] is True
    assert run.stderr_text() == "", f"stderr on the learner's page:\n{run.stderr_text()[:2000]}"
    assert "Traceback" not in run.outputs_text()


def on_cpu(run) -> None:
    r = run.results
    assert not [d for d in r["logical_devices"] if ":GPU:" in d]
    assert _short(r["soft_placement_demo"]["ran_on"]).startswith("CPU:"), r["soft_placement_demo"]
    split = [_short(d) for d in r["split_child_logical_devices"]]
    assert split == ["CPU:0", "CPU:1"], f"fresh process should have 2 logical CPUs, got {split}"
    # NVML: without readings, the status says why (a driver with a CPU-only TensorFlow still has readings).
    if not r["nvml_readings"]:
        assert "no NVIDIA driver" in r["nvml_status"] or "not installed" in r["nvml_status"], r["nvml_status"]
    # The sampler measured the CPU: this process and the whole machine, read as cores busy.
    assert r["utilisation_source"] == "CPU (psutil)", r["utilisation_source"]
    train = r["utilisation"]["training"]
    assert train["machine_mean"] + 1e-6 >= 0 and train["machine_mean"] <= 100
    busy = r["cpu_cores_busy"]
    cores = busy * 100 / train["mean"]
    assert busy > 0 and round(cores) >= 1 and abs(cores - round(cores)) < 1e-6, (busy, train["mean"])
    assert "cores stay busy" in run.outputs_text() and "whole machine was" in run.outputs_text()


def on_gpu(run) -> None:
    r = run.results
    assert [d for d in r["logical_devices"] if ":GPU:" in d], r["logical_devices"]
    split = [_short(d) for d in r["split_child_logical_devices"]]
    assert {"GPU:0", "GPU:1"} <= set(split), f"a fresh process should split the first GPU in two, got {split}"
    seen = r["split_child_physical_gpus"]  # every other GPU it saw, TensorFlow would have reserved whole
    assert len(seen) == 1, f"the logical-device child saw {len(seen)} GPUs: {seen}"
    assert len(r["nvml_readings"]) >= r["gpu_count"] and r["nvml_status"].startswith("NVIDIA driver"), (
        r["nvml_status"])
    assert all(g["memory_total_bytes"] for g in r["nvml_readings"])
    if r["utilisation_source"] == "GPU (NVML)":
        reason = r["utilisation_reason"]
        assert reason.startswith("The sampler reads NVML's utilisation of GPU"), reason
        assert r["cpu_cores_busy"] is None
        assert "NVML utilisation is the share of time a kernel ran on the GPU" in run.outputs_text()
    else:  # NVML cannot read this GPU's utilisation (a MIG slice): the CPU is measured, and the page says why
        assert r["utilisation_reason"].endswith("CPU time instead."), r["utilisation_reason"]
        assert r["cpu_cores_busy"] > 0 and "cores stay busy" in run.outputs_text()
