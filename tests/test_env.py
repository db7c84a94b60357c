"""helpers.env, helpers.nvml and helpers.readiness: the real machine, and the GPU branches with fakes."""

import fakes
import pytest

from helpers import env, nvml, readiness

ROOT = env.ROOT


def test_gpus_reads_name_capability_and_memory_from_tf_and_nvml():
    [gpu] = env.gpus(tf=fakes.FakeTF(n_gpus=1), nvml=fakes.FakeNVML(), environ={})
    assert gpu.name == "Tesla T4" and gpu.compute_capability == (7, 5)
    assert gpu.memory_bytes == 16 * 1024**3 and gpu.memory_source == "NVML"
    assert gpu.describe() == "Tesla T4 (compute capability 7.5, 16.0 GiB)"


def test_gpus_without_nvml_driver_reports_unknown_memory():
    [gpu] = env.gpus(tf=fakes.FakeTF(n_gpus=1), nvml=fakes.FakeNVML(fail_init=True), environ={})
    assert gpu.memory_bytes is None and "memory unknown" in gpu.describe()


def test_gpus_with_empty_device_details_falls_back_to_nvml_name():
    [gpu] = env.gpus(tf=fakes.FakeTF(n_gpus=1, details={}), nvml=fakes.FakeNVML(), environ={})
    assert gpu.name == "Tesla T4" and gpu.compute_capability is None


def test_gpus_maps_cuda_visible_devices_to_nvml_indices():
    nvml = fakes.FakeNVML(gpus=[dict(name="A", util=0, used=0, total=1, power_mw=0, temp=0),
                               dict(name="B", util=0, used=0, total=2, power_mw=0, temp=0)])
    [gpu] = env.gpus(tf=fakes.FakeTF(n_gpus=1, details={}), nvml=nvml, environ={"CUDA_VISIBLE_DEVICES": "1"})
    assert gpu.name == "B" and gpu.memory_bytes == 2


def test_nvml_index_follows_cuda_visible_devices_and_refuses_uuids():
    assert nvml.index_for(0, {}) == 0
    assert nvml.index_for(1, {"CUDA_VISIBLE_DEVICES": "3,1"}) == 1
    assert nvml.index_for(0, {"CUDA_VISIBLE_DEVICES": "3,1"}) == 3
    assert nvml.index_for(0, {"CUDA_VISIBLE_DEVICES": "GPU-8f3a"}) is None
    [gpu] = env.gpus(tf=fakes.FakeTF(n_gpus=1), nvml=fakes.FakeNVML(), environ={"CUDA_VISIBLE_DEVICES": "GPU-8f3a"})
    assert gpu.memory_bytes is None, "an unmappable GPU shows 'unknown', never another card's memory"


def test_a_lost_gpu_is_skipped_not_fatal():
    class LostFirstGPU(fakes.FakeNVML):
        def nvmlDeviceGetHandleByIndex(self, i):  # noqa: N802 - pynvml's name
            if i == 0:
                raise fakes.NVMLError("GPU is lost")
            return i

    fake = LostFirstGPU(gpus=[dict(name="A", util=1, used=1, total=2, power_mw=0, temp=0)] * 2)
    assert [r.index for r in nvml.readings(fake)] == [1]


def test_nvml_readings_convert_units_and_survive_unsupported_queries():
    fake = fakes.FakeNVML(unsupported={"power_mw"})
    [r] = nvml.readings(fake)
    assert (r.utilization_pct, r.temperature_c, r.power_w) == (37.0, 54.0, None)
    assert r.memory_used_bytes == 2 * 1024**3
    assert fake.inits == fake.shutdowns == 1
    [r] = nvml.readings(fakes.FakeNVML())
    assert r.power_w == 31.0


def test_nvml_status_is_a_sentence_with_or_without_driver():
    assert nvml.status(fakes.FakeNVML()) == "NVIDIA driver 550.54.15, 1 GPU(s) seen by NVML."
    assert nvml.status(fakes.FakeNVML(fail_init=True)).startswith("no NVIDIA driver here")
    assert nvml.readings(fakes.FakeNVML(fail_init=True)) == []


def test_real_machine_gives_plain_answers_with_or_without_a_gpu():
    tf = env.tensorflow()
    found = env.gpus()
    assert len(found) == len(tf.config.list_physical_devices("GPU"))
    assert (env.memory_info("GPU:0") is None) == (not found)
    if not found:
        assert nvml.status().startswith(("no NVIDIA driver", "NVML is not installed", "NVIDIA driver"))
    else:
        assert env.build_info()["is_cuda_build"] is True


def test_memory_info_rejects_unknown_device_kinds():
    with pytest.raises(ValueError, match="device="):
        env.memory_info("TPU:0", tf=fakes.FakeTF())
    assert env.memory_info("GPU:0", tf=fakes.FakeTF())["peak"] == 4096


