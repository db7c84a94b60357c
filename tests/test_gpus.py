"""helpers.gpus: lookup by device name (fakes for the GPU branch), the memory estimator, fits, time, energy, cost."""

import math

import keras
import pytest
from fakes import FakeNVML, FakeTF

from helpers import gpus, params

TABLE = gpus.specs()
BY_NAME = {g["name"]: g for g in TABLE}


# ---------------------------------------------------------------- the table and lookup
@pytest.mark.parametrize("reported, row", [
    ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80 GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40 GB"),
    ("Tesla T4", "Tesla T4"),
    ("NVIDIA L4", "L4"),          # not L40S
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA A10", "A10"),        # not A100
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80 GB"),
    ("NVIDIA H200", "H200 SXM 141 GB"),
    ("Tesla V100-SXM2-32GB", "Tesla V100 SXM2"),
    ("Tesla P100-PCIE-16GB", "Tesla P100 PCIe 16 GB"),
    ("NVIDIA RTX A6000", "RTX A6000"),
    ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
])
def test_names_as_tensorflow_reports_them_find_their_row(reported, row):
    found = gpus.lookup(reported, TABLE)
    assert found.found and found.row["name"] == row and found.note == f"in the table as {row!r}"


@pytest.mark.parametrize("reported, reason", [
    ("NVIDIA H100 PCIe", "another form factor"),
    ("NVIDIA H100 NVL", "another form factor"),
    ("Tesla V100-PCIE-16GB", "another form factor"),
    ("NVIDIA A100 80GB PCIe", "another form factor"),
    ("NVIDIA A10G", "has no 'NVIDIA A10G'"),
    ("Tesla K80", "has no 'Tesla K80'"),
    ("NVIDIA GeForce GTX 1080 Ti", "has no"),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", "'laptop' names a variant"),
    ("NVIDIA GeForce RTX 4090 D", "'d' names a variant"),
    ("Quadro RTX 6000", "has no"),
])
def test_names_not_in_the_table_get_none_and_a_reason(reported, reason):
    found = gpus.lookup(reported, TABLE)
    assert not found.found and found.row is None
    assert found.note.startswith("not in the table") and reason in found.note


def test_a_known_model_with_another_memory_size_says_so():
    found = gpus.lookup("Tesla V100-SXM2-16GB", TABLE)
    assert found.row["name"] == "Tesla V100 SXM2" and "this card has 16 GB" in found.note


def test_parse_name_and_bad_names():
    assert gpus.parse_name("Tesla P100 PCIe 16 GB") == gpus.ParsedName("p100", "PCIe", 16, ())
    assert gpus.parse_name("GeForce RTX 4090").model == "rtx4090"
    with pytest.raises(ValueError, match="name=''"):
        gpus.parse_name("")


def test_detected_looks_up_the_gpus_tensorflow_sees_with_fakes():
    a100 = FakeTF(n_gpus=2, details={"device_name": "NVIDIA A100-SXM4-80GB", "compute_capability": (8, 0)})
    found = gpus.detected(tf=a100, nvml=FakeNVML(), table=TABLE)
    assert [f.row["name"] for f in found] == ["A100 SXM4 80 GB"] * 2
    unknown = FakeTF(details={"device_name": "NVIDIA B300 SXM6 AC", "compute_capability": (10, 3)})
    (f,) = gpus.detected(tf=unknown, nvml=FakeNVML(fail_init=True), table=TABLE)
    assert not f.found and "not in the table" in f.note
    assert gpus.detected(tf=FakeTF(n_gpus=0), nvml=FakeNVML(fail_init=True), table=TABLE) == []


