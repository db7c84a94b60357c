"""Exercise feedback of notebook 00."""

import fakes

from helpers import check


def test_gpu_count_accepts_the_right_number_and_explains_mistakes():
    tf = fakes.FakeTF(n_gpus=1)
    assert check.gpu_count(1, tf=tf).ok
    assert "all physical devices" in check.gpu_count(2, tf=tf).message
    assert "len(" in check.gpu_count(["gpu"], tf=tf).message
    assert "whole number" in check.gpu_count("1", tf=tf).message
    import numpy as np

    assert check.gpu_count(np.int64(1), tf=tf).ok and check.gpu_count(1.0, tf=tf).ok
    assert not check.gpu_count(..., tf=tf).ok and "Not answered yet" in check.gpu_count(..., tf=tf).message


def test_bf16_gpus_names_the_wrong_entries():
    from helpers import data

    specs = data.load_gpu_specs()
    right = [g["name"] for g in specs if g["compute_capability"] >= 8.0]
    assert check.bf16_tensor_gpus(right).ok and check.bf16_tensor_gpus(set(right)).ok
    fb = check.bf16_tensor_gpus(right + ["Tesla T4"])
    assert not fb.ok and "Tesla T4 (7.5)" in fb.message
    fb = check.bf16_tensor_gpus(right[:-1])
    assert f"Missing, with compute capability >= 8.0: {right[-1]}" in fb.message
    strict = [g["name"] for g in specs if g["compute_capability"] > 8.0]
    assert "A100 SXM4 40 GB" in check.bf16_tensor_gpus(strict).message
    assert "use >=, not >" in check.bf16_tensor_gpus(strict).message
    rows = [g for g in specs if g["compute_capability"] >= 8.0]
    assert 'g["name"]' in check.bf16_tensor_gpus(rows).message  # rows instead of names: no TypeError
    assert "Not names from the table" in check.bf16_tensor_gpus(["RTX 9090"]).message
    assert "list" in check.bf16_tensor_gpus("A10").message


def test_feedback_renders_as_text_and_html():
    fb = check.Feedback(False, "a < b")
    assert repr(fb) == "❌ a < b" and "&lt;" in fb._repr_html_() and not fb


def test_whole_number_accepts_numpy_floats_and_scalar_tensors():
    import numpy as np

    from helpers import env

    tf = env.tensorflow()
    assert [check.whole_number(v) for v in (3, np.int64(3), 3.0, tf.constant(3))] == [3, 3, 3, 3]
    assert not check.whole_number(2.5).ok and not check.whole_number(True).ok
