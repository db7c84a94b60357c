"""Parameter validation comes first; device settings are idempotent; setup reports the hardware."""

import subprocess
import sys

import fakes
import pytest

from helpers import params, session


@pytest.mark.parametrize("name, value, allowed", [
    ("SEED", "x", "an integer >= 0"),
    ("SEED", -1, "an integer >= 0"),
    ("SMOKE", "yes", "True or False"),
    ("RESULTS_PATH", "out.txt", ".json"),
    ("EPOCHS", 0, "from 1 to 1000"),
    ("SIZES", [], "non-empty list"),
    ("POLICY", "fp16", "'mixed_float16'"),
    ("N_WORKERS", 9, "from 1 to 8"),
])
def test_bad_parameter_names_the_parameter_and_what_is_allowed(name, value, allowed):
    with pytest.raises(ValueError) as err:
        params.validate({name: value})
    assert str(err.value).startswith(f"{name}=") and allowed in str(err.value)


def test_unknown_parameter_lists_the_known_ones():
    with pytest.raises(ValueError, match="Unknown parameter.*EPOCH.*allowed names are SMOKE"):
        params.validate({"EPOCH": 3})


def test_bad_seed_fails_before_tensorflow_is_imported():
    code = ("import sys, helpers\n"
            "try:\n    helpers.setup(SMOKE=True, SEED='x', RESULTS_PATH='')\n"
            "except ValueError as e:\n    print(e); print('tensorflow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "SEED='x' is not allowed" in out and out.strip().endswith("False")


def test_setup_twice_in_one_kernel_does_not_fail(capsys):
    first = session.setup(SMOKE=True, SEED=1, RESULTS_PATH="")
    second = session.setup(SMOKE=True, SEED=1, RESULTS_PATH="")
    out = capsys.readouterr().out
    assert out.count("Hardware: ") == 2 and first.summary() == second.summary()


def test_setup_seeds_so_runs_repeat():
    import numpy as np

    session.setup(SEED=7, quiet=True)
    a = np.random.rand(3)
    session.setup(SEED=7, quiet=True)
    assert (a == np.random.rand(3)).all()


def test_setup_rejects_bad_options_by_name():
    with pytest.raises(ValueError, match="logical_devices=0"):
        session.setup(logical_devices=0, quiet=True)


def test_memory_growth_is_set_on_every_gpu_and_tolerated_after_init():
    tf = fakes.FakeTF(n_gpus=2)
    assert session.configure_devices(tf, memory_growth=True) == []
    assert tf.growth == {"/physical_device:GPU:0": True, "/physical_device:GPU:1": True}
    assert session.configure_devices(tf) == []  # second run: already set, no note
    late = fakes.FakeTF(n_gpus=1, initialized=True)
    [note] = session.configure_devices(late)
    assert "Kernel > Restart" in note


def test_one_gpu_is_split_into_logical_gpus_of_a_small_fixed_size():
    # 0.9 x free memory per part would hold about 2 x 6.3 GiB of this 16 GiB card for the kernel's whole life.
    tf = fakes.FakeTF(n_gpus=1)
    assert session.configure_devices(tf, logical_devices=2, nvml=fakes.FakeNVML()) == []
    configs = tf.logical["/physical_device:GPU:0"]
    assert [c.memory_limit for c in configs] == [session.SPLIT_MEMORY_MB] * 2
    assert len(tf.config.list_logical_devices("GPU")) == 2 and tf.growth == {}
    session.configure_devices(tf, logical_devices=2, logical_memory_mb=512, nvml=fakes.FakeNVML())
    assert [c.memory_limit for c in tf.logical["/physical_device:GPU:0"]] == [512, 512]


def test_split_memory_covers_notebook_07s_largest_case_with_room_to_spare():
    weights = 784 * 256 + 256 + 256 * 10 + 10  # 07's build_model()
    copies = 6 * 4 * weights * 4  # six models on the first device; weights, gradients, Adam's two moments
    batch = 64 * 64 * 784 * 4 * 3  # the largest global batch on one device, two more prefetched
    activations = 64 * 64 * (256 + 10) * 4 * 3
    assert 3 * (copies + batch + activations) < session.SPLIT_MEMORY_MB * 1024**2 < 1024**3


def test_a_split_that_does_not_fit_in_free_memory_says_so():
    nearly_full = fakes.FakeNVML(gpus=[dict(name="T4", util=0, used=15 * 1024**3 + 900 * 1024**2,
                                            total=16 * 1024**3, power_mw=0, temp=0)])
    tf = fakes.FakeTF(n_gpus=1)
    [note] = session.configure_devices(tf, logical_devices=2, nvml=nearly_full)
    assert note.startswith("GPU:0 has 124 MiB free, less than the 2 x 256 MiB") and "Kernel > Restart" in note


def test_no_gpu_splits_the_cpu_and_enough_gpus_split_nothing():
    cpu_only = fakes.FakeTF(n_gpus=0)
    session.configure_devices(cpu_only, logical_devices=3)
    assert len(cpu_only.config.list_logical_devices("CPU")) == 3
    many = fakes.FakeTF(n_gpus=4)
    session.configure_devices(many, logical_devices=2)
    assert many.logical == {} and len(many.growth) == 4


def test_split_after_init_says_restart_unless_already_split():
    tf = fakes.FakeTF(n_gpus=0)
    session.configure_devices(tf, logical_devices=2)
    tf.initialized = True
    assert session.configure_devices(tf, logical_devices=2) == []  # same setting again: fine
    [note] = session.configure_devices(tf, logical_devices=4)
    assert "already started with 2 logical CPU" in note


def test_real_cpu_split_before_init_makes_logical_devices():
    code = ("import helpers, json; from helpers import env, session\n"
            "tf = env.tensorflow(); print(session.configure_devices(tf, logical_devices=2));"
            "print(len(tf.config.list_logical_devices('CPU')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "2"]


def test_scratch_dir_is_under_course_scratch(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_SCRATCH", str(tmp_path))
    assert session.scratch_dir("04_input") == tmp_path / "04_input"
    with pytest.raises(ValueError, match="name="):
        session.scratch_dir("../etc")


def test_several_gpus_split_evenly_without_memory_growth():
    tf = fakes.FakeTF(n_gpus=2)
    nvml = fakes.FakeNVML(gpus=[dict(name="A", util=0, used=0, total=8 * 1024**3, power_mw=0, temp=0)] * 2)
    assert session.configure_devices(tf, logical_devices=4, nvml=nvml) == []
    assert [len(c) for c in tf.logical.values()] == [2, 2]
    assert {c.memory_limit for c in tf.logical["/physical_device:GPU:1"]} == {session.SPLIT_MEMORY_MB}
    assert len(tf.config.list_logical_devices("GPU")) == 4
    assert tf.growth == {}, "TensorFlow ignores memory growth once GPUs are split: do not pretend"


def test_uneven_gpu_split_is_refused_with_the_allowed_values():
    with pytest.raises(ValueError, match="logical_devices=3 with 2 GPUs: use at most 2, or a multiple of 2"):
        session.configure_devices(fakes.FakeTF(n_gpus=2), logical_devices=3, nvml=fakes.FakeNVML())


def _cell(notebook: str, cell_id: str) -> str:
    import json

    nb = json.loads((session.ROOT / "notebooks" / notebook).read_text())
    return "".join(next(c for c in nb["cells"] if c.get("id") == cell_id)["source"])


@pytest.mark.parametrize("gpu_count", [0, 1, 2, 8])
def test_notebook_02s_second_setup_asks_for_a_split_this_kernel_cannot_make(gpu_count):
    """02's note ('use Kernel > Restart') prints on every machine; on 2 GPUs, asking for 2 devices splits nothing."""
    import ast

    tree = ast.parse(_cell("02_gpu_detection_and_placement.ipynb", "cell-19"))
    namespace = {"gpu_count": gpu_count}
    for statement in tree.body:  # run the cell up to its setup call, then read what that call asks for
        calls = [n for n in ast.walk(statement) if isinstance(n, ast.Call) and ast.unparse(n.func) == "helpers.setup"]
        if calls:
            [asked] = [k.value for k in calls[0].keywords if k.arg == "logical_devices"]
            logical_devices = eval(ast.unparse(asked), namespace)
            break
        exec(ast.unparse(statement), namespace)
    kernel = fakes.FakeTF(n_gpus=gpu_count)
    assert session.configure_devices(kernel, nvml=fakes.FakeNVML()) == []  # 02's first setup call
    kernel.initialized = True  # then TensorFlow starts
    notes = session.configure_devices(kernel, logical_devices=logical_devices, nvml=fakes.FakeNVML())
    assert len(notes) == 1 and f"cannot make {logical_devices} now: use Kernel > Restart" in notes[0], notes
