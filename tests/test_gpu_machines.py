"""GPUs learners meet today, with fakes: a SLURM node's GPUs, compute modes, a GPU TensorFlow cannot see,
compute capability 12.x and XLA. helpers.nvml, helpers.env and helpers.readiness (make doctor, notebook 00)."""

from __future__ import annotations

import fakes
import pytest

from helpers import env, nvml, readiness

# A node of 8 GPUs, NVML's order by PCI bus; the job was given the cards at 0000:88:00.0 and 0000:89:00.0.
NODE_BUSES = [0x1B, 0x1C, 0x3D, 0x3E, 0x88, 0x89, 0xB1, 0xB2]


def _node(modes=None):
    gpus = [dict(name="NVIDIA A100-SXM4-80GB", util=10 * i, used=i, total=1000 + i, power_mw=0, temp=0,
                 bus=f"00000000:{bus:02X}:00.0", compute_mode=(modes or {}).get(i, 0))
            for i, bus in enumerate(NODE_BUSES)]
    return fakes.FakeNVML(gpus=gpus)


def _job_tf(buses=(0x88, 0x89)):
    """TensorFlow inside the job: two GPUs, whose descriptions name their PCI bus (TensorFlow's 4-digit domain)."""
    tf = fakes.FakeTF(n_gpus=len(buses))
    names = {f"/physical_device:GPU:{i}": bus for i, bus in enumerate(buses)}
    tf.config.experimental.get_device_details = lambda dev: (
        {"device_name": "NVIDIA A100-SXM4-80GB", "compute_capability": (8, 0),
         "pci_bus_id": f"0000:{names[dev.name]:02x}:00.0"} if dev.device_type == "GPU" else {})
    return tf


# ConstrainDevices: SLURM gives job-relative indices, NVML lists all 8 cards of the node
SLURM_JOB = {"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_ID": "42", "SLURM_STEP_GPUS": "4,5"}


# --------------------------------------------------------------------------- D: match by PCI bus id
@pytest.mark.parametrize("nvml_spelling, tf_spelling", [
    ("00000000:3B:00.0", "0000:3b:00.0"), ("0000:3b:00.0", "00000000:3B:00.0"), ("3B:00.0", "0000:3b:00.0")])
def test_bus_ids_match_across_domain_width_and_case(nvml_spelling, tf_spelling):
    assert nvml.normalize_bus_id(nvml_spelling) == nvml.normalize_bus_id(tf_spelling) == "0000:3b:00.0"
    assert nvml.normalize_bus_id("not a bus") is None


def test_bus_id_is_read_from_tensorflows_device_description():
    desc = "device: 0, name: NVIDIA A100-SXM4-80GB, pci bus id: 0000:88:00.0, compute capability: 8.0"
    assert nvml.bus_id_from_description(desc) == "0000:88:00.0"


def test_a_slurm_job_reads_its_own_cards_not_the_first_two_of_the_node():
    node = _node()
    found = env.gpus(tf=_job_tf(), nvml=node, environ=SLURM_JOB)
    assert [g.memory_bytes for g in found] == [1004, 1005]  # NVML's GPUs 4 and 5, by PCI bus
    assert [nvml.locate(i, SLURM_JOB, node, bus_id=b).index for i, b in enumerate(["0000:88:00.0", "0000:89:00.0"])] \
        == [4, 5]


def test_without_a_bus_id_a_job_relative_index_is_never_read_as_nvmls():
    where = nvml.locate(0, SLURM_JOB, _node())
    assert where.index is None and "relative to this SLURM job" in where.why
    beyond = nvml.locate(0, {"CUDA_VISIBLE_DEVICES": "9"}, _node())
    assert beyond.index is None and "beyond the 8 GPU(s)" in beyond.why


def test_a_bus_id_nvml_does_not_list_gives_no_reading():
    where = nvml.locate(0, SLURM_JOB, _node(), bus_id="0000:07:00.0")
    assert where.index is None and "none of the 8 GPU(s)" in where.why


def test_uuids_still_resolve_when_no_bus_id_is_known():
    env_uuid = {"CUDA_VISIBLE_DEVICES": f"{fakes.uuid(5)},{fakes.uuid(4)}"}
    assert [nvml.locate(i, env_uuid, _node()).index for i in (0, 1)] == [5, 4]


# --------------------------------------------------------------------------- E: compute modes
def test_compute_modes_are_read_per_gpu_the_job_uses():
    node = _node(modes={4: 3, 5: 0, 0: 2})  # NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3, PROHIBITED = 2
    buses = ["0000:88:00.0", "0000:89:00.0"]
    assert nvml.compute_modes(SLURM_JOB, node, bus_ids=buses) == ["exclusive_process", "default"]
    assert nvml.compute_modes({}, node) == ["prohibited"] + ["default"] * 3 + ["exclusive_process"] + ["default"] * 3
    assert nvml.compute_modes(SLURM_JOB, node) == ["unknown", "unknown"]  # relative indices, no bus id: no guess
    assert nvml.compute_modes({}, fakes.FakeNVML(fail_init=True)) == []
    assert nvml.compute_modes({}, fakes.FakeNVML(unsupported={"compute_mode"})) == ["unknown"]


