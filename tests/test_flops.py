"""helpers.flops: FLOPs of Keras layers and models, and of matrix products."""

import keras
import numpy as np
import pytest

from helpers import flops


def test_flops_of_dense_and_conv_layers_count_two_per_multiply_add():
    model = keras.Sequential([keras.Input((8, 8, 3)),
                              keras.layers.Conv2D(4, 3, padding="same"),  # 8*8 pixels x 3*3*3*4 MACs
                              keras.layers.Conv2D(6, 3, strides=2, padding="valid"),  # 3*3 pixels x 3*3*4*6
                              keras.layers.Flatten(), keras.layers.Dense(5)])  # 54 x 5
    count = flops.count_flops(model)
    conv = 2 * (64 * 108 + 9 * 216)
    assert count.by_type == {"Conv2D": conv, "Dense": 2 * 54 * 5}
    assert count.total == conv + 540 and count.macs == count.total // 2
    assert len(count.layers) == 3


def test_flops_count_nested_models_and_sequence_dense():
    inner = keras.Sequential([keras.Input((7, 4)), keras.layers.Dense(3)])  # 7 positions x 4 x 3
    outer = keras.Sequential([keras.Input((7, 4)), inner, keras.layers.Dense(2)])  # 7 x 3 x 2
    assert flops.count_flops(outer).total == 2 * (7 * 12 + 7 * 6)
    with pytest.raises(ValueError, match="built Keras model"):
        flops.count_flops("resnet")


def test_resnet50_matches_published_size():
    model = keras.applications.ResNet50(weights=None)
    assert model.count_params() == 25_636_712
    macs = flops.count_flops(model).macs
    assert 3.8e9 <= macs <= 3.9e9  # He et al. 2016, Table 1: 3.8 x 10^9 multiply-adds


def test_flops_of_a_layer_without_symbolic_output_is_refused_with_advice():
    dense = keras.layers.Dense(3)
    dense(np.zeros((1, 4), "float32"))  # eager call: no symbolic output shape
    with pytest.raises(ValueError, match="keras.Input"):
        flops.layer_flops(dense)
    assert flops.layer_flops(keras.layers.ReLU()) == 0


def test_other_ops_counts_batch_norm_activations_additions_and_pooling_from_output_sizes():
    inputs = keras.Input((8, 8, 3))
    conv = keras.layers.Conv2D(4, 3, padding="same")(inputs)  # counted by count_flops, not here
    bn = keras.layers.BatchNormalization()(conv)  # 2 x 256
    act = keras.layers.Activation("relu")(bn)  # 256
    added = keras.layers.Add()([act, conv])  # 256
    pooled = keras.layers.MaxPooling2D(2)(keras.layers.ZeroPadding2D(0)(added))  # 4*4*4 outputs x 4
    out = keras.layers.GlobalAveragePooling2D()(pooled)  # reads 64 inputs
    assert flops.other_ops(keras.Model(inputs, out)) == 2 * 256 + 256 + 256 + 64 * 4 + 64
    with pytest.raises(ValueError, match="built Keras model"):
        flops.other_ops("resnet")


def test_other_ops_of_resnet50_is_a_small_share_of_its_flops():
    model = keras.applications.ResNet50(weights=None)
    share = flops.other_ops(model) / flops.count_flops(model).total
    assert 0.001 < share < 0.01


def test_matmul_flops_is_two_per_multiply_add_and_refuses_bad_sizes():
    assert flops.matmul_flops(2, 3, 4) == 2 * 2 * 3 * 4
    with pytest.raises(ValueError, match="k="):
        flops.matmul_flops(2, 0, 4)