def test_every_gpu_with_tf32_tensor_cores_has_its_dense_tf32_figure():
    """Compute capability 8.0 and up has TF32 Tensor Cores (the features table says "yes"): the spec table must not
    show "-" there. Dense TF32 is half the dense FP16 Tensor Core peak on every card of the table; a sparsity
    figure passed as dense would sit at about 1x."""
    for g in TABLE:
        tf32 = g["tf32_tensor_tflops_dense"]
        if g["compute_capability"] >= 8.0:
            assert tf32, f"{g['name']}: no TF32 figure"
            assert 1.9 <= g["fp16_tensor_tflops_dense"] / tf32 <= 2.1, g
        else:
            assert tf32 is None, g
    assert (BY_NAME["L40S"]["tf32_tensor_tflops_dense"], BY_NAME["H200 SXM 141 GB"]["tf32_tensor_tflops_dense"]) \
        == (183, 494)  # the datasheets: L40S 183 dense (366 with sparsity); H200 SXM 989 with sparsity


def test_tables_have_a_row_per_gpu_and_every_row_a_source():
    assert all(g["source"].strip() for g in TABLE)
    assert len(gpus.spec_table(TABLE).splitlines()) == len(TABLE) + 1
    labels = [gpus.short_name(g) for g in TABLE]
    assert len(set(labels)) == len(labels), labels
    for name in ("Tesla T4", "L4", "H100 SXM5 80 GB"):  # the minimum, and workstation cards
        assert name in BY_NAME
    assert any(g["name"].startswith(("RTX", "GeForce")) for g in TABLE)


def test_features_follow_the_compute_capability_gates():
    assert gpus.features(6.0) == dict.fromkeys(gpus.features(6.0), False)
    assert gpus.features((7, 0))["float16 Tensor Cores"] and not gpus.features((7, 5))["bfloat16 and TF32 Tensor Cores"]
    assert gpus.features(8.6)["bfloat16 and TF32 Tensor Cores"] and not gpus.features(8.6)["FP8 Tensor Cores"]
    assert all(gpus.features(9.0).values())
    for g in TABLE:  # the table's BF16 column agrees with the gate
        assert g["bf16_tensor"] == gpus.features(g["compute_capability"])["bfloat16 and TF32 Tensor Cores"]
    with pytest.raises(ValueError, match="compute_capability"):
        gpus.features("8.0")


# ---------------------------------------------------------------- memory
def tiny_model():
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(2)])


@pytest.mark.parametrize("optimizer, slots", [("sgd", 0), ("momentum", 1), ("adam", 2)])
def test_training_memory_counts_each_part(optimizer, slots):
    e = gpus.training_memory(tiny_model(), batch_size=10, optimizer=optimizer)
    assert (e.weights, e.weight_copies, e.gradients, e.activations) == (58 * 4, 0, 58 * 4, 10 * 10 * 4)
    assert e.optimizer_state == slots * 58 * 4
    assert e.total == sum(v for k, v in e.parts().items() if k != "total")


def test_mixed_precision_halves_activations_and_adds_weight_copies():
    f32 = gpus.training_memory(tiny_model(), 10, "adam", "float32")
    for policy in ("mixed_float16", "mixed_bfloat16"):
        mixed = gpus.training_memory(tiny_model(), 10, "adam", policy)
        assert mixed.activations * 2 == f32.activations
        assert mixed.weights == f32.weights and mixed.gradients == f32.gradients
        assert mixed.weight_copies == 58 * 2


def test_non_trainable_weights_cost_memory_but_no_gradient():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.BatchNormalization()])
    e = gpus.training_memory(model, 1, "sgd")
    assert e.weights == (15 + 12) * 4 and e.gradients == (15 + 6) * 4


def test_nested_models_count_their_inner_layers():
    inner = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(3)])
    outer = keras.Sequential([keras.Input((4,)), inner, keras.layers.Dense(2)])
    assert gpus.activation_values(outer) == 8 + 3 + 2


def test_estimate_table_shows_the_measurement_and_error():
    e = gpus.MemoryEstimate(100, 0, 100, 200, 600)
    text = e.table(measured=1250)
    assert "estimate, total" in text and "error -20.0%" in text


