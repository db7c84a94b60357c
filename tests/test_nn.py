"""helpers.nn: hand-written backpropagation, deep stacks and FLOP counting."""

import keras
import numpy as np
import pytest

from helpers import env, nn

tf = env.tensorflow()


def _batch(n=16, n_in=20, classes=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n_in)), rng.integers(0, classes, n)


def test_activation_gradients_match_finite_differences():
    z = np.linspace(-4, 4, 17) + 0.05  # avoid ReLU's kink at 0
    eps = 1e-6
    for f, grad in ((nn.sigmoid, nn.sigmoid_grad), (nn.relu, nn.relu_grad)):
        numeric = (f(z + eps) - f(z - eps)) / (2 * eps)
        np.testing.assert_allclose(grad(z), numeric, atol=1e-6)
    assert nn.sigmoid_grad(np.array(0.0)) == 0.25
    assert np.isfinite(nn.sigmoid(np.array([-1000.0, 1000.0]))).all()


def test_cross_entropy_of_uniform_logits_is_log_of_class_count():
    assert nn.cross_entropy(np.zeros((3, 10)), np.array([0, 4, 9])) == pytest.approx(np.log(10))
    with pytest.raises(ValueError, match="labels must be integers from 0 to 9"):
        nn.cross_entropy(np.zeros((2, 10)), np.array([0, 10]))
    with pytest.raises(ValueError, match="logits"):
        nn.cross_entropy(np.zeros(10), np.array([0]))


def test_hand_backprop_matches_gradient_tape_in_float64():
    x, y = _batch()
    params = nn.init_two_layer(20, 8, 5, seed=1)
    _, cache = nn.two_layer_forward(params, x, y)
    error = nn.max_abs_difference(nn.two_layer_backward(params, cache), nn.two_layer_tape_grads(params, x, y))
    assert error < 1e-12


def test_hand_backprop_matches_finite_differences_of_the_loss():
    x, y = _batch(n=4, n_in=3, classes=3)
    params = nn.init_two_layer(3, 4, 3, seed=2)
    params["b1"] += 0.1  # keep hidden units away from ReLU's kink
    _, cache = nn.two_layer_forward(params, x, y)
    grads = nn.two_layer_backward(params, cache)
    eps = 1e-6
    for name in nn.PARAM_NAMES:
        flat = params[name].reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            up, _ = nn.two_layer_forward(params, x, y)
            flat[i] = old - eps
            down, _ = nn.two_layer_forward(params, x, y)
            flat[i] = old
            assert grads[name].reshape(-1)[i] == pytest.approx((up - down) / (2 * eps), abs=1e-6)


def test_two_layer_net_rejects_bad_sizes_and_params():
    with pytest.raises(ValueError, match="n_hidden=0"):
        nn.init_two_layer(3, 0, 2)
    with pytest.raises(ValueError, match="missing"):
        nn.two_layer_forward({"W1": np.ones((3, 2))}, np.ones((1, 3)), np.zeros(1, int))
    with pytest.raises(ValueError, match="different keys"):
        nn.max_abs_difference({"a": np.ones(1)}, {"b": np.ones(1)})


def test_sigmoid_stack_gradient_vanishes_and_skips_restore_it():
    x, y = np.random.default_rng(0).random((32, 784), dtype=np.float32), np.zeros(32, int)
    plain = nn.layer_grad_norms(nn.mlp(10, 32, "sigmoid"), x, y)
    skip = nn.layer_grad_norms(nn.mlp(10, 32, "sigmoid", residual=True), x, y)
    assert len(plain) == 11  # 10 hidden kernels + the output kernel
    assert plain[0] < 1e-2 * plain[-2]
    assert skip[0] > 100 * plain[0]


def test_mlp_rejects_bad_arguments_with_allowed_values():
    with pytest.raises(ValueError, match="relu, sigmoid, tanh"):
        nn.mlp(2, 8, "gelu")
    with pytest.raises(ValueError, match="depth=0"):
        nn.mlp(0, 8)
    with pytest.raises(ValueError, match="width"):
        nn.mlp(2, True)
    model = nn.mlp(3, 8, residual=True)
    assert [type(layer).__name__ for layer in model.layers].count("Add") == 2


def test_layer_grad_norms_needs_kernels():
    inputs = keras.Input((4,))
    with pytest.raises(ValueError, match="no layer with a kernel"):
        nn.layer_grad_norms(keras.Model(inputs, keras.layers.ReLU()(inputs)), np.ones((1, 4)), np.zeros(1, int))


