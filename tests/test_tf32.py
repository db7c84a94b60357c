"""TF32 in notebook 01: the Dense vs NumPy comparison runs with TF32 off, and the setting comes back after.

On GPUs of compute capability 8.0 and up TensorFlow runs float32 matmuls as TF32 by default: the
inputs are rounded to a 10-bit mantissa (``enable_tensor_float_32_execution`` in
tensorflow/python/framework/config.py). This machine has no such GPU, so the rounding is simulated
in NumPy on the notebook's own batch and layer.
"""

from __future__ import annotations

import json
from pathlib import Path

import fakes
import numpy as np
import pytest

from helpers import data, env, nn

tf = env.tensorflow()
import keras  # noqa: E402  (after helpers.env imports TensorFlow quietly)

OLD_TOLERANCE = 1e-4  # the claim before TF32 was turned off around the comparison
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "01_deep_learning_basics.ipynb"


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to TF32's 10-bit mantissa (to nearest, ties away from zero), still as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x1000) & 0xFFFFE000  # drop the 13 low mantissa bits, rounding at the half
    return bits.astype(np.uint32).view(np.float32)


def test_tf32_rounding_keeps_ten_mantissa_bits():
    assert round_to_tf32(np.float32(1 + 2**-10)) == np.float32(1 + 2**-10)  # representable in TF32
    assert round_to_tf32(np.float32(1 + 2**-12)) == np.float32(1.0)  # below half a TF32 step: gone
    assert round_to_tf32(np.float32(1 + 2**-11)) == np.float32(1 + 2**-10)  # at the half: rounds up
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    assert np.abs(round_to_tf32(x) / x - 1).max() <= 2**-11


def _notebook_layer(seed: int):
    """Notebook 01's comparison: a Dense(128, relu) on the first 32 Fashion-MNIST images, and NumPy's answer."""
    (x_train, _), _ = data.load_fashion_mnist()
    batch = x_train.reshape(len(x_train), -1).astype("float32")[:32] / 255
    keras.utils.set_random_seed(seed)
    layer = keras.layers.Dense(128, activation="relu")
    with nn.tf32_off(tf):
        keras_out = layer(batch).numpy()
    W, b = (v.numpy() for v in layer.weights)
    return batch, W, b, keras_out, np.maximum(batch @ W + b, 0)


@pytest.mark.parametrize("seed", range(5))
def test_tf32_breaks_the_old_tolerance_and_full_float32_meets_the_claim(seed):
    batch, W, b, keras_out, by_hand = _notebook_layer(seed)
    # What an A100/L4/H100 with TF32 on computes: rounded inputs, float32 accumulation.
    tf32_out = np.maximum(round_to_tf32(batch) @ round_to_tf32(W) + b, 0)
    tf32_error = np.abs(tf32_out - by_hand).max()
    assert tf32_error > OLD_TOLERANCE, f"seed {seed}: TF32 differs by only {tf32_error:.1e}"
    assert tf32_error > 10 * nn.DENSE_TOLERANCE
    # The page's path, TF32 off: float32 rounding only.
    fp32_error = np.abs(keras_out - by_hand).max()
    assert fp32_error < nn.DENSE_TOLERANCE, f"seed {seed}: float32 differs by {fp32_error:.1e}"


def test_tf32_off_turns_it_off_and_restores_the_previous_state():
    gpu = fakes.FakeTF(details={"device_name": "NVIDIA A100-SXM4-40GB", "compute_capability": (8, 0)})
    experimental = gpu.config.experimental
    for before in (True, False):
        experimental.enable_tensor_float_32_execution(before)
        with nn.tf32_off(gpu):
            assert experimental.tensor_float_32_execution_enabled() is False
            assert env.tf32_state(gpu).startswith("TF32 off")
        assert experimental.tensor_float_32_execution_enabled() is before


def test_tf32_off_restores_the_state_after_an_error():
    gpu = fakes.FakeTF(details={"device_name": "NVIDIA L4", "compute_capability": (8, 9)})
    with pytest.raises(RuntimeError, match="inside the block"), nn.tf32_off(gpu):
        raise RuntimeError("an error inside the block")
    assert gpu.config.experimental.tensor_float_32_execution_enabled() is True


def test_the_notebook_compares_with_tf32_off_and_prints_the_state_beside_the_rate():
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    sources = ["".join(c["source"]) for c in cells]
    comparison = next(s for s in sources if "keras_out = layer(batch)" in s)
    lines = comparison.splitlines()
    call = next(i for i, line in enumerate(lines) if "keras_out = layer(batch)" in line)
    opening = next(i for i, line in enumerate(lines) if line.startswith("with nn.tf32_off(tf)"))
    assert opening < call and lines[call].startswith("    "), "the Keras call is not inside nn.tf32_off"
    rate = next(s for s in sources if "images_per_s = resnet_batch / timing.median" in s)
    assert "helpers.env.tf32_state(tf, hw.gpus)" in rate and "print(tf32_state)" in rate
