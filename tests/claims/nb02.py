"""Claims of notebook 02 · GPU detection and device placement, checked on a smoke run."""

from __future__ import annotations

import re

_DEVICE = re.compile(r"device:([A-Za-z_]+):(\d+)$")


def _short(device: str) -> str:
    match = _DEVICE.search(device or "")
    return f"{match.group(1).upper()}:{match.group(2)}" if match else ""


def check(run) -> None:
    r = run.results
    for key in ("placements", "gpu_count", "exercises_solved", "logical_devices", "physical_devices",
                "soft_placement_demo", "hard_placement_error", "cuda_visible_devices_demo",
                "utilisation_source", "utilisation"):
        assert key in r, f"results lack {key!r}"

    # Placement: every op ran on a logical device that exists in this run.
    logical = {_short(d) for d in r["logical_devices"]}
    assert logical and "" not in logical, f"logical devices not recognised: {r['logical_devices']}"
    assert len(r["placements"]) >= 3, f"too few placements recorded: {r['placements']}"
    for op, device in r["placements"].items():
        assert _short(device) in logical, f"{op} ran on {device!r}, not one of the logical devices {sorted(logical)}"

    # GPU count agrees with the device lists; this test machine has no GPU.
    physical_gpus = [d for d in r["physical_devices"] if ":GPU:" in d]
    logical_gpus = [d for d in r["logical_devices"] if ":GPU:" in d]
    assert r["gpu_count"] == len(physical_gpus), f"gpu_count {r['gpu_count']} but physical GPUs {physical_gpus}"
    assert r["gpu_count"] == 0 and not logical_gpus, f"expected no GPU on the test machine, got {r['gpu_count']}"

    # Soft placement: the missing GPU request ran on the CPU; with it off, an error was recorded.
    soft = r["soft_placement_demo"]
    assert soft["requested"] == f"/GPU:{r['gpu_count']}", soft
    assert _short(soft["ran_on"]).startswith("CPU:"), f"soft placement ran on {soft['ran_on']!r}, not the CPU"
    assert soft["ran_on"] in r["placements"].values() or _short(soft["ran_on"]) in logical
    assert "Could not satisfy device specification" in r["hard_placement_error"], r["hard_placement_error"]
    assert r["soft_placement_restored"] is True, "soft placement was not turned back on"

    # Late device configuration is refused (and explained); a fresh process splits the CPU in two.
    assert r["late_config_error"], "changing logical devices after initialisation should raise RuntimeError"
    assert any("Restart" in n for n in r["setup_again_notes"]), r["setup_again_notes"]
    split = [_short(d) for d in r["split_child_logical_devices"]]
    assert split == ["CPU:0", "CPU:1"], f"fresh process should have 2 logical CPUs, got {split}"

    # CUDA_VISIBLE_DEVICES: both children answered; -1 hides every GPU.
    demo = r["cuda_visible_devices_demo"]
    hidden, unset = demo["CUDA_VISIBLE_DEVICES=-1"], demo["CUDA_VISIBLE_DEVICES unset"]
    assert hidden["error"] == "" and unset["error"] == "", demo
    assert hidden["gpu_count"] == 0 and hidden["gpus"] == [], hidden
    assert unset["gpu_count"] == r["gpu_count"], f"child without the variable saw {unset['gpu_count']} GPUs"
    assert r["placement_log_lines"] >= 1, "the placement log child printed no 'Executing op' line"

    # NVML: no driver here, said plainly.
    assert r["nvml_readings"] == [] and "no NVIDIA driver" in r["nvml_status"] or "not installed" in r["nvml_status"]

    # Utilisation sampler: CPU source here, samples in both phases, training busier than idle.
    assert r["utilisation_source"] == "CPU (psutil)", r["utilisation_source"]
    idle, train = r["utilisation"]["idle"], r["utilisation"]["training"]
    assert idle["n"] >= 3 and train["n"] >= 3, f"too few samples: idle {idle['n']}, training {train['n']}"
    assert 0 <= idle["mean"] <= 100 and 0 <= train["max"] <= 100
    assert train["mean"] > idle["mean"] + 5, f"training {train['mean']} % not above idle {idle['mean']} %"
    # The printed reading turns the mean into cores: mean % x cores / 100.
    busy = r["cpu_cores_busy"]
    cores = busy * 100 / train["mean"]
    assert busy > 0 and round(cores) >= 1 and abs(cores - round(cores)) < 1e-6, (busy, train["mean"])
    assert "cores stay busy" in run.outputs_text()

    assert r["exercises_solved"] is True
    assert run.stderr_text() == "", f"stderr on the learner's page:\n{run.stderr_text()[:2000]}"
    assert "Traceback" not in run.outputs_text()
