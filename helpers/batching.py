"""Topic module of notebook 05 · Batch size and learning rate.

The lesson stays on the notebook's page: the step timer, ``reset_memory_stats`` and
``get_memory_info`` in a child process, the search for the out-of-memory wall that catches
``tf.errors.ResourceExhaustedError``, SGD with momentum, the linear scaling rule and its warm-up.
This module holds what is too long for a cell or shared with the child scripts: the ``BATCH_SIZES``
rule, the small CNN every part trains, the arithmetic that turns measured peaks into bytes per
sample and a predicted wall, and the tables and plots.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from helpers import params
from helpers.tables import text_table

MIN_SIZES, MAX_SIZES = 3, 8
SMALLEST, LARGEST = 8, 4096


def run_sizes(batch_sizes: Any) -> list[int]:
    """``BATCH_SIZES`` checked: 3 to 8 different batch sizes from 8 to 4096, smallest first.

    The smallest is the base batch of the linear scaling rule, and the sweeps read the curve from
    left to right, so the order matters: an unsorted or repeated list is refused, not reordered.
    Called before TensorFlow starts, so a bad value fails in the first second.

    Example:
        >>> run_sizes([32, 128, 512])
        [32, 128, 512]
        >>> run_sizes([128, 32, 512])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: BATCH_SIZES=[128, 32, 512] is not allowed: use 3 to 8 different batch sizes ... increasing order...
    """
    params.validate({"BATCH_SIZES": batch_sizes})
    sizes = list(batch_sizes)
    increasing = all(a < b for a, b in zip(sizes, sizes[1:], strict=False))
    if not (MIN_SIZES <= len(sizes) <= MAX_SIZES and increasing and SMALLEST <= sizes[0] and sizes[-1] <= LARGEST):
        raise ValueError(f"BATCH_SIZES={batch_sizes!r} is not allowed: use {MIN_SIZES} to {MAX_SIZES} different "
                         f"batch sizes from {SMALLEST} to {LARGEST} in increasing order, for example "
                         "[32, 64, 128, 256, 512].")
    return sizes


def small_cnn() -> Any:
    """The network every part of notebook 05 trains: two convolution blocks and a linear classifier.

    ``Conv2D(16, 3) -> MaxPool -> Conv2D(32, 3) -> MaxPool -> Flatten -> Dense(10)`` on 28x28x1
    images, ReLU activations, logits out (train it with ``from_logits=True``). The notebook and its
    child processes build the same model from here. Seed first (``keras.utils.set_random_seed``) for
    the same starting weights.

    Example:
        >>> small_cnn().count_params()
        12810
    """
    import keras

    return keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(10),
    ], name="small_cnn")


def compiled_cnn(learning_rate: float = 0.01) -> Any:
    """:func:`small_cnn` compiled as notebook 05 compiles it for the throughput sweep: SGD with momentum
    0.9 and sparse categorical cross-entropy on logits. The child scripts measure memory with it.

    Example:
        >>> compiled_cnn().optimizer.momentum
        0.9
    """
    import keras

    model = small_cnn()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate, momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def loss_probe(x: Any, y: Any, every: int) -> Any:
    """A Keras callback that measures the loss on held-out images every `every` optimizer steps.

    It records ``(step, loss)`` pairs in ``.points``, starting before the first update of each ``fit``,
    so runs with different batch sizes can be drawn against epochs on one axis. The model must output
    logits. One probe is a forward pass over `x` (a few hundred images cost milliseconds).

    Example:
        >>> import numpy as np
        >>> model = compiled_cnn()
        >>> probe = loss_probe(np.zeros((8, 28, 28, 1), "float32"), np.zeros(8, "int64"), every=2)
        >>> _ = model.fit(np.zeros((64, 28, 28, 1), "float32"), np.zeros(64, "int64"), batch_size=16, verbose=0,
        ...               callbacks=[probe])
        >>> [step for step, _ in probe.points]
        [0, 2, 4]
    """
    import keras

    if not isinstance(every, int) or isinstance(every, bool) or every < 1:
        raise ValueError(f"every={every!r}: use an integer >= 1 (optimizer steps between probes).")

    class LossProbe(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.points: list[tuple[int, float]] = []

        def _probe(self, step: int) -> None:
            logits = self.model(x, training=False)
            loss = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            self.points.append((step, float(keras.ops.mean(loss))))

        def on_train_begin(self, logs: Any = None) -> None:
            self.points = []
            self._probe(int(self.model.optimizer.iterations.numpy()))

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            step = int(self.model.optimizer.iterations.numpy())
            if step % every == 0:
                self._probe(step)

    return LossProbe()


def _peaks(peaks: Mapping[Any, float]) -> list[tuple[int, float]]:
    points = sorted((int(b), float(p)) for b, p in peaks.items())
    if len(points) < 2:
        raise ValueError(f"peaks={dict(peaks)!r}: pass the peak bytes of at least two batch sizes.")
    return points


def bytes_per_sample(peaks: Mapping[Any, float]) -> float:
    """Extra bytes each sample adds, between the two largest batch sizes measured.

    Small batches are dominated by fixed costs (weights, optimizer state, scratch buffers of the
    convolution kernels), so the slope between the two largest measured batches is the best guide
    to where memory runs out.

    Example:
        >>> bytes_per_sample({32: 40e6, 256: 60e6, 512: 110e6})
        195312.5
    """
    (b1, p1), (b2, p2) = _peaks(peaks)[-2:]
    if p2 <= p1:
        raise ValueError(f"peaks={dict(peaks)!r}: the peak did not grow between batch {b1} and {b2}, so the bytes "
                         "per sample cannot be read from them; measure larger batches.")
    return (p2 - p1) / (b2 - b1)


def predicted_max_batch(peaks: Mapping[Any, float], memory_bytes: float) -> int:
    """The largest batch predicted to fit in `memory_bytes`: extrapolate from the largest measured batch.

    ``largest + (memory - peak at largest) / bytes_per_sample``, rounded down; 0 when even the
    largest measured batch's fixed part does not fit.

    Example:
        >>> predicted_max_batch({256: 60e6, 512: 110e6}, memory_bytes=16e9)
        81868
    """
    if not isinstance(memory_bytes, (int, float)) or memory_bytes <= 0:
        raise ValueError(f"memory_bytes={memory_bytes!r}: use a positive number of bytes.")
    per_sample = bytes_per_sample(peaks)
    largest, peak = _peaks(peaks)[-1]
    return max(0, math.floor(largest + (memory_bytes - peak) / per_sample))


def memory_table(peaks: Mapping[Any, float]) -> str:
    """Peak bytes per batch size, and the peak divided by the batch, as a text table.

    Example:
        >>> print(memory_table({32: 37e6, 512: 91e6}))
        batch  peak (MB)  peak / batch (kB)
        32     37.0       1156.2
        512    91.0       177.7
    """
    rows = [("batch", "peak (MB)", "peak / batch (kB)")]
    rows += [(str(b), f"{p / 1e6:.1f}", f"{p / b / 1e3:.1f}") for b, p in _peaks(peaks)]
    return text_table(rows)


def dips_note(peaks: Mapping[Any, float]) -> str:
    """A sentence on batch sizes whose peak is below a smaller batch's, or '' when the peak never falls.

    At small batches the peak is mostly fixed costs, and which convolution kernel's scratch space
    happens to be live at the peak differs from size to size, so a larger batch can peak lower.

    Example:
        >>> dips_note({32: 37.2e6, 64: 38.4e6, 128: 36.2e6, 256: 58.3e6})[:40]
        'Batch 128 peaked 2.2 MB below batch 64: '
        >>> dips_note({32: 37e6, 64: 40e6})
        ''
    """
    points = _peaks(peaks)
    dips = [(b_prev, p_prev, b, p) for (b_prev, p_prev), (b, p) in zip(points, points[1:], strict=False)
            if p < p_prev]
    if not dips:
        return ""
    parts = ", ".join(f"batch {b} peaked {(p_prev - p) / 1e6:.1f} MB below batch {b_prev}"
                      for b_prev, p_prev, b, p in dips)
    return (parts[0].upper() + parts[1:] + ": at these sizes the peak is mostly fixed costs (weights, optimizer "
            "state, kernel scratch space), and which kernel holds scratch space at the peak changes with the batch; "
            "the slope comes from the larger batches.")


def accuracy_table(final_accuracy: Mapping[Any, Mapping[str, float]], updates: Mapping[Any, int]) -> str:
    """Test accuracy per batch size with a constant and a scaled learning rate, and the updates made.

    Example:
        >>> print(accuracy_table({32: {"constant": 0.82, "scaled": 0.82}, 512: {"constant": 0.66, "scaled": 0.74}},
        ...                      {32: 939, 512: 60}))
        batch  updates  constant lr  scaled lr + warm-up  difference
        32     939      0.820        0.820                +0.000
        512    60       0.660        0.740                +0.080
    """
    rows = [("batch", "updates", "constant lr", "scaled lr + warm-up", "difference")]
    for batch, acc in sorted(final_accuracy.items(), key=lambda kv: int(kv[0])):
        rows.append((str(batch), str(updates[batch]), f"{acc['constant']:.3f}", f"{acc['scaled']:.3f}",
                     f"{acc['scaled'] - acc['constant']:+.3f}"))
    return text_table(rows)


def plot_by_batch(curves: Mapping[str, Mapping[Any, float]], *, ylabel: str, title: str, ax: Any = None,
                  scale: float = 1.0, wall: int | None = None) -> Any:
    """One line per name, y against batch size on a log2 axis (ticks at the measured sizes); y divided by `scale`.

    `wall`: a batch size that ran out of memory, drawn as a dotted vertical line.

    Example:
        >>> ax = plot_by_batch({"measured": {32: 4000.0, 64: 6000.0}}, ylabel="samples / s", title="throughput")
    """
    import matplotlib.pyplot as plt

    if not curves or not any(curves.values()):
        raise ValueError("curves is empty: pass at least one {name: {batch: value}}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    ticks: set[int] = set()
    for i, (name, values) in enumerate(curves.items()):
        points = sorted((int(b), float(v)) for b, v in values.items())
        ticks |= {b for b, _ in points}
        ax.plot([b for b, _ in points], [v / scale for _, v in points], "o-" if i == 0 else "s--", color=f"C{i}",
                label=name)
    if wall:
        ax.axvline(wall, color="C3", linestyle=":", label=f"out of memory at {wall}")
        ticks.add(int(wall))
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(ticks), [str(b) for b in sorted(ticks)], rotation=45 if len(ticks) > 8 else 0)
    ax.set(xlabel="batch size", ylabel=ylabel, title=title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def plot_convergence(losses: Mapping[int, Mapping[str, Sequence[tuple[float, float]]]],
                     final_accuracy: Mapping[int, Mapping[str, float]]) -> Any:
    """Three panels: held-out loss against epochs with a constant and with a scaled learning rate (one
    curve per batch size, the same colour in both; each curve a list of ``(epoch, loss)``), and final
    test accuracy against batch size.

    Example:
        >>> fig = plot_convergence({32: {"constant": [(0, 2.3), (1, 0.6)], "scaled": [(0, 2.3), (1, 0.6)]},
        ...                         512: {"constant": [(0, 2.3), (1, 1.6)], "scaled": [(0, 2.3), (1, 1.2)]}},
        ...                        {32: {"constant": 0.8, "scaled": 0.8}, 512: {"constant": 0.6, "scaled": 0.7}})
    """
    import matplotlib.pyplot as plt

    if not losses:
        raise ValueError("losses is empty: train at least one batch size first.")
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    sizes = sorted(losses)
    values = [loss for per in losses.values() for curve in per.values() for _, loss in curve]
    for i, rule in enumerate(("constant", "scaled")):
        for j, batch in enumerate(sizes):
            curve = losses[batch][rule]
            axes[i].plot([e for e, _ in curve], [v for _, v in curve], "-", color=f"C{j}", label=f"batch {batch}")
        title = "constant learning rate" if rule == "constant" else "scaled learning rate + warm-up"
        axes[i].set(xlabel="epoch", ylabel="held-out loss", title=title, ylim=(min(values) * 0.95, max(values) * 1.05))
        axes[i].legend(fontsize=8)
    for rule, style in (("constant", "o--"), ("scaled", "o-")):
        axes[2].plot(sizes, [final_accuracy[b][rule] for b in sizes], style,
                     label="constant lr" if rule == "constant" else "scaled lr + warm-up")
    axes[2].set_xscale("log", base=2)
    axes[2].set_xticks(sizes, [str(b) for b in sizes])
    axes[2].set(xlabel="batch size", ylabel="test accuracy", title="After the same number of epochs")
    axes[2].legend(fontsize=8)
    for ax in axes:
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig
