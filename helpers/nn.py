"""Topic module of notebook 01 · deep-learning basics: the longer pieces its sections build on.

The backward pass itself is written on the notebook's page; this module keeps the plumbing around it:

* :func:`init_two_layer` and :func:`max_abs_difference` ("Backpropagation by hand"): starting
  weights of the two-layer net, and the comparison of hand-written gradients with GradientTape's.
* :func:`mlp` and :func:`layer_grad_norms` ("Vanishing gradients", "Residual blocks"): deep stacks,
  plain or residual, and the size of the gradient at each layer.
* :func:`wide_mlp` and :func:`fit_and_score` ("Overfitting"): a network built to overfit, trained
  and scored. FLOP counting is in :mod:`helpers.flops`.
* :func:`tf32_off` ("A neuron and a layer are matrix products"): full float32 for the Dense vs NumPy
  comparison on GPUs that would otherwise round the inputs to TF32.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

PARAM_NAMES = ("W1", "b1", "W2", "b2")
ACTIVATIONS = ("relu", "sigmoid", "tanh")


# Largest |Keras Dense - NumPy| notebook 01 accepts. In float32 both sides differ by rounding only: at most
# 9.5e-7 over seeds 0-4 on the course's 32 x 784 batch. With TF32 (float32 inputs rounded to a 10-bit
# mantissa, the default on GPUs of compute capability 8.0 and up) the same comparison differs by 6.4e-4 to
# 7.4e-4 (simulated, tests/test_tf32.py), so this bound holds only with TF32 off.
DENSE_TOLERANCE = 2e-5


@contextlib.contextmanager
def tf32_off(tf: Any | None = None) -> Iterator[None]:
    """Run the block with TF32 off, then put TensorFlow's TF32 setting back as it was, even after an error.

    ``tf.config.experimental.enable_tensor_float_32_execution(False)``: on GPUs of compute capability 8.0
    and up, float32 matmuls then keep full float32 precision (on others it changes nothing), even after earlier
    GPU ops: TensorFlow's cuBLAS calls read the setting at each call (``DoBlasInternalImpl`` in
    xla/stream_executor/cuda/cuda_blas.cc). A convolution whose cuDNN algorithm was autotuned earlier with TF32
    allowed may keep it: the autotune cache's key (``ConvParametersProto`` in
    tensorflow/core/util/autotune_maps/conv_parameters.proto) does not hold the setting. So do cuBLASLt plans, used
    only with ``TF_USE_CUBLASLT=1`` (``BlasLtMatmulPlanParams`` in tensorflow/core/kernels/matmul_util.h).

    Example:
        >>> from helpers import env
        >>> tf = env.tensorflow()
        >>> with tf32_off(tf):
        ...     tf.config.experimental.tensor_float_32_execution_enabled()
        False
    """
    if tf is None:
        from helpers import env

        tf = env.tensorflow()
    before = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        yield
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(before)


# --------------------------------------------------------------------------- two-layer net
def init_two_layer(n_in: int, n_hidden: int, n_out: int, seed: int = 0,
                   dtype: Any = np.float64) -> dict[str, np.ndarray]:
    """Random weights (He-scaled normal) and zero biases for ``n_in -> n_hidden -> n_out``.

    Example:
        >>> p = init_two_layer(4, 3, 2)
        >>> {k: v.shape for k, v in p.items()}
        {'W1': (4, 3), 'b1': (3,), 'W2': (3, 2), 'b2': (2,)}
    """
    for name, value in (("n_in", n_in), ("n_hidden", n_hidden), ("n_out", n_out)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}={value!r}: use an integer >= 1.")
    rng = np.random.default_rng(seed)
    return {
        "W1": (rng.standard_normal((n_in, n_hidden)) * np.sqrt(2 / n_in)).astype(dtype),
        "b1": np.zeros(n_hidden, dtype=dtype),
        "W2": (rng.standard_normal((n_hidden, n_out)) * np.sqrt(2 / n_hidden)).astype(dtype),
        "b2": np.zeros(n_out, dtype=dtype),
    }


def max_abs_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    """The largest absolute element-wise difference between two dicts of same-shaped arrays.

    Example:
        >>> max_abs_difference({"w": np.array([1.0, 2.0])}, {"w": np.array([1.0, 2.5])})
        0.5
    """
    if set(a) != set(b):
        raise ValueError(f"different keys: {sorted(a)} vs {sorted(b)}.")
    return float(max(np.max(np.abs(np.asarray(a[k]) - np.asarray(b[k]))) for k in a))


# --------------------------------------------------------------------------- deep stacks
def mlp(depth: int, width: int, activation: str = "relu", residual: bool = False,
        n_in: int = 784, n_out: int = 10) -> Any:
    """A stack of `depth` hidden Dense layers of `width` units, then a Dense output of `n_out` logits.

    With ``residual=True`` each hidden layer after the first adds its input back:
    ``h = h + activation(Dense(h))``, a skip connection that gives the gradient a path around
    every layer.

    Example:
        >>> model = mlp(3, 16, "sigmoid")
        >>> len(model.layers)  # input + 3 hidden + output
        5
    """
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise ValueError(f"depth={depth!r}: use an integer >= 1.")
    if not isinstance(width, int) or isinstance(width, bool) or width < 1:
        raise ValueError(f"width={width!r}: use an integer >= 1.")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation={activation!r}: use one of {', '.join(ACTIVATIONS)}.")
    import keras

    inputs = keras.Input(shape=(n_in,))
    h = keras.layers.Dense(width, activation=activation, name="hidden_1")(inputs)
    for i in range(2, depth + 1):
        out = keras.layers.Dense(width, activation=activation, name=f"hidden_{i}")(h)
        h = keras.layers.Add(name=f"skip_{i}")([h, out]) if residual else out
    outputs = keras.layers.Dense(n_out, name="logits")(h)
    kind = "residual" if residual else "plain"
    return keras.Model(inputs, outputs, name=f"{kind}_{activation}_{depth}x{width}")


def layer_grad_norms(model: Any, x: Any, labels: Any) -> list[float]:
    """L2 norm of the loss gradient with respect to each Dense kernel, input side first.

    The loss is the mean softmax cross-entropy of the model's logits.

    Example:
        >>> norms = layer_grad_norms(mlp(3, 16), np.ones((4, 784), "float32"), np.zeros(4, int))
        >>> len(norms)  # 3 hidden layers + the output layer
        4
    """
    from helpers import env

    tf = env.tensorflow()
    kernels = [layer.kernel for layer in model.layers if hasattr(layer, "kernel") and layer.kernel is not None]
    if not kernels:
        raise ValueError(f"model {model.name!r} has no layer with a kernel: pass a model with Dense layers.")
    labels = np.asarray(labels).astype(np.int64)  # the TF op takes int32/int64 labels, not uint8
    with tf.GradientTape() as tape:
        logits = model(x, training=False)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    grads = tape.gradient(loss, kernels)
    return [float(tf.norm(g).numpy()) for g in grads]


def wide_mlp(dropout: float = 0.0, l2: float = 0.0, width: int = 512, n_in: int = 784, n_out: int = 10) -> Any:
    """Two hidden ReLU layers of `width` units, compiled with Adam(0.001): a network built to overfit.

    ``dropout`` > 0 adds a Dropout layer after each hidden layer; ``l2`` > 0 adds the penalty
    ``l2 * sum(w**2)`` of each hidden kernel to the loss.

    Example:
        >>> wide_mlp(dropout=0.5).count_params()  # 784*512+512 + 512*512+512 + 512*10+10
        669706
    """
    if not 0 <= dropout < 1:
        raise ValueError(f"dropout={dropout!r}: use a rate from 0 (no dropout) to below 1.")
    if l2 < 0:
        raise ValueError(f"l2={l2!r}: use a penalty >= 0.")
    import keras

    reg = keras.regularizers.L2(l2) if l2 else None
    layers = [keras.Input((n_in,))]
    for _ in range(2):
        layers.append(keras.layers.Dense(width, activation="relu", kernel_regularizer=reg))
        if dropout:
            layers.append(keras.layers.Dropout(dropout))
    model = keras.Sequential(layers + [keras.layers.Dense(n_out)])
    model.compile(optimizer=keras.optimizers.Adam(0.001), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=False)  # the same program on CPU and GPU: Keras turns XLA on by itself only on a GPU
    return model


def fit_and_score(model: Any, train: tuple[Any, Any], val: tuple[Any, Any], epochs: int,
                  batch_size: int = 50) -> tuple[dict[str, list[float]], tuple[float, float]]:
    """Train `model` on `train`; return its per-epoch curves and its final (train, validation) accuracy.

    The curves are Keras' running training accuracy during each epoch (dropout on) and the
    validation accuracy after it; the final pair comes from ``evaluate``, with dropout off.
    """
    history = model.fit(*train, validation_data=val, epochs=epochs, batch_size=batch_size, verbose=0)
    curves = {"train": history.history["accuracy"], "validation": history.history["val_accuracy"]}
    scores = (float(model.evaluate(*train, verbose=0)[1]), float(model.evaluate(*val, verbose=0)[1]))
    return curves, scores
