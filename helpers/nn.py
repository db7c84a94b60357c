"""Neural-network basics written out: a two-layer net by hand in NumPy, and FLOP counting for Keras.

Notebook 01 uses this module to show what a framework does for you:

* :func:`two_layer_forward` and :func:`two_layer_backward` are backpropagation for
  ``x -> Dense -> ReLU -> Dense -> softmax cross-entropy``, one equation per line, so you can
  compare them with ``tf.GradientTape`` (:func:`two_layer_tape_grads`).
* :func:`mlp` and :func:`layer_grad_norms` build deep stacks (plain or residual) and measure how
  large the gradient is at each layer: vanishing gradients, made visible.
* :func:`count_flops` counts the floating-point operations of a Keras model's forward pass from
  its layers (2 FLOPs per multiply-add), the figure that decides how long a model takes on a device.

The forward and backward pass of the two-layer net, for a batch of N rows
(``*`` is element-wise, ``@`` is the matrix product, ``Y`` the one-hot labels)::

    z1 = x @ W1 + b1            dlogits = (softmax(logits) - Y) / N
    h  = relu(z1)               dW2 = h.T @ dlogits      db2 = sum over rows of dlogits
    logits = h @ W2 + b2        dh  = dlogits @ W2.T
    loss = mean(-log softmax(logits)[label])
                                dz1 = dh * (z1 > 0)
                                dW1 = x.T @ dz1          db1 = sum over rows of dz1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PARAM_NAMES = ("W1", "b1", "W2", "b2")
ACTIVATIONS = ("relu", "sigmoid", "tanh")


# --------------------------------------------------------------------------- activations
def relu(z: np.ndarray) -> np.ndarray:
    """max(z, 0), element-wise.

    Example:
        >>> relu(np.array([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    return np.maximum(z, 0)


def relu_grad(z: np.ndarray) -> np.ndarray:
    """Derivative of ReLU: 1 where z > 0, else 0 (0 at z == 0, the convention TensorFlow uses).

    Example:
        >>> relu_grad(np.array([-1.0, 0.0, 2.0])).tolist()
        [0.0, 0.0, 1.0]
    """
    return (np.asarray(z) > 0).astype(np.result_type(z, np.float32))


def sigmoid(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-z)), computed without overflow for large |z|.

    Example:
        >>> float(sigmoid(np.array(0.0)))
        0.5
    """
    z = np.asarray(z, dtype=np.result_type(z, np.float32))
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1 / (1 + e), e / (1 + e))


def sigmoid_grad(z: np.ndarray) -> np.ndarray:
    """Derivative of the sigmoid: s * (1 - s) with s = sigmoid(z); at most 0.25 (at z = 0).

    Example:
        >>> float(sigmoid_grad(np.array(0.0)))
        0.25
    """
    s = sigmoid(z)
    return s * (1 - s)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax, shifted by the row maximum so exp never overflows."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean softmax cross-entropy of integer `labels` (what Keras calls
    ``SparseCategoricalCrossentropy(from_logits=True)``).

    Example:
        >>> round(cross_entropy(np.zeros((2, 10)), np.array([3, 7])), 4)  # uniform guess: log(10)
        2.3026
    """
    labels = _check_labels(logits, labels)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(labels)), labels].mean())


def _check_labels(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels)
    if logits.ndim != 2 or labels.shape != (logits.shape[0],):
        raise ValueError(f"logits {logits.shape} and labels {labels.shape}: use logits (N, classes) "
                         "and integer labels (N,).")
    if labels.size and (labels.min() < 0 or labels.max() >= logits.shape[1]):
        raise ValueError(f"labels must be integers from 0 to {logits.shape[1] - 1}.")
    return labels.astype(np.int64)


# --------------------------------------------------------------------------- two-layer net by hand
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