def test_report_summary_names_the_gpu_or_the_cpu():
    rep = env.report(tf=fakes.FakeTF(n_gpus=2), nvml=fakes.FakeNVML())
    assert rep.gpu_count == 2 and rep.summary().startswith("2 GPU(s): Tesla T4")
    assert rep.build["cuda_version"] == "12.5.1"
    cpu = env.report(tf=fakes.FakeTF(n_gpus=0, cuda=False), nvml=fakes.FakeNVML(fail_init=True))
    assert cpu.summary().startswith("CPU only")
    assert cpu.to_dict()["gpu_count"] == 0


def test_readiness_without_gpu_gives_advice_for_each_kind_of_machine():
    rep = env.report(tf=fakes.FakeTF(n_gpus=0, cuda=False), nvml=fakes.FakeNVML(fail_init=True))
    checks = readiness.checks(rep, data_ok=True)
    assert readiness.is_ready(checks)
    gpu_row = next(c for c in checks if c.name == "GPU visible to TensorFlow")
    assert gpu_row.ok is False and not gpu_row.required and "Colab" in gpu_row.advice
    windows = readiness.no_gpu_advice(rep, system="Windows")
    assert "WSL2" in windows and "otherwise use Colab" in windows
    rep.on_colab = True
    assert "Change runtime type" in readiness.no_gpu_advice(rep)
    rep.on_colab = False
    assert "COURSE_TF_FLAVOUR=cuda" in readiness.no_gpu_advice(rep, system="Linux", driver_present=True)
    rep.build["is_cuda_build"] = True
    driver_no_gpu = readiness.no_gpu_advice(rep, system="Linux", driver_present=True)
    assert "TF_CPP_MIN_LOG_LEVEL=0" in driver_no_gpu and "Cannot dlopen" in driver_no_gpu


def test_readiness_fails_on_corrupt_data_and_flags_old_gpus():
    rep = env.report(tf=fakes.FakeTF(n_gpus=1, details={"device_name": "Tesla P100", "compute_capability": (6, 0)}),
                     nvml=fakes.FakeNVML())
    checks = readiness.checks(rep, data_ok=False)
    assert not readiness.is_ready(checks)
    tc = next(c for c in checks if c.name.startswith("Tensor Cores"))
    assert tc.ok is False and "06" in tc.advice
    table = readiness.table(checks)
    assert "MISSING" in table and "What to do:" in table


def test_tensorflow_import_keeps_stderr_clean(tmp_path):
    import subprocess
    import sys

    code = "import helpers.env as e; tf = e.tensorflow(); print(tf.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.startswith("2.") and out.stderr == "", out.stderr


def test_gtx_cards_are_not_counted_as_having_tensor_cores():
    tf = fakes.FakeTF(n_gpus=1, details={"device_name": "NVIDIA GeForce GTX 1660", "compute_capability": (7, 5)})
    checks = readiness.checks(env.report(tf=tf, nvml=fakes.FakeNVML()))
    tc = next(c for c in checks if c.name.startswith("Tensor Cores"))
    assert tc.ok is False and "no Tensor Cores" in tc.detail
    t4 = readiness.checks(env.report(tf=fakes.FakeTF(n_gpus=1), nvml=fakes.FakeNVML()))
    assert next(c for c in t4 if c.name.startswith("Tensor Cores")).ok is True


def test_readiness_table_marks_required_rows():
    table = readiness.table([readiness.Check("Python >= 3.10", True, True, "3.11"),
                                 readiness.Check("GPU visible to TensorFlow", False, False, "none", "use Colab")])
    assert table.splitlines()[1].split()[:2] == ["ok", "required"]
    assert table.splitlines()[2].split()[:2] == ["no", "optional"]


def test_doctor_fails_plainly_on_a_missing_kernel_and_a_corrupt_data_file(tmp_path, capsys):
    import shutil

    broken = readiness.setup_checks(kernel_specs={}, prefix="/course/.venv", free_disk_bytes=10**9,
                                    available_memory_bytes=2**30, lab_port=8888, port_free=False)
    kernel = broken[0]
    assert kernel.required and kernel.ok is False and "make kernel" in kernel.advice
    assert [r.ok for r in broken[1:4]] == [False, False, False] and "LAB_PORT=8889" in broken[3].advice
    other_env = readiness.setup_checks(kernel_specs={"python3": "/elsewhere/share/jupyter/kernels/python3"},
                                       prefix="/course/.venv", free_disk_bytes=10**11,
                                       available_memory_bytes=2**34, port_free=True)
    assert other_env[0].ok is False, "a python3 kernel of another environment does not count"

    assert readiness.main(extra=broken) == 1
    out = capsys.readouterr().out
    assert 'Verdict: NOT READY. Missing: Jupyter kernel "python3" of this environment' in out

    data = tmp_path / "data"
    shutil.copytree(ROOT / "data", data)
    with open(data / "gpu_specs.csv", "r+b") as f:
        first = f.read(1)
        f.seek(0)
        f.write(bytes([first[0] ^ 1]))
    good = readiness.setup_checks(kernel_specs={"python3": f"{readiness.sys.prefix}/share/jupyter/kernels/python3"},
                                  free_disk_bytes=10**11, available_memory_bytes=2**34, port_free=True)
    assert readiness.main(data_dir=data, extra=good) == 1
    out = capsys.readouterr().out
    assert "Missing: Course data (sha256)" in out and "git checkout data/" in out
    assert readiness.main(extra=good) == 0


