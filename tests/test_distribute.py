"""helpers.distribute: the N_REPLICAS check (CPU and GPU branches, with fakes), the readings and the figures."""

from types import SimpleNamespace

import pytest
from fakes import FakeNVML

from helpers import distribute


def nvml_with(n_gpus):
    return FakeNVML(gpus=[{"name": "Tesla T4", "util": 0, "used": 0, "total": 16 * 1024**3, "power_mw": 0,
                           "temp": 40}] * n_gpus)


# --------------------------------------------------------------------------- visible_gpu_count
@pytest.mark.parametrize("n_gpus, environ, expected", [
    (0, {}, 0),
    (2, {}, 2),
    (4, {"CUDA_VISIBLE_DEVICES": "1,3"}, 2),
    (4, {"CUDA_VISIBLE_DEVICES": ""}, 0),
    (4, {"CUDA_VISIBLE_DEVICES": "-1"}, 0),
    (4, {"CUDA_VISIBLE_DEVICES": "0,-1,2"}, 1),  # CUDA stops at the first invalid entry
    (1, {"CUDA_VISIBLE_DEVICES": "0,1,2"}, 1),  # never more than the machine has
])
def test_visible_gpu_count_follows_nvml_and_cuda_visible_devices(n_gpus, environ, expected):
    assert distribute.visible_gpu_count(nvml_with(n_gpus), environ) == expected


def test_visible_gpu_count_without_a_driver_is_zero():
    assert distribute.visible_gpu_count(FakeNVML(fail_init=True), {}) == 0


# --------------------------------------------------------------------------- check_replicas
@pytest.mark.parametrize("n, gpus, cores", [
    (1, 0, 2), (2, 0, 2), (8, 0, 2),  # logical CPUs: up to 4 per core
    (2, 2, 8), (2, 8, 8),  # enough GPUs: the first N
    (4, 1, 2), (8, 1, 2),  # one GPU split into N
    (6, 2, 2), (16, 2, 2),  # two GPUs split evenly
])
def test_check_replicas_accepts_what_the_machine_holds(n, gpus, cores):
    assert distribute.check_replicas(n, gpu_count=gpus, cpu_cores=cores) == n


@pytest.mark.parametrize("n, gpus, cores, hint", [
    (0, 0, 2, "an integer from 1"),
    (-2, 0, 2, "an integer from 1"),
    (2.0, 0, 2, "an integer from 1"),
    (True, 0, 2, "an integer from 1"),
    ("2", 0, 2, "an integer from 1"),
    (9, 0, 2, "use 1 to 8"),
    (9, 1, 2, "use 1 to 8"),
    (3, 2, 8, "at most 2, or a multiple of 2 up to 16"),
    (18, 2, 8, "at most 2, or a multiple of 2 up to 16"),
])
def test_check_replicas_refuses_more_than_the_machine_holds_naming_the_parameter(n, gpus, cores, hint):
    with pytest.raises(ValueError, match="N_REPLICAS=") as err:
        distribute.check_replicas(n, gpu_count=gpus, cpu_cores=cores)
    assert hint in str(err.value)


def test_check_replicas_counts_the_machine_when_not_told(monkeypatch):
    monkeypatch.setattr(distribute.os, "cpu_count", lambda: 2)
    assert distribute.check_replicas(4, nvml=FakeNVML(fail_init=True), environ={}) == 4
    with pytest.raises(ValueError, match="N_REPLICAS=9"):
        distribute.check_replicas(9, nvml=FakeNVML(fail_init=True), environ={})
    # A machine with 2 GPUs (fake NVML): 3 replicas cannot split them evenly.
    with pytest.raises(ValueError, match="2 GPUs"):
        distribute.check_replicas(3, nvml=nvml_with(2), environ={})


def test_replica_limit():
    assert distribute.replica_limit(0, 2) == 8
    assert distribute.replica_limit(0, 0) == distribute.MAX_REPLICAS_PER_CORE
    assert distribute.replica_limit(2, 2) == 2 * distribute.MAX_SPLITS_PER_GPU


# --------------------------------------------------------------------------- readings
def test_devices_reading_names_the_kind_and_the_restart_when_fewer_than_asked():
    cpu = distribute.devices_reading(4, ["/device:CPU:0"], "CPU", 0)
    assert cpu.startswith("1 replica on 1 logical CPU,")
    assert "N_REPLICAS is 4" in cpu and "Kernel > Restart" in cpu
    split = distribute.devices_reading(2, ["/device:GPU:0", "/device:GPU:1"], "GPU", 1)
    assert "2 logical GPUs split from 1 physical GPU:" in split and "Restart" not in split
    real = distribute.devices_reading(2, ["/device:GPU:0", "/device:GPU:1"], "GPU", 4)
    assert "2 GPUs, one replica each" in real