def test_bad_arguments_name_the_allowed_values():
    with pytest.raises(ValueError, match="optimizer='lamb'.*'adam'"):
        gpus.training_memory(tiny_model(), 1, "lamb")
    with pytest.raises(ValueError, match="policy='float16'"):
        gpus.parameter_memory(1e6, "adam", "float16")
    with pytest.raises(ValueError, match="batch_size=0"):
        gpus.training_memory(tiny_model(), 0)
    with pytest.raises(ValueError, match="n_params=-1"):
        gpus.parameter_memory(-1)


def test_parameter_memory_for_training_and_inference():
    assert gpus.parameter_memory(1e9, "adam", "float32").total == 16e9
    assert gpus.parameter_memory(1e9, "adam", "mixed_float16").total == 18e9
    assert gpus.parameter_memory(1e9, "momentum", "mixed_bfloat16").total == 14e9
    inference = gpus.parameter_memory(7e9, policy="float32", training=False)
    assert inference.total == 28e9 and inference.gradients == 0 and inference.notes


# ---------------------------------------------------------------- fits
def test_fits_counts_binary_gigabytes_and_keeps_a_margin():
    assert gpus.fits(15e9, 16)          # 0.9 x 16 x 2**30 = 15.46e9
    assert not gpus.fits(15.5e9, 16)
    assert gpus.fits(15.5e9, 16, usable=1.0)
    assert gpus.fits(0.9 * 16 * 2**30, 16)
    with pytest.raises(ValueError, match="usable=1.5"):
        gpus.fits(1, 16, usable=1.5)


def test_fits_table_marks_each_gpu():
    text = gpus.fits_table({"big": 70e9, "small": 1e9}, TABLE)
    big = next(line for line in text.splitlines() if line.startswith("big"))
    assert big.split()[2:] == ["yes" if g["memory_gb"] * 0.9 * 2**30 >= 70e9 else "-" for g in TABLE]
    with pytest.raises(ValueError, match="jobs is empty"):
        gpus.fits_table({}, TABLE)


# ---------------------------------------------------------------- time, energy, cost
def test_rates_are_measured_where_nvidia_published_them_else_scaled_by_peak():
    for name in ("Tesla V100 SXM2", "A100 SXM4 40 GB"):
        rate, source = gpus.training_rate(BY_NAME[name], TABLE)
        assert source.startswith("measured by NVIDIA") and rate == gpus.MEASURED_TRAINING[name][0]
    rate, source = gpus.training_rate(BY_NAME["H100 SXM5 80 GB"], TABLE)
    assert source.startswith("scaled from") and "rough" in source
    assert math.isclose(rate, 2375 * 989 / 312)


def test_the_p100_is_not_comparable_when_rates_are_scaled_from_peaks():
    """No Tensor Cores: the P100's FP16 peak is plain half precision, so no rate is scaled to it, and no figure
    derived from a rate (hours, kWh, cost) is printed for it, even with a price."""
    p100 = BY_NAME["Tesla P100 PCIe 16 GB"]
    assert not gpus.has_tensor_cores(p100) and all(gpus.has_tensor_cores(g) for g in TABLE if g is not p100)
    rate, source = gpus.training_rate(p100, TABLE)
    assert rate is None and source.startswith("not comparable (no Tensor Cores)") and "18.7" in source
    costs = gpus.run_cost(1e6, TABLE, {"Tesla P100 PCIe 16 GB": 1.0, "Tesla T4": 0.5})
    assert costs["Tesla P100 PCIe 16 GB"] | {"rate_source": "-"} == {
        "images_per_s": None, "rate_source": "-", "hours": None, "kwh": None, "cost": None, "fits": None}
    line = next(x for x in gpus.cost_table(costs).splitlines() if x.startswith("Tesla P100"))
    assert "not comparable (no Tensor Cores)" in line and line.split()[-2:] == ["not", "scaled"], line
    assert costs["Tesla T4"]["cost"] is not None  # the other rows keep their numbers