def test_flops_of_dense_and_conv_layers_count_two_per_multiply_add():
    model = keras.Sequential([keras.Input((8, 8, 3)),
                              keras.layers.Conv2D(4, 3, padding="same"),  # 8*8 pixels x 3*3*3*4 MACs
                              keras.layers.Conv2D(6, 3, strides=2, padding="valid"),  # 3*3 pixels x 3*3*4*6
                              keras.layers.Flatten(), keras.layers.Dense(5)])  # 54 x 5
    count = nn.count_flops(model)
    conv = 2 * (64 * 108 + 9 * 216)
    assert count.by_type == {"Conv2D": conv, "Dense": 2 * 54 * 5}
    assert count.total == conv + 540 and count.macs == count.total // 2
    assert len(count.layers) == 3


def test_flops_count_nested_models_and_sequence_dense():
    inner = keras.Sequential([keras.Input((7, 4)), keras.layers.Dense(3)])  # 7 positions x 4 x 3
    outer = keras.Sequential([keras.Input((7, 4)), inner, keras.layers.Dense(2)])  # 7 x 3 x 2
    assert nn.count_flops(outer).total == 2 * (7 * 12 + 7 * 6)
    with pytest.raises(ValueError, match="built Keras model"):
        nn.count_flops("resnet")


def test_resnet50_matches_published_size():
    model = keras.applications.ResNet50(weights=None)
    assert model.count_params() == 25_636_712
    macs = nn.count_flops(model).macs
    assert 3.8e9 <= macs <= 3.9e9  # He et al. 2016, Table 1: 3.8 x 10^9 multiply-adds


def test_flops_of_a_layer_without_symbolic_output_is_refused_with_advice():
    dense = keras.layers.Dense(3)
    dense(np.zeros((1, 4), "float32"))  # eager call: no symbolic output shape
    with pytest.raises(ValueError, match="keras.Input"):
        nn.layer_flops(dense)
    assert nn.layer_flops(keras.layers.ReLU()) == 0


def test_other_ops_counts_batch_norm_activations_additions_and_pooling_from_output_sizes():
    inputs = keras.Input((8, 8, 3))
    conv = keras.layers.Conv2D(4, 3, padding="same")(inputs)  # counted by count_flops, not here
    bn = keras.layers.BatchNormalization()(conv)  # 2 x 256
    act = keras.layers.Activation("relu")(bn)  # 256
    added = keras.layers.Add()([act, conv])  # 256
    pooled = keras.layers.MaxPooling2D(2)(keras.layers.ZeroPadding2D(0)(added))  # 4*4*4 outputs x 4
    out = keras.layers.GlobalAveragePooling2D()(pooled)  # reads 64 inputs
    assert nn.other_ops(keras.Model(inputs, out)) == 2 * 256 + 256 + 256 + 64 * 4 + 64
    with pytest.raises(ValueError, match="built Keras model"):
        nn.other_ops("resnet")


def test_other_ops_of_resnet50_is_a_small_share_of_its_flops():
    model = keras.applications.ResNet50(weights=None)
    share = nn.other_ops(model) / nn.count_flops(model).total
    assert 0.001 < share < 0.01


def test_sci_writes_two_significant_figures_with_superscript_exponent():
    assert nn.sci(141_234.0) == "1.4×10⁵"
    assert nn.sci(0.00031) == "3.1×10⁻⁴"
    assert nn.sci(9.96e4) == "1.0×10⁵"
    assert nn.sci(123.0, digits=3) == "1.23×10²"
    with pytest.raises(ValueError, match="digits=0"):
        nn.sci(1.0, digits=0)


def test_wide_mlp_adds_dropout_and_l2_only_when_asked():
    plain = nn.wide_mlp(width=8)
    regularised = nn.wide_mlp(dropout=0.5, l2=1e-3, width=8)
    kinds = [type(layer).__name__ for layer in regularised.layers]
    assert kinds.count("Dropout") == 2 and "Dropout" not in [type(layer).__name__ for layer in plain.layers]
    assert regularised.layers[0].kernel_regularizer is not None and plain.layers[0].kernel_regularizer is None
    assert plain.count_params() == regularised.count_params() == 784 * 8 + 8 + 8 * 8 + 8 + 8 * 10 + 10
    with pytest.raises(ValueError, match="dropout=1"):
        nn.wide_mlp(dropout=1)
    with pytest.raises(ValueError, match="l2=-1"):
        nn.wide_mlp(l2=-1)


def test_fit_and_score_returns_curves_per_epoch_and_final_accuracies():
    rng = np.random.default_rng(0)
    x, y = rng.random((40, 784), dtype=np.float32), rng.integers(0, 10, 40)
    curves, (train_acc, val_acc) = nn.fit_and_score(nn.wide_mlp(dropout=0.5, width=8), (x, y), (x[:10], y[:10]),
                                                    epochs=2, batch_size=20)
    assert len(curves["train"]) == len(curves["validation"]) == 2
    assert 0 <= train_acc <= 1 and 0 <= val_acc <= 1
