"""helpers.nn: the two-layer net's weights, deep stacks and their gradients, the overfitting model."""

import keras
import numpy as np
import pytest

from helpers import env, nn

tf = env.tensorflow()


def _batch(n=16, n_in=20, classes=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n_in)), rng.integers(0, classes, n)


def test_two_layer_net_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n_hidden="):
        nn.init_two_layer(3, 0, 2)
    assert {k: v.shape for k, v in nn.init_two_layer(4, 3, 2).items()} == {"W1": (4, 3), "b1": (3,), "W2": (3, 2),
                                                                          "b2": (2,)}


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


def test_wide_mlp_compiles_without_xla_even_where_auto_would_turn_it_on(monkeypatch):
    from keras.src.trainers import trainer

    monkeypatch.setattr(trainer.Trainer, "_resolve_auto_jit_compile", lambda self: True)  # as on a GPU machine
    assert nn.wide_mlp().jit_compile is False