def test_run_cost_arithmetic_and_prices():
    images = 1_281_167 * 90
    costs = gpus.run_cost(images, TABLE, {"Tesla T4": 0.5}, job_bytes=18e9)
    t4 = costs["Tesla T4"]
    assert math.isclose(t4["hours"], images / t4["images_per_s"] / 3600)
    assert math.isclose(t4["kwh"], t4["hours"] * 70 / 1000)
    assert math.isclose(t4["cost"], t4["hours"] * 0.5)
    assert t4["fits"] is False and costs["A100 SXM4 40 GB"]["fits"] is True
    assert all(c["cost"] is None for name, c in costs.items() if name != "Tesla T4")
    assert "cost" in gpus.cost_table(costs).splitlines()[0]
    assert "cost" not in gpus.cost_table(gpus.run_cost(images, TABLE)).splitlines()[0]
    with pytest.raises(ValueError, match="images=0"):
        gpus.run_cost(0, TABLE)


def test_price_parameter_rule_and_names():
    assert params.validate({"PRICE_PER_HOUR": {}}) == {"PRICE_PER_HOUR": {}}
    for bad in ({"Tesla T4": 0}, {"Tesla T4": -1.0}, {"Tesla T4": True}, {"Tesla T4": "1"}, [0.5], 0.5):
        with pytest.raises(ValueError, match="PRICE_PER_HOUR=.*GPU name"):
            params.validate({"PRICE_PER_HOUR": bad})
    assert gpus.check_prices({"L4": 1, "Tesla T4": 0.25}, TABLE) == {"L4": 1, "Tesla T4": 0.25}
    with pytest.raises(ValueError, match="'A100'.*did you mean 'A100 SXM4 40 GB'"):
        gpus.check_prices({"A100": 2.0}, TABLE)


def test_units_table_divides_nvidia_rates_by_the_cpu_rate():
    lines = gpus.units_table(4.24).splitlines()
    assert lines[1].split()[-1] == "100"  # T4 float32: 424 / 4.24
    with pytest.raises(ValueError, match="cpu_images_per_s=0"):
        gpus.units_table(0)


def test_plot_has_one_point_per_gpu():
    ax = gpus.plot_specs(TABLE)
    assert sum(len(c.get_offsets()) for c in ax.collections) == len(TABLE)


def test_suggested_policy_gives_a_p100_float32_and_newer_cards_their_tensor_core_format():
    p100 = next(g for g in TABLE if g["name"].startswith("Tesla P100"))
    assert p100["compute_capability"] == 6.0 and not p100["bf16_tensor"]
    assert gpus.suggested_policy(p100["compute_capability"]).startswith("float32 (no Tensor Cores before 7.0)")
    assert "bfloat16" not in gpus.suggested_policy((6, 0))  # no bfloat16 on a P100
    assert gpus.suggested_policy((6, 1)) == gpus.suggested_policy((6, 0))
    assert gpus.suggested_policy((7, 0)) == gpus.suggested_policy(7.5) == "mixed_float16 with loss scaling"
    assert gpus.suggested_policy((8, 0)) == gpus.suggested_policy((9, 0)) == "mixed_bfloat16"
    for g in TABLE:  # every row of the table gets the policy its Tensor Cores allow
        expected = "mixed_bfloat16" if g["bf16_tensor"] else None
        if expected:
            assert gpus.suggested_policy(g["compute_capability"]) == expected, g["name"]


def test_tf32_state_beside_a_gpu_rate_follows_the_card():
    from fakes import FakeNVML, FakeTF

    from helpers import env

    cards = [("Tesla P100-PCIE-16GB", (6, 0), "TF32 allowed but unused"),
             ("Tesla T4", (7, 5), "TF32 allowed but unused"),
             ("NVIDIA A100-SXM4-40GB", (8, 0), "TF32 on: ")]
    for name, cc, start in cards:
        details = {"device_name": name, "compute_capability": cc}
        tf = FakeTF(details=details)
        tf.config.experimental.enable_tensor_float_32_execution(True)
        assert env.tf32_state(tf, env.gpus(tf=tf, nvml=FakeNVML())).startswith(start), details