def test_devices_reading_says_how_many_devices_exist_and_how_many_the_replicas_use():
    eight = distribute.devices_reading(2, ["/device:GPU:0", "/device:GPU:1"], "GPU", 8, available=8)
    assert eight.startswith("2 replicas on 2 GPUs, one replica each")
    assert "This kernel has 8 GPUs; the replicas use the first 2" in eight and "other 6 take no part" in eight
    split = distribute.devices_reading(2, ["/device:GPU:0", "/device:GPU:1"], "GPU", 1, available=4)
    assert "This kernel has 4 logical GPUs" in split
    assert "This kernel has" not in distribute.devices_reading(2, ["/device:CPU:0", "/device:CPU:1"], "CPU", 0,
                                                               available=2)


def test_all_reduce_name_reads_the_strategy():
    def fake(ops, implementation=None):
        options = SimpleNamespace(implementation=SimpleNamespace(name=implementation)) if implementation else None
        return SimpleNamespace(extended=SimpleNamespace(_cross_device_ops=ops, _communication_options=options))

    class CollectiveAllReduce:
        pass

    class ReductionToOneDevice:
        pass

    assert distribute.all_reduce_name(fake(CollectiveAllReduce(), "RING")) == "CollectiveAllReduce (RING)"
    assert distribute.all_reduce_name(fake(CollectiveAllReduce(), "AUTO")) == "CollectiveAllReduce (NCCL on GPUs)"
    assert distribute.all_reduce_name(fake(ReductionToOneDevice())) == "ReductionToOneDevice"
    assert distribute.all_reduce_name(fake(None)) == "unknown"


def test_all_reduce_name_of_a_real_mirrored_strategy_on_the_cpu():
    tf = pytest.importorskip("tensorflow")
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("checks the CPU branch")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    assert distribute.all_reduce_name(strategy) == "CollectiveAllReduce (RING)"


def test_throughput_reading_words_faster_and_slower():
    slower = distribute.throughput_reading({"1_same_global": 30000, "N": 20000, "1": 20000}, 2, 64, "this CPU")
    assert "1.50x slower (rates within 5% of each other count as about as fast), measured on this CPU" in slower
    assert "a speed-up of 1.00x" in slower
    assert "scaling efficiency of 50%" in slower
    faster = distribute.throughput_reading({"1_same_global": 1000, "N": 3800, "1": 1000}, 4, 32, "these 4 GPUs")
    assert "3.80x faster (rates within 5% of each other count as about as fast), measured on these 4 GPUs" in faster
    assert "global batch 128" in faster
    assert "about as fast" in distribute.throughput_reading({"1_same_global": 100, "N": 101, "1": 100}, 2, 8, "x")
    with pytest.raises(ValueError, match="samples_per_s lacks"):
        distribute.throughput_reading({"N": 1, "1": 1}, 2, 8, "this CPU")


def test_scaling_reading_for_logical_cpus_split_gpu_and_real_gpus():
    cpu = distribute.scaling_reading(1.0, 1.1, 2, "CPU", 0, 2, all_reduce_ms=1.0, step_ms=5.0)
    assert "logical CPUs" in cpu and "about 1x" in cpu and "20% of one 5.00 ms step" in cpu
    assert "7.70x on 8x A100 40 GB" in cpu and "15.05x on 16x V100 32 GB" in cpu and "DeepLearningExamples" in cpu
    filled = distribute.scaling_reading(1.5, 1.8, 2, "GPU", 1, 8)
    assert "logical GPUs split from 1 physical GPU" in filled
    assert "the best to expect is a speed-up of about 1.80x" in filled
    real = distribute.scaling_reading(3.5, 1.0, 4, "GPU", 4, 8)
    assert "has its own GPU" in real and "88%" in real and "longer step" in real
    ideal = distribute.scaling_reading(3.9, 1.0, 4, "GPU", 8, 8)
    assert "Short of the ideal" not in ideal
    assert "nothing to scale" in distribute.scaling_reading(1.0, 1.0, 1, "CPU", 0, 2)
    with pytest.raises(ValueError):
        distribute.scaling_reading(float("nan"), 1.0, 2, "CPU", 0, 2)


def test_published_figures_are_nvidias():
    by_label = {p.label: p for p in distribute.PUBLISHED}
    assert by_label["8x A100 40 GB (TF32)"].speedup == 7.70
    assert by_label["16x V100 32 GB (FP32)"].speedup == 15.05
    assert all(0.9 < p.efficiency <= 1.0 for p in distribute.PUBLISHED)


# --------------------------------------------------------------------------- figures
def test_sketch_draws_up_to_four_replicas_and_refuses_bad_sizes():
    import matplotlib

    matplotlib.use("Agg")
    ax = distribute.sketch(8, 512)
    texts = [t.get_text() for t in ax.texts]
    assert any("replica 7" in t for t in texts) and not any("replica 4" in t for t in texts)
    assert any("g0 + g1 + ... + g7" in t for t in texts)
    assert any("g0 + g1" in t and "..." not in t for t in (x.get_text() for x in distribute.sketch(2, 128).texts))
    for bad in ((0, 128), (4, 2), (2.0, 128)):
        with pytest.raises(ValueError):
            distribute.sketch(*bad)


