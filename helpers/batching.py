"""Topic module of notebook 05 · Batch size and learning rate.

The lesson stays on the notebook's page: the step timer, ``reset_memory_stats`` and
``get_memory_info`` in a child process, the step the wall search runs and the error class it
catches (``tf.errors.ResourceExhaustedError``), SGD with momentum, the linear scaling rule and its
warm-up. This module holds what is too long for a cell or shared with the child scripts: the
``BATCH_SIZES`` rule, the small CNN every part trains, the doubling sweep that looks for the
out-of-memory wall (:func:`wall_batches`, :func:`find_wall`) and its reading, the arithmetic that
turns measured peaks into bytes per sample and a predicted wall, and the tables and plots; and, for the
section on gradient accumulation, the micro-batch that reaches an effective batch (:func:`micro_batch`),
how far two runs' weights drifted apart (:func:`relative_drift`), a held-out loss, and the readings of
its memory, updates and time (:func:`accumulation_memory_lines`, :func:`equivalence_line`,
:func:`accumulation_time_line`).

What an allocation failure raises, read in the sources:

* without XLA (``jit_compile=False``, the course's setting): ``OpKernelContext::allocate_tensor``
  (tensorflow/core/framework/op_kernel.cc) returns ``errors::ResourceExhausted("OOM when allocating
  tensor with shape[...] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator
  GPU_0_bfc")``: ``tf.errors.ResourceExhaustedError`` in Python, on a CPU (``bfc_cpu_allocator``) too;
* with XLA: ``stream_executor::MemoryAllocationError`` (xla/stream_executor/integrations/
  tf_allocator_adapter.cc) returns ``absl::ResourceExhaustedError("Out of memory while trying to
  allocate N bytes.")``, the same Python class with another text; :func:`error_line` finds both;
* a tensor of more than 2**31 - 1 elements is no out-of-memory error at all: cuDNN refuses a
  tensor descriptor above 2 giga-elements (``CUDNN_STATUS_NOT_SUPPORTED``, cuDNN API reference,
  ``cudnnSetTensorNdDescriptor``), and TensorFlow's ``CudnnTensorDescriptor``
  (xla/stream_executor/cuda/cuda_dnn.cc) checks that call with ``CHECK_CUDNN_OK``, which ends the
  process without a Python exception. So the sweep stops before any tensor of a step gets that large.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
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


def compiled_cnn(learning_rate: float = 0.01, gradient_accumulation_steps: int | None = None) -> Any:
    """:func:`small_cnn` compiled as notebook 05 compiles it for the throughput sweep: SGD with momentum
    0.9 and sparse categorical cross-entropy on logits. The child scripts measure memory with it.

    `gradient_accumulation_steps` (None, or an integer >= 2, as Keras takes it) goes to the optimizer:
    one update every that many steps, with the average of their gradients.

    Example:
        >>> compiled_cnn().optimizer.momentum
        0.9
        >>> compiled_cnn(gradient_accumulation_steps=4).optimizer.gradient_accumulation_steps
        4
    """
    import keras

    steps = gradient_accumulation_steps
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 2):
        raise ValueError(f"gradient_accumulation_steps={steps!r}: use None (an update every step) or an integer >= 2.")
    model = small_cnn()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate, momentum=0.9, gradient_accumulation_steps=steps),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=False)  # the same program on CPU and GPU: Keras turns XLA on by itself only on a GPU
    return model


INT32_MAX = 2**31 - 1  # the most elements cuDNN and many GPU kernels index in one tensor
OOM_TEXTS = ("OOM when allocating", "Out of memory while trying to allocate", "Out of host memory while trying")


def largest_tensor(model: Any) -> int:
    """Elements per sample of the largest tensor a training step of `model` holds: its input or a layer's output.

    The backward pass makes gradients of the same shapes, so this bounds every per-sample tensor of a
    step. For :func:`small_cnn` it is the first convolution's output, 26 x 26 x 16.

    Example:
        >>> largest_tensor(small_cnn())
        10816
    """
    shapes = [tuple(model.inputs[0].shape)] + [tuple(layer.output.shape) for layer in model.layers]
    return max(math.prod(int(d) for d in shape[1:]) for shape in shapes)


def wall_batches(start: int, per_sample: int, count: int = 12) -> list[int]:
    """`start`, 2x, 4x, ... (at most `count` sizes), stopping before a tensor of `per_sample` elements
    per sample would pass :data:`INT32_MAX` elements.

    Beyond that a GPU step can fail with other errors than an out-of-memory one, and on one path ends the
    process (see the module's docstring); the sweep stays below it on every GPU, whatever its memory.

    Example:
        >>> wall_batches(512, 10816)[-1], len(wall_batches(512, 10816))
        (131072, 9)
        >>> wall_batches(32, 100, count=3)
        [32, 64, 128]
    """
    for name, value in (("start", start), ("per_sample", per_sample), ("count", count)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}={value!r}: use a positive integer.")
    if start * per_sample > INT32_MAX:
        raise ValueError(f"start={start}: a batch of {start} already holds more than 2**31 - 1 elements in one tensor "
                         f"({per_sample} per sample); start lower.")
    return [start * 2**i for i in range(count) if start * 2**i * per_sample <= INT32_MAX]


def error_line(message: str) -> str:
    """The line of a TensorFlow error message that says what ran out: the allocator's OOM text, from its start.

    TensorFlow prefixes the text with the function it ran (``{{function_node __inference_...}}``) and
    follows it with the node; both differ from run to run. Without an out-of-memory text: the first line.

    Example:
        >>> error_line("{{function_node __inference_f_12}} OOM when allocating tensor with shape[8] and type "
        ...            "float on /device:GPU:0 by allocator GPU_0_bfc\\n\\t [[{{node a}}]]")
        'OOM when allocating tensor with shape[8] and type float on /device:GPU:0 by allocator GPU_0_bfc'
        >>> error_line("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4096 bytes.")
        'Out of memory while trying to allocate 4096 bytes.'
    """
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    for line in lines:
        at = min((line.find(t) for t in OOM_TEXTS if t in line), default=-1)
        if at >= 0:
            return line[at:]
    return re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", lines[0]) if lines else ""


def find_wall(step: Callable[[int], float], batches: Iterable[int], out_of_memory: type[BaseException],
              other: type[BaseException] | tuple[type[BaseException], ...] = ()) -> dict[str, Any]:
    """Call ``step(batch)`` (which returns that step's peak bytes) for each batch until one raises.

    `out_of_memory` (``tf.errors.ResourceExhaustedError``) is the wall: the sweep stops and says so.
    `other` (``tf.errors.OpError``) stops it too, reported as what it is, not as a wall. Anything else
    propagates. No error up to the last batch: no wall within the sweep (``failed_at`` None).

    Returns:
        ``{"peaks": {batch: bytes}, "failed_at": batch or None, "out_of_memory": bool, "error_type": name or
        None, "error": the line that says what ran out, or ""}``.

    Example:
        >>> def step(batch):
        ...     if batch > 64:
        ...         raise MemoryError("OOM when allocating tensor with shape[128,26,26,16]")
        ...     return batch * 1000
        >>> find_wall(step, [32, 64, 128, 256], out_of_memory=MemoryError)["failed_at"]
        128
    """
    if not (isinstance(out_of_memory, type) and issubclass(out_of_memory, BaseException)):
        raise ValueError(f"out_of_memory={out_of_memory!r}: pass an exception class such as "
                         "tf.errors.ResourceExhaustedError.")
    answer: dict[str, Any] = {"peaks": {}, "failed_at": None, "out_of_memory": False, "error_type": None, "error": ""}
    stoppers = other if isinstance(other, tuple) else (other,)
    for batch in batches:
        try:
            answer["peaks"][int(batch)] = step(int(batch))
        except (out_of_memory, *stoppers) as err:  # out of memory: the wall; `other`: stops it, no wall
            answer.update(failed_at=int(batch), out_of_memory=isinstance(err, out_of_memory),
                          error_type=type(err).__name__, error=error_line(getattr(err, "message", None) or str(err)))
            break
    return answer


def wall_lines(answer: Mapping[str, Any], where: str, child_error: str = "",
               per_sample: int | None = None) -> list[str]:
    """What the wall child found, in sentences that say which of four things happened.

    A child that gave no answer (`child_error`); an out-of-memory error caught (the wall, and the step
    the same process trained afterwards); another error that stopped the sweep; or no error up to the
    last batch tried. `per_sample` (:func:`largest_tensor`) tells whether the sweep stopped there to keep
    every tensor below 2**31 elements.

    Example:
        >>> wall_lines({"peaks": {512: 1e8, 1024: 2e8}, "failed_at": None}, "this A100")[0][:52]
        'On this A100, every batch up to 1024 fitted: no wall'
    """
    if child_error:
        return [f"On {where} the wall child gave no answer ({child_error}), so this run found no wall: read "
                "child.stderr for what stopped it."]
    peaks = {int(b): p for b, p in answer.get("peaks", {}).items()}
    fitted, failed_at = max(peaks, default=None), answer.get("failed_at")
    before = f"batch {fitted} fitted and " if fitted else "the first size tried, "
    if failed_at and answer.get("out_of_memory"):
        lines = [f"On {where}, {before}batch {failed_at} raised {answer['error_type']}: {answer['error']}"]
        if answer.get("loss_after") is not None:
            lines.append(f"After catching it, the same process trained a batch of 32 (loss "
                         f"{answer['loss_after']:.3f}): the error cost that process one step, and this kernel nothing.")
        return lines
    if failed_at:
        return [f"On {where}, {before}batch {failed_at} stopped the sweep with {answer['error_type']}, which is not "
                f"an out-of-memory error, so it is no wall: {answer['error']}"]
    capped = per_sample is not None and fitted is not None and 2 * fitted * per_sample > INT32_MAX
    beyond = (f" The sweep stops there: the next doubling, {2 * fitted}, would put more than 2**31 - 1 elements in "
              "one tensor, and past that a GPU step can fail in other ways than running out of memory (cuDNN refuses "
              "such a tensor; where TensorFlow checks that with CHECK_CUDNN_OK, the process ends)." if capped else "")
    return [f"On {where}, every batch up to {fitted} fitted: no wall within the sweep, so this run does not "
            f"measure where this device's memory ends.{beyond}"]


def prediction_line(predicted: int, fitted: int | None, failed_at: int | None) -> str:
    """Set the predicted wall beside the measured one: inside the doubling bracket, above, below; or,
    without a wall, beside the largest batch that fitted.

    The rule: with a wall, the prediction agrees when ``fitted <= predicted < failed_at`` (no batch fitted
    counts as ``fitted = 0``); without one, when ``predicted >= fitted``.

    Example:
        >>> prediction_line(1500, 1024, 2048)
        'Predicted from the sweep: about 1,500 samples, between the last batch that fitted and the first that did not.'
    """
    head = f"Predicted from the sweep: about {predicted:,} samples, "
    if failed_at:
        if (fitted or 0) <= predicted < failed_at:
            return head + ("between the last batch that fitted and the first that did not." if fitted else
                           f"below batch {failed_at}, the first size tried, which did not fit.")
        return head + (f"{'above' if predicted >= failed_at else 'below'} the measured wall: the bytes per sample "
                       "of the sweep do not hold all the way there.")
    if fitted is None:
        return head + "with nothing measured to compare it with."
    if predicted == fitted:
        return head + "exactly the largest batch tried, which fitted: that agrees with finding no wall."
    return head + ("beyond every batch tried, which agrees with finding no wall." if predicted > fitted else
                   f"yet batch {fitted} fitted: the bytes per sample of the sweep overestimate the larger batches.")


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

    Small batches are dominated by costs that do not grow with the batch (on a CPU mostly one
    convolution kernel's scratch buffer and the allocator's rounding of it), so the slope between
    the two largest measured batches is the best guide to where memory runs out.

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


MIB = 2**20  # bytes in a MiB: memory figures are in MiB, like the pretend device's cap and TF_CPU_BFC_MEM_LIMIT_IN_MB


def memory_table(peaks: Mapping[Any, float]) -> str:
    """Peak bytes per batch size in MiB, and the peak divided by the batch in KiB, as a text table.

    Example:
        >>> print(memory_table({32: 37 * 2**20, 512: 91 * 2**20}))
        batch  peak (MiB)  peak / batch (KiB)
        32     37.0        1184.0
        512    91.0        182.0
    """
    rows = [("batch", "peak (MiB)", "peak / batch (KiB)")]
    rows += [(str(b), f"{p / MIB:.1f}", f"{p / b / 1024:.1f}") for b, p in _peaks(peaks)]
    return text_table(rows)


def dips_note(peaks: Mapping[Any, float]) -> str:
    """A sentence on batch sizes whose peak is below the next smaller batch's, or '' when the peak never falls.

    The rule: batch b is named when its peak is below the peak of the size before it. The figures it quotes
    are those of :func:`memory_table` (MiB, one decimal), and the difference is taken between those printed
    figures, so the sentence and the table agree; a dip that the table rounds away is said to be under 0.1 MiB.
    At small batches the peak is mostly one fixed scratch buffer and the allocator's rounding of it, so which
    activations are still live when that buffer is allocated decides the peak, and a larger batch can peak lower.

    Example:
        >>> dips_note({32: 37.2 * 2**20, 64: 38.4 * 2**20, 128: 36.2 * 2**20, 256: 58.3 * 2**20})[:65]
        'Batch 128 peaked 2.2 MiB below batch 64 (36.2 against 38.4 MiB): '
        >>> dips_note({32: 37e6, 64: 40e6})
        ''
    """
    points = _peaks(peaks)
    dips = [(b_prev, p_prev, b, p) for (b_prev, p_prev), (b, p) in zip(points, points[1:], strict=False)
            if p < p_prev]
    if not dips:
        return ""
    parts = ", ".join(_dip(b_prev, p_prev, b, p) for b_prev, p_prev, b, p in dips)
    return (parts[0].upper() + parts[1:] + ": at these sizes the peak is mostly a scratch buffer of fixed size "
            "and the allocator's rounding of it, and which activations are still held when that buffer is taken "
            "changes with the batch; the slope comes from the larger batches.")


def _dip(b_prev: int, higher: float, b: int, lower: float) -> str:
    """How far batch b's peak is below batch b_prev's, from the figures the table prints (MiB, one decimal)."""
    high, low = f"{higher / MIB:.1f}", f"{lower / MIB:.1f}"
    if high == low:
        return f"batch {b} peaked under 0.1 MiB below batch {b_prev} (both {low} MiB in the table)"
    return f"batch {b} peaked {float(high) - float(low):.1f} MiB below batch {b_prev} ({low} against {high} MiB)"


def peak_parts_line(batch: int, peak: float, before: float, scratch: float, chunk: float) -> str:
    """Split the peak of one step at `batch` into what was measured and what the kernel and allocator add.

    `before`: bytes in use before the step (measured); `scratch`: bytes a kernel asks for whatever the
    batch; `chunk`: bytes the allocator hands out for that request. The rest, ``peak - before - chunk``,
    is what else was live at the peak (figures in MiB). When the parts do not add up (the rest would be negative), the
    sentence says so instead of splitting the peak.

    Example:
        >>> peak_parts_line(32, 35.06e6, 0.28e6, 21.19e6, 33.55e6)[:48]
        'At batch 32 the peak was 33.44 MiB: 0.27 MiB was'
    """
    for name, value in (("peak", peak), ("before", before), ("scratch", scratch), ("chunk", chunk)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name}={value!r}: use a finite number of bytes >= 0.")
    rest = peak - before - chunk
    head = f"At batch {batch} the peak was {peak / MIB:.2f} MiB: {before / MIB:.2f} MiB was in use before the step"
    if rest < 0 or chunk < scratch:
        return (head + f", and the {scratch / MIB:.2f} MiB scratch buffer in a {chunk / MIB:.2f} MiB chunk does not "
                "fit in the rest, so on this device something else holds the peak: the split below does not apply.")
    return (head + f" (weights, momentum, the batch); the scratch buffer asks for {scratch / MIB:.2f} MiB and the "
            f"allocator counts the {chunk / MIB:.2f} MiB chunk it gets, {(chunk - scratch) / MIB:.2f} MiB more; "
            f"the other {rest / MIB:.2f} MiB are activations and gradients live at that moment.")


CPU_BFC_NAME = "bfc_cpu_allocator_for_gpu"


def allocator_note(error: str) -> str:
    """Why a CPU out-of-memory message names ``bfc_cpu_allocator_for_gpu``, or '' when it does not.

    ``ProcessState::GetCPUAllocator`` (tensorflow/core/common_runtime/process_state.cc) gives that name to
    every CPU allocator it builds when ``TF_CPU_ALLOCATOR_USE_BFC`` is true, GPU or not; its limit is
    ``TF_CPU_BFC_MEM_LIMIT_IN_MB`` (64 GiB by default).

    Example:
        >>> allocator_note("OOM when allocating tensor ... by allocator GPU_0_bfc")
        ''
    """
    if CPU_BFC_NAME not in str(error):
        return ""
    return (f"The allocator's name, {CPU_BFC_NAME}, does not mean a GPU: TensorFlow gives that name to the CPU's "
            "allocator whenever TF_CPU_ALLOCATOR_USE_BFC=true (ProcessState::GetCPUAllocator in "
            "tensorflow/core/common_runtime/process_state.cc), and TF_CPU_BFC_MEM_LIMIT_IN_MB caps it: the "
            "pretend device.")


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


# --------------------------------------------------------------------------- gradient accumulation
# Section "Past the memory wall: gradient accumulation". What Keras 3 does with
# ``gradient_accumulation_steps=k``, read in keras/src/optimizers/base_optimizer.py:
#
# * ``BaseOptimizer.build`` adds one ``gradient_accumulator`` variable per trainable weight (a float32
#   copy of the weights' size);
# * ``BaseOptimizer._backend_apply_gradients``: on every call of ``apply`` the gradients are added to
#   the accumulators, except on every k-th call (``(self._iterations + 1) % k == 0``), which applies
#   ``(g + accumulated) / k``, the average of the k micro-batches' gradients, with the optimizer's own
#   rule (momentum, clipping, weight decay), then zeroes the accumulators;
# * ``BaseOptimizer.apply`` adds 1 to ``_iterations`` on every call (micro-steps); the public
#   ``iterations`` property returns ``_iterations // k``, the updates made; ``_get_current_learning_rate``
#   calls a learning-rate schedule with ``_iterations``, the micro-steps (the argument's docstring says so).

def micro_batch(target: int, largest_fit: int) -> int:
    """The micro-batch that reaches `target` in whole steps that fit: `target // k`, for the fewest steps k with
    ``target // k <= largest_fit`` that divide `target` (exercise 4's rule: start at ``ceil(target / largest_fit)``
    and raise k until it divides).

    Every micro-batch must have the same size: Keras averages the k gradients with equal weights, and each
    is already a mean over its own micro-batch, so only equal sizes give the mean over all `target` samples.

    Example:
        >>> micro_batch(2048, 1024)  # the CPU run: 1024 fitted, 2048 did not: 2 steps of 1024
        1024
        >>> micro_batch(600, 256)  # ceil(600 / 256) = 3 steps, and 3 divides 600: steps of 200
        200
    """
    if not isinstance(target, int) or isinstance(target, bool) or target < 2:
        raise ValueError(f"target={target!r}: use a batch size, an integer >= 2.")
    if not isinstance(largest_fit, int) or isinstance(largest_fit, bool) or not 1 <= largest_fit < target:
        raise ValueError(f"largest_fit={largest_fit!r}: use the largest batch that fits, an integer from 1 to "
                         f"{target - 1} (below target={target}).")
    k = -(-target // largest_fit)  # the fewest steps whose micro-batches fit
    while target % k:  # unequal micro-batches: one step more
        k += 1
    return target // k


def flat(weights: Sequence[Any]) -> Any:
    """A model's weights (``model.get_weights()``) as one float64 NumPy vector.

    Example:
        >>> import numpy as np
        >>> flat([np.ones((2, 2)), np.zeros(3)]).shape
        (7,)
    """
    import numpy as np

    return np.concatenate([np.asarray(w, dtype="float64").ravel() for w in weights])


def relative_drift(weights: Sequence[Any], reference: Sequence[Any], start: Sequence[Any]) -> float:
    """How far `weights` are from `reference`, as a fraction of how far training moved `reference` from `start`.

    ``|weights - reference| / |reference - start|`` with Euclidean norms over every weight: 0 means the same
    weights; 1 means as far apart as the whole of training moved them.

    Example:
        >>> import numpy as np
        >>> relative_drift([np.array([1.001, 2.0])], [np.array([1.0, 2.0])], [np.array([0.0, 2.0])])
        0.001
    """
    import numpy as np

    moved = float(np.linalg.norm(flat(reference) - flat(start)))
    if moved == 0:
        raise ValueError("reference equals start: training did not move the weights, so a drift relative to that "
                         "movement is undefined; train at least one update.")
    return round(float(np.linalg.norm(flat(weights) - flat(reference))) / moved, 15)


def held_out_loss(model: Any, x: Any, y: Any) -> float:
    """The mean sparse categorical cross-entropy of `model` (logits out) on `x`, `y`, in inference mode.

    Example:
        >>> import numpy as np
        >>> from helpers.batching import small_cnn
        >>> round(held_out_loss(small_cnn(), np.zeros((4, 28, 28, 1), "float32"), np.zeros(4, "int64")), 3)
        2.303
    """
    import keras

    logits = model(x, training=False)
    return float(keras.ops.mean(keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)))


def _printed(value: float) -> float:
    """A value as :func:`equivalence_line` prints it (two significant figures), so decisions use printed figures."""
    return float(f"{value:.1e}")


def _reorder_reading(drift: float, reorder: float, scale: float) -> str:
    """The reversed-order control, read against the accumulation's drift (both as printed) by the `scale` rule."""
    head = (f"For scale, the large batch against itself with each batch's images in reverse order (the same sums, "
            f"added in another order) drifts {reorder:.1e}")
    if reorder == 0:
        return head + (": both runs repeated the large batch's weights bit for bit." if drift == 0 else
                       ": reordering changed nothing here, so there is no ratio to read; the tolerance decides.")
    shown = f"{drift / reorder:.0f}" if drift / reorder >= 10 else f"{drift / reorder:.2g}"
    ratio = float(shown)  # decided on the ratio as printed
    if ratio > scale:
        return (head + f"; accumulation's drift is {shown}x that, more than {scale:g}x: accumulation does more than "
                "reorder the sums. It rounds each micro-batch's mean, adds them in the accumulators and divides by k, "
                "roundings a single large step does not make, and training carries each difference into the next "
                "update. The tolerance, which counts roundings, is the test; this ratio only says which run rounded "
                "more.")
    if ratio < 1 / scale:
        return (head + f"; accumulation's drift is {shown}x that, less than 1/{scale:g}: reversing every batch "
                "changed the order of more additions than splitting it into micro-batches did. Both are rounding; "
                "the tolerance is the test.")
    return (head + f"; accumulation's drift is {shown}x that, within {scale:g}x either way: the size of merely "
            "adding the same numbers in another order, which is what rounding predicts.")


def equivalence_line(batch: int, micro: int, steps: int, updates: int, weight_drift: float, loss_gap: float,
                     tolerance: float, reorder_drift: float | None = None, scale: float = 10.0,
                     rounding: str = "float32") -> str:
    """Whether accumulation made the same updates as the large batch, by the rule stated in the sentence.

    The rule: the same updates, up to float32 rounding, when the weights' drift (:func:`relative_drift`) and the
    largest relative gap between the held-out losses are both at most `tolerance`. The three are compared as
    printed (two significant figures). `reorder_drift`: the drift of the large batch against itself with each
    batch's images in another order, the same sums added in another order. It is read too, by a second rule
    stated in the sentence: the accumulation's drift is "the size of a reordering" when the printed ratio of the two
    is within `scale` times either way; above that, accumulation rounds in steps a reordering does not make.
    `rounding` names the arithmetic the tolerance allows for: ``"float32"``, or ``"TF32"`` where a convolution
    may still run as TF32 (notebook 05 widens its tolerance there).

    Example:
        >>> equivalence_line(512, 128, 4, 8, 3.4e-5, 1.1e-7, 2.8e-4)[:60]
        'After 8 updates of batch 512, one as 4 steps of 128 with gra'
    """
    for name, value in (("batch", batch), ("micro", micro), ("steps", steps), ("updates", updates)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}={value!r}: use a positive integer.")
    for name, value in (("weight_drift", weight_drift), ("loss_gap", loss_gap), ("tolerance", tolerance),
                        ("reorder_drift", 0.0 if reorder_drift is None else reorder_drift)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name}={value!r}: use a finite number >= 0.")
    if rounding not in ("float32", "TF32"):
        raise ValueError(f"rounding={rounding!r}: use 'float32' or 'TF32'.")
    drift, gap, tol = _printed(weight_drift), _printed(loss_gap), _printed(tolerance)
    head = (f"After {updates} updates of batch {batch}, one as {steps} steps of {micro} with "
            f"gradient_accumulation_steps={steps}, one as single steps: the weights differ by {drift:.1e} of how far "
            f"training moved them, the held-out losses by at most {gap:.1e} of their value")
    if not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 1:
        raise ValueError(f"scale={scale!r}: use a factor above 1, such as 10.")
    scale = "" if reorder_drift is None else " " + _reorder_reading(drift, _printed(reorder_drift), scale)
    if drift <= tol and gap <= tol:
        return (head + f": both at most the {rounding} tolerance {tol:.1e}, so accumulation made the same updates as "
                "the large batch, up to rounding." + scale)
    above = " and ".join(n for n, v in (("the weights' drift", drift), ("the loss gap", gap)) if v > tol)
    return (head + f": {above} above the {rounding} tolerance {tol:.1e}, so these are not the same updates up to "
            "rounding. Look for what breaks the equivalence: a layer that reads the batch (BatchNormalization), "
            "random draws (Dropout), micro-batches of unequal size, a loss summed instead of averaged, or kernels "
            "that round more than float32 (TF32 on, a Winograd or FFT convolution on a GPU)." + scale)


def _mib(value: float) -> float:
    return float(f"{value / MIB:.1f}")


def accumulation_memory_lines(target: int, micro: int, steps: int, micro_peak: float, accumulated_peak: float,
                              large_peak: float | None, large_error: str, capacity: float | None, where: str,
                              near: float = 0.2, weights: int | None = None) -> list[str]:
    """What the accumulation child measured, in sentences whose rules are stated beside the numbers.

    The rules, on the figures as printed (MiB, one decimal): the accumulated step "fits" on `where` when its
    peak is at most `capacity` (bytes; None: nothing to compare with); its peak is "that of the small batch"
    when it is within `near` (a fraction) of a plain step's peak at `micro`. `large_peak` None means the large
    step raised `large_error` and measured nothing. `weights`: the model's weight count; the accumulators are one
    float32 per weight, and when the two peaks differ by more than twice their bytes the sentence says the
    accumulators cannot explain the difference (the allocator's chunks and what else was in use do).

    Example:
        >>> accumulation_memory_lines(2048, 512, 4, 92.3 * 2**20, 81.1 * 2**20, 351.4 * 2**20, "", 256 * 2**20,
        ...              "the pretend 256 MiB CPU device")[0][:48]
        'One step of batch 2048 peaked at 351.4 MiB: more'
    """
    for name, value in (("micro_peak", micro_peak), ("accumulated_peak", accumulated_peak),
                        ("large_peak", 1.0 if large_peak is None else large_peak),
                        ("capacity", 1.0 if capacity is None else capacity)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name}={value!r}: use a positive number of bytes.")
    if not isinstance(near, (int, float)) or not 0 < near < 1:
        raise ValueError(f"near={near!r}: use a fraction between 0 and 1, such as 0.2.")
    if weights is not None and (not isinstance(weights, int) or isinstance(weights, bool) or weights < 1):
        raise ValueError(f"weights={weights!r}: use None or the model's weight count, a positive integer.")
    m, a = _mib(micro_peak), _mib(accumulated_peak)
    cap = None if capacity is None else _mib(capacity)
    lines = []
    if large_peak is None:
        lines.append(f"One step of batch {target} on {where} did not fit: {large_error or 'an out-of-memory error'}")
    else:
        big = _mib(large_peak)
        room = ("" if cap is None else f": more than {where} holds ({cap:.1f} MiB)" if big > cap else
                f", which fits in {where} ({cap:.1f} MiB)")
        lines.append(f"One step of batch {target} peaked at {big:.1f} MiB{room}.")
    fits = ("" if cap is None else f", at most the {cap:.1f} MiB of {where}: it fits" if a <= cap else
            f", more than the {cap:.1f} MiB of {where}: use a smaller micro-batch")
    share = ("" if large_peak is None or _mib(large_peak) == 0 else
             f" ({a / _mib(large_peak) * 100:.0f} % of the large step's)")
    lines.append(f"{steps} steps of {micro} with gradient_accumulation_steps={steps} made one update of batch {target} "
                 f"at a peak of {a:.1f} MiB{share}{fits}.")
    diff = (a - m) / m if m else math.inf
    pct = f"{abs(diff) * 100:.0f}"
    how = ("the same as it" if a == m else f"{'less than 1' if pct == '0' else pct} % {'above' if a > m else 'below'} "
           "it")
    line = f"A plain step of {micro} peaked at {m:.1f} MiB; the accumulated steps' peak is {how}"
    near_text = f"{near:.0%}".replace("%", " %")
    if abs(diff) <= near:
        line += (f", within {near_text}: accumulation needs the memory of its micro-batch, whatever the effective "
                 "batch, plus its accumulators.")
    else:
        line += (f", more than {near_text}: on this device something else than the micro-batch sets the peak, so "
                 "read the figures, not the rule of thumb.")
    if weights is not None:
        acc_kib, gap = float(f"{4 * weights / 1024:.1f}"), round(abs(a - m), 1)
        line += (f" The accumulators are one float32 per weight: 4 B x {weights:,} = {acc_kib:.1f} KiB")
        if gap * 1024 > 2 * acc_kib:
            line += (f"; the peaks differ by {gap:.1f} MiB, more than twice that, so the accumulators do not explain "
                     "the difference" + (" (they add memory; they cannot lower a peak)" if a < m else "") +
                     (": the allocator does, which hands out memory in chunks larger than the requests and whose peak "
                      "depends on what else was in use at that moment." if abs(diff) <= near else "."))
        else:
            line += f"; the peaks differ by {gap:.1f} MiB, at most twice that: no more than the accumulators."
    lines.append(line)
    return lines


def accumulation_time_line(batch: int, micro: int, steps: int, s_large: float, s_accumulated: float, timed: int,
                           slower: float = 1.1, slowest: float | None = None) -> str:
    """What accumulation cost in time: the median seconds per update, one large step against `steps` small ones.

    The rule, on the figures as printed (ms, one decimal): accumulation "costs time" when it takes more than
    `slower` times the large step's time per update, "saves time" when less than 1 / `slower` of it, and
    otherwise costs about the same. `slowest`: the larger of the two runs' slowest timed update over its median,
    quoted so the reader can judge the noise (on 2 busy CPU cores single steps stall now and then).

    Example:
        >>> accumulation_time_line(512, 128, 4, 0.025, 0.060, 7)[:58]
        'An update of batch 512 took 25.0 ms as one step and 60.0 m'
    """
    for name, value in (("s_large", s_large), ("s_accumulated", s_accumulated)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name}={value!r}: use a positive number of seconds.")
    if not isinstance(slower, (int, float)) or not slower > 1:
        raise ValueError(f"slower={slower!r}: use a factor above 1, such as 1.1.")
    if slowest is not None and (not isinstance(slowest, (int, float)) or not math.isfinite(slowest) or slowest < 1):
        raise ValueError(f"slowest={slowest!r}: use None or the slowest update over the median, a number >= 1.")
    large_ms, acc_ms = max(float(f"{s_large * 1e3:.1f}"), 0.1), max(float(f"{s_accumulated * 1e3:.1f}"), 0.1)
    ratio = float(f"{acc_ms / large_ms:.2f}")  # decided on the printed ratio
    head = (f"An update of batch {batch} took {large_ms:.1f} ms as one step and {acc_ms:.1f} ms as {steps} steps of "
            f"{micro} (medians of {timed} timed updates" + ("" if slowest is None else f", the slowest "
            f"{slowest:.1f}x its median") + f"): {ratio:.2f}x the time, {1e3 / large_ms:,.1f} against "
            f"{1e3 / acc_ms:,.1f} updates/s")
    if ratio > slower:
        return (head + f", above {slower}x: each of the {steps} small steps pays a step's fixed cost again (Python, "
                "kernel launches, reading every weight), and a small batch gives each kernel less work to share out.")
    if ratio < 1 / slower:
        return head + f", below 1/{slower}: on this device the small steps processed samples faster than the large one."
    return (head + f", within {slower}x either way: on this device a step of {micro} already keeps it busy, so "
            "accumulation costs about the same time per sample.")