def test_readiness_warns_about_an_exclusive_gpu_and_not_about_a_default_one():
    tf = _job_tf()
    rep = env.report(tf=tf, nvml=_node(modes={4: 3}))
    rep = env.Report(**{**rep.__dict__, "gpus": env.gpus(tf=tf, nvml=_node(), environ=SLURM_JOB),
                        "compute_modes": nvml.compute_modes(SLURM_JOB, _node(modes={4: 3}), env.bus_ids(tf))})
    rows = {c.name: c for c in readiness.checks(rep)}
    assert rows["GPU compute mode"].ok is False and rows["GPU compute mode"].detail == "GPU 0: exclusive_process"
    plain = env.report(tf=fakes.FakeTF(n_gpus=1), nvml=fakes.FakeNVML())
    assert plain.compute_modes == ["default"]
    assert "GPU compute mode" not in {c.name for c in readiness.checks(plain)}


# --------------------------------------------------------------------------- C: a GPU TensorFlow does not see
def test_a_gpu_the_driver_sees_and_tensorflow_does_not_gets_a_row_naming_the_hidden_line():
    rep = env.report(tf=fakes.FakeTF(n_gpus=0), nvml=fakes.FakeNVML())
    assert rep.nvml_gpu_count == 1 and rep.gpu_count == 0
    row = {c.name: c for c in readiness.checks(rep)}["GPU seen by the driver, not by TensorFlow"]
    assert row.ok is False and row.detail == "1 GPU(s) in NVML/nvidia-smi, 0 in TensorFlow"
    assert readiness.HIDDEN_GPU_LINE in row.advice and "TF_CPP_MIN_LOG_LEVEL=0" in row.advice
    assert "tensorflow[and-cuda]" in row.advice
    cpu_build = env.report(tf=fakes.FakeTF(n_gpus=0, cuda=False), nvml=fakes.FakeNVML())
    assert "CPU build" in readiness.hidden_gpu_check(cpu_build).advice


def test_no_hidden_gpu_row_without_a_driver_or_when_tensorflow_sees_the_gpu():
    assert readiness.hidden_gpu_check(env.report(tf=fakes.FakeTF(n_gpus=0), nvml=fakes.FakeNVML(gpus=[]))) is None
    assert readiness.hidden_gpu_check(env.report(tf=fakes.FakeTF(n_gpus=1), nvml=fakes.FakeNVML())) is None


def test_gpu_count_falls_back_to_nvidia_smi_lines():
    smi = "GPU 0: Tesla T4 (UUID: GPU-1)\nGPU 1: Tesla T4 (UUID: GPU-2)\n"
    assert nvml.gpu_count(fakes.FakeNVML(fail_init=True), smi=smi) == 2
    assert nvml.gpu_count(_node()) == 8


# --------------------------------------------------------------------------- B: compute capability 12.x and XLA
@pytest.mark.parametrize("cc, cuda, cannot", [
    ((12, 0), "12.5.1", True), ((12, 1), None, True), ((12, 0), "12.8", False), ((10, 0), "12.5.1", True),
    ((10, 0), "12.8.0", False), ((11, 0), "12.6", True), ((9, 0), "12.5.1", False), ((7, 5), "12.5.1", False),
    (None, "12.5.1", False)])
def test_xla_rule_follows_compute_capability_and_the_builds_cuda(cc, cuda, cannot):
    """A B200 (10.0) is refused like a 12.0 card: PTX 8.5 knows neither sm_100 nor sm_120 (nvptx_backend.cc)."""
    problem = env.xla_compile_problem(cc, {"cuda_version": cuda})
    assert (problem is not None) == cannot
    if cannot:
        assert f"target 'sm_{cc[0]}{cc[1]}'" in problem and "#111958" in problem


def test_readiness_says_what_12x_means_for_tensorflow():
    tf = fakes.FakeTF(n_gpus=1, details={"device_name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                                         "compute_capability": (12, 0)})
    rows = {c.name: c for c in readiness.checks(env.report(tf=tf, nvml=fakes.FakeNVML()))}
    assert rows["XLA on GPU 0"].ok is False and "12.0" in rows["XLA on GPU 0"].detail
    assert "A100 or L4" in rows["XLA on GPU 0"].advice
    t4 = {c.name for c in readiness.checks(env.report(tf=fakes.FakeTF(n_gpus=1), nvml=fakes.FakeNVML()))}
    assert "XLA on GPU 0" not in t4


def test_where_the_cgroup_hides_the_nodes_other_gpus_nvmls_own_numbering_is_the_jobs():
    """ConstrainDevices may hide the other cards from NVML too: it then counts only the job's two, from 0."""
    job_only = fakes.FakeNVML(gpus=[dict(name="NVIDIA A100-SXM4-80GB", util=0, used=0, total=2000 + i, power_mw=0,
                                         temp=0, bus=f"00000000:{bus:02X}:00.0") for i, bus in enumerate((0x88, 0x89))])
    assert [nvml.locate(i, SLURM_JOB, job_only).index for i in (0, 1)] == [0, 1]
    assert nvml.locate(0, SLURM_JOB, _node()).index is None  # the whole node's eight: still refused