def test_scaling_figure_has_two_panels_with_nvidia_points():
    import matplotlib

    matplotlib.use("Agg")
    fig = distribute.scaling_figure(2, 1.0, 0.6)
    left, right = fig.axes
    labels = [line.get_label() for line in right.lines]
    assert any("measured by NVIDIA" in label for label in labels)
    assert any("global batch fixed" in label for label in labels)
    with pytest.raises(ValueError):
        distribute.scaling_figure(0, 1.0)


def test_scaling_figure_draws_the_split_ceiling_it_is_given():
    import matplotlib

    matplotlib.use("Agg")
    fig = distribute.scaling_figure(2, 1.03, 0.59, split=True, ceiling=1.76)
    left, _right = fig.axes
    ceiling = [line for line in left.lines if line.get_label().startswith("ceiling on one split device")]
    assert ceiling and ceiling[0].get_label() == "ceiling on one split device (1.76x)"
    assert list(ceiling[0].get_ydata()) == [1.76, 1.76]
    with pytest.raises(ValueError, match="ceiling="):
        distribute.scaling_figure(2, 1.0, split=True, ceiling=0.0)


# --------------------------------------------------------------------------- all-reduce arithmetic and yardstick
@pytest.mark.parametrize("replicas, factor", [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75)])
def test_ring_bytes_is_two_n_minus_one_over_n_of_the_gradients(replicas, factor):
    assert distribute.ring_bytes(1000, replicas) == pytest.approx(factor * 1000)


@pytest.mark.parametrize("nbytes, replicas, param", [(0, 2, "nbytes="), (-4, 2, "nbytes="), (100, 0, "replicas="),
                                                      (100, 2.0, "replicas="), (100, True, "replicas=")])
def test_ring_bytes_refuses_bad_arguments(nbytes, replicas, param):
    with pytest.raises(ValueError, match=param):
        distribute.ring_bytes(nbytes, replicas)


def test_predicted_seconds_counts_every_replica_on_a_shared_device_and_one_link_otherwise():
    own = distribute.predicted_seconds(0.001, 4e6, 4, 1e9, shared=False)
    shared = distribute.predicted_seconds(0.001, 4e6, 4, 1e9, shared=True)
    assert own == pytest.approx(0.001 + 1.5 * 4e6 / 1e9)
    assert shared == pytest.approx(0.001 + 4 * 1.5 * 4e6 / 1e9)
    assert distribute.predicted_seconds(0.002, 4e6, 1, 1e9, shared=True) == 0.002  # one replica: nothing moves
    with pytest.raises(ValueError, match="fixed_s="):
        distribute.predicted_seconds(-1, 4e6, 2, 1e9, shared=True)
    with pytest.raises(ValueError, match="bytes_per_s="):
        distribute.predicted_seconds(0, 4e6, 2, 0, shared=True)


class _RecordingTF:
    """Just enough of TensorFlow for copy_seconds' GPU branch: records where each tensor is made."""

    float32 = "float32"

    def __init__(self):
        self.where, self.log = [], []

    def device(self, name):
        tf = self

        class Scope:
            def __enter__(self):
                tf.where.append(name)

            def __exit__(self, *exc):
                tf.where.pop()

        return Scope()

    def ones(self, shape, dtype=None):
        self.log.append(("ones", self.where[-1], shape[0]))
        return "tensor"

    def identity(self, tensor):
        self.log.append(("identity", self.where[-1]))
        return tensor


def test_copy_seconds_on_gpus_copies_from_the_first_replica_to_the_last(monkeypatch):
    from helpers import bench

    monkeypatch.setattr(bench, "device_sync", lambda tf=None: (lambda: None))
    fake = _RecordingTF()
    seconds = distribute.copy_seconds(4000, ["/device:GPU:0", "/device:GPU:1"], "GPU", repeats=2, tf=fake)
    assert seconds > 0
    assert fake.log[0] == ("ones", "/device:GPU:0", 1000)
    assert set(fake.log[1:]) == {("identity", "/device:GPU:1")}


def test_copy_seconds_on_cpus_uses_a_host_copy_and_refuses_bad_arguments():
    assert distribute.copy_seconds(4_000_000, ["/device:CPU:0", "/device:CPU:1"], "CPU", repeats=2) > 0
    for kwargs, param in (({"nbytes": 2}, "nbytes="), ({"kind": "TPU"}, "kind="), ({"devices": []}, "devices="),
                          ({"repeats": 0}, "repeats=")):
        args = {"nbytes": 4000, "devices": ["/device:CPU:0"], "kind": "CPU", "repeats": 2, **kwargs}
        with pytest.raises(ValueError, match=param):
            distribute.copy_seconds(**args)