def test_tensorflow_flavour_names_the_installed_package():
    assert readiness.tensorflow_flavour({"tensorflow": "2.21.0", "nvidia-cudnn-cu12": "9.3"}) == (
        "tensorflow 2.21.0 with NVIDIA's CUDA libraries")
    assert readiness.tensorflow_flavour({"keras": "3.15.1"}) is None


def test_tf32_state_names_the_card_only_where_tf32_takes_effect():
    ampere = fakes.FakeTF(n_gpus=1, details={"device_name": "NVIDIA A100-SXM4-40GB", "compute_capability": (8, 0)})
    assert env.tf32_state(ampere).startswith("TF32 on: NVIDIA A100-SXM4-40GB (compute capability 8.0)")
    turing = fakes.FakeTF(n_gpus=1)
    assert env.tf32_state(turing) == ("TF32 allowed but unused: no GPU of compute capability 8.0 or higher, "
                                      "so float32 stays float32.")
    assert "no GPU," in env.tf32_state(fakes.FakeTF(n_gpus=0))
    ampere.config.experimental.enable_tensor_float_32_execution(False)
    try:
        assert env.tf32_state(ampere).startswith("TF32 off")
    finally:
        ampere.config.experimental.enable_tensor_float_32_execution(True)


# --------------------------------------------------------------------------- CUDA_VISIBLE_DEVICES -> NVML, by UUID
def _four_gpus(mig_on=None):
    gpus = [dict(name=f"GPU{i}", util=10 * i, used=i, total=100 + i, power_mw=0, temp=0) for i in range(4)]
    if mig_on is not None:
        gpus[mig_on]["mig"] = [{"uuid": "MIG-0a1b2c3d-0000-5000-8000-000000000001", "used": 1, "total": 5}]
    return fakes.FakeNVML(gpus=gpus)


@pytest.mark.parametrize("visible, tf_index, expected", [
    ("2,3", 0, 2), ("2,3", 1, 3),                                # SLURM: indices
    (f"{fakes.uuid(3)},{fakes.uuid(1)}", 0, 3),                  # Kubernetes: full UUIDs, in their order
    (f"{fakes.uuid(3)},{fakes.uuid(1)}", 1, 1),
    (fakes.uuid(2)[:12], 0, 2),                                  # a unique prefix, as CUDA accepts
    (fakes.uuid(2).upper(), 0, 2),
    ("2,-1,3", 1, None),                                         # CUDA stops at the first invalid entry
    ("", 0, None),                                               # empty: no GPU at all
])
def test_nvml_index_resolves_indices_and_uuids_as_cuda_does(visible, tf_index, expected):
    assert nvml.index_for(tf_index, {"CUDA_VISIBLE_DEVICES": visible}, _four_gpus()) == expected


def test_nvml_index_refuses_an_ambiguous_or_unknown_uuid_and_says_why():
    ambiguous = nvml.locate(0, {"CUDA_VISIBLE_DEVICES": "GPU-5d3e8a1"}, _four_gpus())  # every fake UUID's prefix
    assert ambiguous.index is None and "matches 4 GPUs" in ambiguous.why
    unknown = nvml.locate(0, {"CUDA_VISIBLE_DEVICES": "GPU-ffff"}, _four_gpus())
    assert unknown.index is None and "matches no GPU" in unknown.why
    no_driver = nvml.locate(0, {"CUDA_VISIBLE_DEVICES": fakes.uuid(0)}, fakes.FakeNVML(fail_init=True))
    assert no_driver.index is None and "without NVML" in no_driver.why


@pytest.mark.parametrize("entry", ["MIG-0a1b2c3d-0000-5000-8000-000000000001", "MIG-0a1b2c3d",
                                   f"MIG-{fakes.uuid(1)}/1/0"])  # R470+ names, a prefix, the older R450 form
def test_nvml_finds_the_card_of_a_mig_slice_but_reads_it_for_no_one(entry):
    where = nvml.locate(0, {"CUDA_VISIBLE_DEVICES": entry}, _four_gpus(mig_on=1))
    assert where.index is None and where.mig_parent == 1 and "MIG slice of NVML's GPU 1" in where.why


def test_gpus_reads_the_card_a_uuid_names_and_not_the_whole_card_for_a_mig_slice():
    tf = fakes.FakeTF(n_gpus=2, details={})
    by_uuid = env.gpus(tf=tf, nvml=_four_gpus(), environ={"CUDA_VISIBLE_DEVICES": f"{fakes.uuid(3)},{fakes.uuid(1)}"})
    assert [(g.name, g.memory_bytes) for g in by_uuid] == [("GPU3", 103), ("GPU1", 101)]
    [slice_] = env.gpus(tf=fakes.FakeTF(n_gpus=1, details={}), nvml=_four_gpus(mig_on=1),
                        environ={"CUDA_VISIBLE_DEVICES": "MIG-0a1b2c3d"})
    assert slice_.memory_bytes is None, "the whole card's memory is not the MIG slice's"