def two_layer_forward(params: dict[str, np.ndarray], x: np.ndarray,
                      labels: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
    """Forward pass; returns the mean cross-entropy loss and the values the backward pass needs.

    Example:
        >>> p = init_two_layer(4, 3, 2)
        >>> loss, cache = two_layer_forward(p, np.ones((5, 4)), np.zeros(5, dtype=int))
        >>> sorted(cache)
        ['h', 'labels', 'logits', 'x', 'z1']
    """
    missing = [k for k in PARAM_NAMES if k not in params]
    if missing:
        raise ValueError(f"params is missing {missing}: use the dict from init_two_layer().")
    z1 = x @ params["W1"] + params["b1"]
    h = relu(z1)
    logits = h @ params["W2"] + params["b2"]
    loss = cross_entropy(logits, labels)
    return loss, {"x": x, "z1": z1, "h": h, "logits": logits, "labels": np.asarray(labels)}


def two_layer_backward(params: dict[str, np.ndarray], cache: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Backward pass: the gradient of the mean loss with respect to each parameter.

    Example:
        >>> p = init_two_layer(4, 3, 2)
        >>> _, cache = two_layer_forward(p, np.ones((5, 4)), np.zeros(5, dtype=int))
        >>> {k: v.shape for k, v in two_layer_backward(p, cache).items()}
        {'W1': (4, 3), 'b1': (3,), 'W2': (3, 2), 'b2': (2,)}
    """
    x, z1, h, logits, labels = (cache[k] for k in ("x", "z1", "h", "logits", "labels"))
    n = x.shape[0]
    dlogits = softmax(logits)
    dlogits[np.arange(n), labels] -= 1  # softmax - one_hot(labels)
    dlogits /= n  # the loss is a mean over the batch
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = dlogits @ params["W2"].T
    dz1 = dh * relu_grad(z1)
    dW1 = x.T @ dz1
    db1 = dz1.sum(axis=0)
    return {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}


def two_layer_tape_grads(params: dict[str, np.ndarray], x: np.ndarray, labels: np.ndarray,
                         tf: Any | None = None) -> dict[str, np.ndarray]:
    """The same gradients, computed by TensorFlow's automatic differentiation (``tf.GradientTape``).

    Example:
        >>> p = init_two_layer(4, 3, 2)
        >>> sorted(two_layer_tape_grads(p, np.ones((5, 4)), np.zeros(5, dtype=int)))
        ['W1', 'W2', 'b1', 'b2']
    """
    if tf is None:
        from helpers import env

        tf = env.tensorflow()
    variables = {k: tf.Variable(params[k]) for k in PARAM_NAMES}
    labels = np.asarray(labels).astype(np.int64)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        h = tf.nn.relu(xt @ variables["W1"] + variables["b1"])
        logits = h @ variables["W2"] + variables["b2"]
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    grads = tape.gradient(loss, variables)
    return {k: grads[k].numpy() for k in PARAM_NAMES}


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
        n_in: int = 784, n_out: int = 10, keras: Any | None = None) -> Any:
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
    if keras is None:
        import keras
    inputs = keras.Input(shape=(n_in,))
    h = keras.layers.Dense(width, activation=activation, name="hidden_1")(inputs)
    for i in range(2, depth + 1):
        out = keras.layers.Dense(width, activation=activation, name=f"hidden_{i}")(h)
        h = keras.layers.Add(name=f"skip_{i}")([h, out]) if residual else out
    outputs = keras.layers.Dense(n_out, name="logits")(h)
    kind = "residual" if residual else "plain"
    return keras.Model(inputs, outputs, name=f"{kind}_{activation}_{depth}x{width}")


def layer_grad_norms(model: Any, x: Any, labels: Any, tf: Any | None = None) -> list[float]:
    """L2 norm of the loss gradient with respect to each Dense kernel, input side first.

    The loss is the mean softmax cross-entropy of the model's logits.

    Example:
        >>> norms = layer_grad_norms(mlp(3, 16), np.ones((4, 784), "float32"), np.zeros(4, int))
        >>> len(norms)  # 3 hidden layers + the output layer
        4
    """
    if tf is None:
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


# --------------------------------------------------------------------------- FLOPs
@dataclass
class FlopCount:
    """Forward-pass FLOPs of one example, counted layer by layer (2 FLOPs per multiply-add)."""

    total: int
    by_type: dict[str, int] = field(default_factory=dict)
    layers: dict[str, int] = field(default_factory=dict)

    @property
    def macs(self) -> int:
        """Multiply-adds (MACs): half the FLOPs. Papers often call this figure "FLOPs"."""
        return self.total // 2


def _prod(values: Sequence[Any]) -> int:
    out = 1
    for v in values:
        if v is None:
            raise ValueError("a layer has an unknown dimension: build the model with a fixed input shape, "
                             "e.g. keras.Input(shape=(224, 224, 3)).")
        out *= int(v)
    return out


def layer_flops(layer: Any) -> int:
    """FLOPs of one forward pass of `layer` for one example; 0 for layers that are not counted.

    * Dense: 2 * inputs * units per output position (biases, activations not counted).
    * Conv2D: 2 * kernel_h * kernel_w * (in_channels / groups) * filters per output pixel.
    * DepthwiseConv2D: 2 * kernel_h * kernel_w * in_channels * multiplier per output pixel.

    Example:
        >>> import keras
        >>> dense = keras.layers.Dense(10)
        >>> _ = dense(keras.Input((784,)))  # a symbolic call gives the layer its output shape
        >>> layer_flops(dense)  # 2 * 784 * 10
        15680
    """
    name = type(layer).__name__
    kernel = getattr(layer, "kernel", None)
    if kernel is None or name not in ("Dense", "Conv2D", "DepthwiseConv2D", "Conv1D"):
        return 0
    # Every counted layer does one multiply-add per kernel weight at each output position
    # (Dense: one position per example; Conv: one per output pixel).
    try:
        out_shape = tuple(layer.output.shape)
    except AttributeError as exc:  # called only eagerly (or never): Keras keeps no output shape
        raise ValueError(f"layer {layer.name!r} has no output shape: count the layers of a model built "
                         "from keras.Input, e.g. keras.Sequential([keras.Input((784,)), ...]).") from exc
    positions = _prod(out_shape[1:-1])
    return 2 * _prod(kernel.shape) * positions


def count_flops(model: Any) -> FlopCount:
    """Count a Keras model's forward-pass FLOPs per example from its Dense and convolution layers.

    Multiply-adds are counted as 2 FLOPs. Batch normalisation, activations, pooling and additions
    are left out: :func:`other_ops` counts them, about 0.5 % of ResNet50's FLOPs.

    Example:
        >>> import keras
        >>> model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(128), keras.layers.Dense(10)])
        >>> count_flops(model).total  # 2 * (784*128 + 128*10)
        203264
    """
    if not hasattr(model, "layers"):
        raise ValueError(f"model={model!r}: pass a built Keras model.")
    per_layer: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for layer in model.layers:
        if hasattr(layer, "layers") and not hasattr(layer, "kernel"):  # nested model
            inner = count_flops(layer)
            flops = inner.total
            for k, v in inner.by_type.items():
                by_type[k] = by_type.get(k, 0) + v
        else:
            flops = layer_flops(layer)
            if flops:
                by_type[type(layer).__name__] = by_type.get(type(layer).__name__, 0) + flops
        if flops:
            per_layer[layer.name] = flops
    return FlopCount(total=sum(per_layer.values()), by_type=by_type, layers=per_layer)


def other_ops(model: Any) -> int:
    """Forward-pass operations per example of the layers :func:`count_flops` leaves out.

    Counted from each layer's output size: batch normalisation 2 per output element (a scale and
    a shift, as at inference), activations and additions 1 per element (an ``Add`` of k inputs:
    k - 1), max/average pooling one per window element, global pooling one per input element.
    Padding and reshaping do no arithmetic. This is the figure behind "batch normalisation,
    activations, pooling and additions are a small part of the work".

    Example:
        >>> import keras
        >>> model = keras.Sequential([keras.Input((8,)), keras.layers.BatchNormalization(),
        ...                           keras.layers.ReLU()])
        >>> other_ops(model)  # 2 * 8 + 8
        24
    """
    if not hasattr(model, "layers"):
        raise ValueError(f"model={model!r}: pass a built Keras model.")
    total = 0
    for layer in model.layers:
        name = type(layer).__name__
        if hasattr(layer, "layers") and not hasattr(layer, "kernel"):  # nested model
            total += other_ops(layer)
            continue
        if name in ("InputLayer", "ZeroPadding2D", "Flatten", "Reshape", "Dropout") or layer_flops(layer):
            continue
        try:
            out = _prod(tuple(layer.output.shape)[1:])
        except AttributeError as exc:
            raise ValueError(f"layer {layer.name!r} has no output shape: build the model from keras.Input.") from exc
        if name == "BatchNormalization":
            total += 2 * out
        elif name in ("Add", "Multiply", "Subtract"):
            total += (len(layer.input) - 1) * out
        elif name.startswith("Global"):
            total += _prod(tuple(layer.input.shape)[1:])
        elif "Pooling" in name:
            total += out * _prod(layer.pool_size)
        else:  # Activation, ReLU, Softmax, ...: one operation per element
            total += out
    return total


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(value: float, digits: int = 2) -> str:
    """`value` in scientific notation with `digits` significant figures, as you would write it.

    Example:
        >>> sci(141_234.0)
        '1.4×10⁵'
        >>> sci(0.00031)
        '3.1×10⁻⁴'
    """
    if not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits={digits!r}: use an integer >= 1.")
    mantissa, exponent = f"{float(value):.{digits - 1}e}".split("e")
    return f"{mantissa}×10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def wide_mlp(dropout: float = 0.0, l2: float = 0.0, width: int = 512, n_in: int = 784, n_out: int = 10,
             keras: Any | None = None) -> Any:
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
    if keras is None:
        import keras
    reg = keras.regularizers.L2(l2) if l2 else None
    layers = [keras.Input((n_in,))]
    for _ in range(2):
        layers.append(keras.layers.Dense(width, activation="relu", kernel_regularizer=reg))
        if dropout:
            layers.append(keras.layers.Dropout(dropout))
    model = keras.Sequential(layers + [keras.layers.Dense(n_out)])
    model.compile(optimizer=keras.optimizers.Adam(0.001), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
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
