"""FLOP counting for Keras models: how much arithmetic one example costs.

Used by notebooks 01 (ResNet50's FLOPs per image, the reason for GPUs), 03 (GFLOP/s of matmul and
convolution against a device's peak) and 09 (time of a run on each GPU). A multiply-add counts as
2 FLOPs, as GPU datasheets count them; papers that quote "FLOPs" often mean multiply-adds
(:attr:`FlopCount.macs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


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


def matmul_flops(m: int, k: int, n: int) -> int:
    """FLOPs of one (m x k) @ (k x n) matrix product: m * n outputs, k multiply-adds each.

    Example:
        >>> matmul_flops(1024, 1024, 1024)  # 2 * 1024**3
        2147483648
    """
    for name, value in (("m", m), ("k", k), ("n", n)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}={value!r}: use an integer >= 1.")
    return 2 * m * k * n
