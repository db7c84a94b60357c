"""Topic module of notebook 07 · Multi-GPU with MirroredStrategy.

Plumbing only: ``MirroredStrategy``, ``strategy.scope()``, ``strategy.run``, ``strategy.reduce``,
``experimental_distribute_dataset`` and ``tf.nn.compute_average_loss`` stay on the notebook's page.
Here live the check of ``N_REPLICAS`` against what this machine can hold, made before TensorFlow
starts (:func:`check_replicas`, :func:`visible_gpu_count`), the name of the all-reduce a strategy
uses (:func:`all_reduce_name`), the sketch of data parallelism (:func:`sketch`), the scaling figure
with NVIDIA's published points (:func:`scaling_figure`, :data:`PUBLISHED`) and the sentences that
read the measurements, worded for logical CPUs, a split GPU or real GPUs (:func:`devices_reading`,
:func:`throughput_reading`, :func:`scaling_reading`). For the section "All-reduce measured": the ring's
bytes per device (:func:`ring_bytes`), the prediction fixed cost + bytes / bandwidth
(:func:`predicted_seconds`), the yardstick copy (:func:`copy_seconds`) and the lines that read them
(:func:`prediction_reading`, :func:`choices_lines`); for "Regularisation losses under a strategy",
:func:`regularization_reading`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from helpers import nvml as nvml_api

MAX_SPLITS_PER_GPU = 8  # logical GPUs one physical GPU may become here
MAX_REPLICAS_PER_CORE = 4  # logical CPUs per CPU core (they share the cores: past this only overhead grows)


@dataclass(frozen=True)
class Published:
    """One multi-GPU training throughput measured and published by NVIDIA (weak scaling: per-GPU batch fixed)."""

    gpus: int
    gpu: str
    precision: str
    speedup: float

    @property
    def efficiency(self) -> float:
        return self.speedup / self.gpus

    @property
    def label(self) -> str:
        return f"{self.gpus}x {self.gpu} ({self.precision})"


SOURCE = ("NVIDIA DeepLearningExamples, TensorFlow/Classification/ConvNets/resnet50v1.5/README.md, "
          "training performance (TensorFlow 20.06-tf1 NGC container, XLA)")
PUBLISHED = (
    Published(8, "A100 40 GB", "TF32", 7.70),
    Published(16, "V100 32 GB", "FP32", 15.05),
)


# --------------------------------------------------------------------------- N_REPLICAS, before TensorFlow starts
def visible_gpu_count(nvml: Any | None = None, environ: Mapping[str, str] | None = None) -> int:
    """How many GPUs TensorFlow will see, counted without starting TensorFlow (NVML, ``CUDA_VISIBLE_DEVICES``).

    NVML counts every NVIDIA GPU of the machine; ``CUDA_VISIBLE_DEVICES`` hides some from CUDA (an
    empty value or ``-1`` hides all; CUDA reads the list up to its first invalid entry). Without a
    driver the answer is 0.

    Example:
        >>> visible_gpu_count(environ={"CUDA_VISIBLE_DEVICES": "-1"})
        0
    """
    environ = os.environ if environ is None else environ
    count = len(nvml_api.readings(nvml))
    entries = nvml_api.visible_entries(environ.get("CUDA_VISIBLE_DEVICES"))
    return count if entries is None else min(len(entries), count)


def replica_limit(gpu_count: int, cpu_cores: int) -> int:
    """The most replicas this notebook makes on `gpu_count` GPUs, or on `cpu_cores` cores without a GPU.

    With GPUs: each may split into at most :data:`MAX_SPLITS_PER_GPU` logical GPUs (each part gets
    its own slice of the card's memory; smaller slices leave too little for a model). Without a GPU:
    :data:`MAX_REPLICAS_PER_CORE` logical CPUs per core (they share the cores, so more only adds
    overhead and time).

    Example:
        >>> replica_limit(0, 2), replica_limit(1, 2), replica_limit(4, 2)
        (8, 8, 32)
    """
    if gpu_count > 0:
        return gpu_count * MAX_SPLITS_PER_GPU
    return max(1, cpu_cores) * MAX_REPLICAS_PER_CORE


def check_replicas(n_replicas: Any, gpu_count: int | None = None, cpu_cores: int | None = None,
                   nvml: Any | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Refuse an ``N_REPLICAS`` this machine cannot hold, before TensorFlow starts; return it.

    * N or more GPUs: the first N are the replicas.
    * 1 to N-1 GPUs: each GPU splits into N / GPUs logical GPUs, so N must be a multiple of the GPU
      count, and at most :data:`MAX_SPLITS_PER_GPU` per GPU.
    * no GPU: the CPU splits into N logical CPUs, at most :data:`MAX_REPLICAS_PER_CORE` per core.

    `gpu_count` and `cpu_cores` default to what this machine has (:func:`visible_gpu_count`,
    ``os.cpu_count()``).

    Example:
        >>> check_replicas(2, gpu_count=0, cpu_cores=2)
        2
        >>> check_replicas(3, gpu_count=2, cpu_cores=8)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: N_REPLICAS=3 is not allowed on this machine (2 GPUs): use at most 2, or a multiple of 2 up to 16 ...
    """
    if isinstance(n_replicas, bool) or not isinstance(n_replicas, int) or n_replicas < 1:
        raise ValueError(f"N_REPLICAS={n_replicas!r} is not allowed: use an integer from 1 (one device, no "
                         "parallelism) up to what this machine holds.")
    gpus = visible_gpu_count(nvml, environ) if gpu_count is None else gpu_count
    cores = (os.cpu_count() or 1) if cpu_cores is None else cpu_cores
    limit = replica_limit(gpus, cores)
    if gpus:
        where = f"{gpus} GPU{'s' if gpus > 1 else ''}"
        if n_replicas > gpus and (n_replicas % gpus or n_replicas > limit):
            hint = f"at most {gpus}, or a multiple of {gpus} up to {limit}" if gpus > 1 else f"1 to {limit}"
            raise ValueError(f"N_REPLICAS={n_replicas} is not allowed on this machine ({where}): use {hint} (each "
                             f"GPU splits evenly into at most {MAX_SPLITS_PER_GPU} logical GPUs).")
    elif n_replicas > limit:
        raise ValueError(f"N_REPLICAS={n_replicas} is not allowed on this machine (no GPU, {cores} CPU cores): use 1 "
                         f"to {limit} ({MAX_REPLICAS_PER_CORE} logical CPUs per core; they share the cores, so more "
                         "replicas only add overhead).")
    return n_replicas


# --------------------------------------------------------------------------- devices and strategies
def devices_reading(asked: int, devices: Sequence[str], kind: str, gpu_count: int, available: int | None = None) -> str:
    """One sentence: the replicas' devices, how many of this kind exist, and what to do when fewer than asked.

    `available` is how many logical devices of `kind` this kernel has; the replicas use the first
    ``len(devices)`` of them (on a machine with 8 GPUs and ``N_REPLICAS = 2``, two of the eight).

    Example:
        >>> devices_reading(2, ["/device:CPU:0", "/device:CPU:1"], "CPU", 0)
        '2 replicas on 2 logical CPUs, all on the same physical CPU: /device:CPU:0, /device:CPU:1.'
    """
    if kind not in ("CPU", "GPU"):
        raise ValueError(f"kind={kind!r}: use 'CPU' or 'GPU'.")
    if not devices:
        raise ValueError("devices=[]: pass the replicas' device names, at least one.")
    n = len(devices)
    names = ", ".join(devices)
    if kind == "CPU":
        where = f"{n} logical CPU{'s' if n != 1 else ''}, all on the same physical CPU"
    elif n > gpu_count:
        where = f"{n} logical GPUs split from {gpu_count} physical GPU{'s' if gpu_count != 1 else ''}"
    else:
        where = f"{n} GPU{'s' if n != 1 else ''}, one replica each"
    sentence = f"{n} replica{'s' if n != 1 else ''} on {where}: {names}."
    if available is not None and available > n:
        noun = "logical CPUs" if kind == "CPU" else "GPUs" if available <= gpu_count else "logical GPUs"
        what = f"{available} {noun}"
        sentence += (f" This kernel has {what}; the replicas use the first {n}, and MirroredStrategy gets exactly "
                     f"these, so the other {available - n} take no part in this run.")
    if n < asked:
        sentence += (f" N_REPLICAS is {asked}, but TensorFlow had already started in this kernel with {n} {kind} "
                     f"device(s), and logical devices can only be made before it starts. The notebook goes on with "
                     f"{n} replica(s); use Kernel > Restart and run all cells for {asked}.")
    return sentence


def all_reduce_name(strategy: Any) -> str:
    """The cross-device all-reduce a ``MirroredStrategy`` uses, e.g. ``'CollectiveAllReduce (RING)'``.

    TensorFlow 2.21 chooses collective ops: NCCL across physical GPUs, RING across CPUs or logical
    GPUs. This reads the strategy's private fields, so it answers ``'unknown'`` if they change.

    Example:
        >>> all_reduce_name(object())
        'unknown'
    """
    extended = getattr(strategy, "extended", None)
    ops = getattr(extended, "_cross_device_ops", None)
    if ops is None:
        return "unknown"
    name = type(ops).__name__
    options = getattr(extended, "_communication_options", None)
    implementation = getattr(options, "implementation", None)
    kind = getattr(implementation, "name", None)
    if kind and kind != "AUTO":
        return f"{name} ({kind})"
    return f"{name} (NCCL on GPUs)" if name == "CollectiveAllReduce" else name


# --------------------------------------------------------------------------- figures
def _light(colour: str) -> tuple[float, float, float, float]:
    from matplotlib.colors import to_rgba

    r, g, b, _ = to_rgba(colour)
    return (r, g, b, 0.35)


def sketch(replicas: int, global_batch: int, ax: Any = None) -> Any:
    """Draw data parallelism: a global batch split across replicas, their gradients all-reduced.

    Draws at most four replicas (three and the last one when there are more).

    Example:
        >>> ax = sketch(2, 128)
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    if not isinstance(replicas, int) or replicas < 1 or not isinstance(global_batch, int) or global_batch < replicas:
        raise ValueError(f"replicas={replicas!r}, global_batch={global_batch!r}: use integers with "
                         "1 <= replicas <= global_batch.")
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 4.2))
    shown = list(range(replicas)) if replicas <= 4 else [0, 1, 2, replicas - 1]
    width = 1.0 / len(shown)
    per = global_batch // replicas

    def box(x: float, y: float, w: float, h: float, text: str, colour: str) -> None:
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.01", facecolor=colour, edgecolor="0.3"))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=9 if len(shown) <= 3 else 8)

    def arrow(x0: float, y0: float, x1: float, y1: float) -> None:
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops={"arrowstyle": "->", "color": "0.3"})

    ax.text(0.5, 1.01, f"one step, global batch of {global_batch} examples", ha="center", fontsize=10, weight="bold")
    for slot, index in enumerate(shown):
        x = slot * width + 0.02
        w = width - 0.04
        box(x, 0.87, w, 0.1, f"slice {index}: {per} examples", _light(f"C{index % 10}"))
        box(x, 0.55, w, 0.24, f"replica {index}: a full\ncopy of the model\nforward, backward -> g{index}", "white")
        box(x, 0.04, w, 0.16, f"copy {index}: apply g\n(same update on all)", "white")
        arrow(x + w / 2, 0.87, x + w / 2, 0.79)
        arrow(x + w / 2, 0.55, x + w / 2, 0.47)
        arrow(x + w / 2, 0.33, x + w / 2, 0.20)
        if replicas > 4 and slot == 2:
            ax.text(x + w + 0.02, 0.67, "...", fontsize=14, ha="center", va="center")
    terms = " + ".join(f"g{i}" for i in range(replicas)) if replicas <= 4 else f"g0 + g1 + ... + g{replicas - 1}"
    box(0.02, 0.33, 0.96, 0.14, f"all-reduce: every replica receives g = {terms}\n"
        "(each g divided by the global batch, so g is the gradient of the whole batch's mean loss)", "#eeeeee")
    ax.set(xlim=(0, 1), ylim=(0, 1.05))
    ax.axis("off")
    return ax


def scaling_figure(replicas: int, speedup: float, strong_speedup: float | None = None, where: str = "this CPU",
                   split: bool = False, published: Sequence[Published] = PUBLISHED, ceiling: float = 1.0) -> Any:
    """Speed-up and scaling efficiency against the number of devices: this run beside NVIDIA's published runs.

    Args:
        replicas: the replicas of this run.
        speedup: samples/s of `replicas` replicas over samples/s of one, per-replica batch fixed.
        strong_speedup: the same with the global batch fixed (drawn as a second marker when given).
        where: what this run was measured on, for the legend ("this CPU", "this GPU", "these 4 GPUs").
        split: the replicas share one physical device: draw its ceiling (one device's throughput).
        published: the published points to draw beside it.
        ceiling: on a split device, the best speed-up to expect (1.0, or one device's gain from running the
            whole global batch, when that batch fills hardware the per-replica batch left idle).

    Example:
        >>> fig = scaling_figure(2, 1.4, 0.74, split=True)
    """
    import matplotlib.pyplot as plt

    if not isinstance(replicas, int) or replicas < 1 or not math.isfinite(speedup) or speedup <= 0:
        raise ValueError(f"replicas={replicas!r}, speedup={speedup!r}: use an integer >= 1 and a positive speed-up.")
    ceiling = _positive("ceiling", ceiling)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    top = max([replicas, *(p.gpus for p in published)])
    left.plot([1, top], [1, top], "--", color="0.6", label="ideal (N x one device)")
    right.axhline(1.0, ls="--", color="0.6", label="ideal (100 %)")
    for i, p in enumerate(published):
        style = {"marker": "s", "color": f"C{i + 2}", "ls": "none", "label": f"{p.label}, measured by NVIDIA"}
        left.plot([p.gpus], [p.speedup], **style)
        right.plot([p.gpus], [p.efficiency], **style)
    if split:
        line = {"ls": ":", "color": "C0", "alpha": 0.6, "label": f"ceiling on one split device ({ceiling:.2f}x)"}
        left.axhline(ceiling, **line)
        right.plot([1, top], [ceiling, ceiling / top], **line)
    mine = {"marker": "o", "color": "C0", "ls": "none", "markersize": 9}
    left.plot([replicas], [speedup], label=f"{replicas} replicas, measured on {where}", **mine)
    right.plot([replicas], [speedup / replicas], label=f"{replicas} replicas, measured on {where}", **mine)
    if strong_speedup is not None and math.isfinite(strong_speedup):
        other = {"marker": "x", "color": "C1", "ls": "none", "markersize": 9,
                 "label": f"{replicas} replicas, global batch fixed, measured on {where}"}
        left.plot([replicas], [strong_speedup], **other)
        right.plot([replicas], [strong_speedup / replicas], **other)
    left.set(xscale="log", yscale="log", xlabel="devices (replicas)", ylabel="speed-up over one device (samples/s)",
             title="Speed-up")
    right.set(xscale="log", xlabel="devices (replicas)", ylabel="scaling efficiency = speed-up / N",
              title="Scaling efficiency", ylim=(0, 1.15))
    from matplotlib.ticker import FormatStrFormatter

    left.set_yscale("log", base=2)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.grid(True, alpha=0.3)
    left.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    right.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- readings
# The rules the readings apply. Notebook 07 shows them in a cell and passes them in; each sentence states
# the rule it applied beside the numbers. The decision is made on the figures as printed (2 decimals), so
# a sentence never calls "1.05x" faster and "1.05x" about as fast.
ABOUT_AS_FAST = 0.05  # two rates within 5 % of each other are "about as fast"
FILLED_IDLE = 1.2  # one device running the global batch above 1.2x its per-replica-batch rate: that batch left
# part of the hardware idle
NEAR_IDEAL = 0.9  # own GPUs: an efficiency of 90 % or more is near the ideal (tensorflow/tensorflow#26392)


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise ValueError(f"{name}={value!r}: use a positive finite number.")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}={value!r}: use a positive finite number.")
    return value


def ratio_words(ratio: float, about_as_fast: float = ABOUT_AS_FAST) -> str:
    """Word a ratio of two rates: ``'1.40x faster'``, ``'1.35x slower'`` or ``'about as fast (1.02x)'``.

    Faster when the ratio, rounded to 2 decimals as printed, is at least ``1 + about_as_fast``;
    slower when its inverse, rounded the same way, is; about as fast otherwise.

    Example:
        >>> ratio_words(1.4), ratio_words(0.5), ratio_words(1.01)
        ('1.40x faster', '2.00x slower', 'about as fast (1.01x)')
    """
    ratio = _positive("ratio", ratio)
    if isinstance(about_as_fast, bool) or not 0 <= about_as_fast < 1:
        raise ValueError(f"about_as_fast={about_as_fast!r}: use a fraction from 0 up to 1 (0.05 for 5 %).")
    limit = round(1 + about_as_fast, 2)
    up, down = round(ratio, 2), round(1 / ratio, 2)
    if up >= limit:
        return f"{up:.2f}x faster"
    if down >= limit:
        return f"{down:.2f}x slower"
    return f"about as fast ({up:.2f}x)"


def throughput_reading(samples_per_s: Mapping[str, float], replicas: int, per_replica_batch: int, where: str,
                       about_as_fast: float = ABOUT_AS_FAST) -> str:
    """Read the three throughputs: ``'1_same_global'``, ``'N'`` and ``'1'`` (the same per-replica batch).

    The first line compares N replicas with one on the same global batch (faster, slower or about
    as fast by :func:`ratio_words`, rule stated); the second gives the speed-up and the scaling
    efficiency with the per-replica batch fixed.

    Example:
        >>> text = throughput_reading({"1_same_global": 25000, "N": 18500, "1": 13200}, 2, 64, "this CPU")
        >>> text.splitlines()[1][-49:]
        'a speed-up of 1.40x, a scaling efficiency of 70%.'
    """
    missing = {"1_same_global", "N", "1"} - set(samples_per_s)
    if missing:
        raise ValueError(f"samples_per_s lacks {sorted(missing)}: pass '1_same_global', 'N' and '1'.")
    same, n, one = (_positive(f"samples_per_s[{k!r}]", samples_per_s[k]) for k in ("1_same_global", "N", "1"))
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise ValueError(f"replicas={replicas!r}: use an integer >= 1.")
    if isinstance(per_replica_batch, bool) or not isinstance(per_replica_batch, int) or per_replica_batch < 1:
        raise ValueError(f"per_replica_batch={per_replica_batch!r}: use an integer >= 1.")
    g = per_replica_batch * replicas
    speedup = n / one
    them = f"{replicas} replica{'s' if replicas != 1 else ''}"
    return (f"Global batch fixed at {g}: {them} trained at {_rate(n)} samples/s, 1 replica at "
            f"{_rate(same)}: {ratio_words(n / same, about_as_fast)} (rates within {about_as_fast:.0%} of each other "
            f"count as about as fast), measured on {where}.\n"
            f"Per-replica batch fixed at {per_replica_batch}: {them} at {_rate(n)} samples/s (global "
            f"batch {g}), 1 replica at {_rate(one)} (batch {per_replica_batch}): a speed-up of {speedup:.2f}x, a "
            f"scaling efficiency of {round(100 * speedup / replicas)}%.")


def scaling_reading(speedup: float, batch_gain: float, replicas: int, kind: str, gpu_count: int, cores: int,
                    all_reduce_ms: float | None = None, step_ms: float | None = None,
                    filled_idle: float = FILLED_IDLE, near_ideal: float = NEAR_IDEAL) -> str:
    """Explain this run's speed-up and scaling efficiency from how its replicas share hardware, beside NVIDIA's.

    On a split device (logical CPUs or logical GPUs) the N replicas do N times the work of one replica
    on the same hardware, so the most they can reach is one device running the whole global batch:
    `batch_gain` times the one-replica rate. The rule, stated in the sentence: a `batch_gain` above
    `filled_idle` means the per-replica batch left part of the hardware idle, and the best to expect is
    that gain; otherwise it is about 1x. On one GPU per replica an efficiency below `near_ideal` is
    short of the ideal. Decided on the figures as printed (2 decimals, efficiency to whole percent).

    Args:
        speedup: samples/s of N replicas / samples/s of 1, per-replica batch fixed.
        batch_gain: samples/s of 1 replica on the global batch / samples/s of 1 on the per-replica batch.
        replicas: N.
        kind: ``"CPU"`` or ``"GPU"``, the kind of device the replicas run on.
        gpu_count: physical GPUs.
        cores: CPU cores.
        all_reduce_ms, step_ms: one all-reduce of the gradients and one N-replica step, when measured.
        filled_idle, near_ideal: the thresholds above (:data:`FILLED_IDLE`, :data:`NEAR_IDEAL`).

    Example:
        >>> scaling_reading(1.0, 1.1, 2, "CPU", 0, 2).startswith("The 2 replicas here are logical CPUs")
        True
    """
    speedup = _positive("speedup", speedup)
    batch_gain = _positive("batch_gain", batch_gain)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise ValueError(f"replicas={replicas!r}: use an integer >= 1.")
    if kind not in ("CPU", "GPU"):
        raise ValueError(f"kind={kind!r}: use 'CPU' or 'GPU'.")
    if replicas == 1:
        return "With N_REPLICAS = 1 there is nothing to scale: set it to 2 or more and run the notebook again."
    shown, percent = round(speedup, 2), round(100 * speedup / replicas)  # as printed
    measured = f"Measured here: a speed-up of {shown:.2f}x, a scaling efficiency of {percent}%."
    overhead = ("every step also splits the batch, launches each replica's work, and all-reduces the gradients "
                "before the update")
    if all_reduce_ms is not None and step_ms is not None and math.isfinite(all_reduce_ms) \
            and math.isfinite(step_ms) and all_reduce_ms >= 0 and step_ms > 0:
        overhead += (f" (one all-reduce of the gradients took {all_reduce_ms:.3f} ms, {all_reduce_ms / step_ms:.0%} "
                     f"of one {step_ms:.2f} ms step)")
    split = kind == "CPU" or replicas > gpu_count
    if kind == "CPU":
        text = (f"The {replicas} replicas here are logical CPUs: they share the same {cores} "
                f"core{'s' if cores != 1 else ''} and TensorFlow's thread pools, so they add no arithmetic units. ")
    elif split:
        text = (f"The {replicas} replicas here are logical GPUs split from {gpu_count} physical GPU(s): they share "
                "each card's arithmetic units and memory bandwidth. ")
    else:
        text = (f"Each of the {replicas} replicas here has its own GPU, so the ideal is {replicas}x the throughput of "
                "one. ")
    if split:
        gain = round(batch_gain, 2)
        text += (f"{replicas} replicas with the same per-replica batch do {replicas} times the work of one on the same "
                 f"hardware: at best as fast as one device running the whole global batch, measured at {gain:.2f}x "
                 "the rate of one device on the per-replica batch. ")
        if gain > filled_idle:
            best = gain
            text += (f"That is above {filled_idle:.2f}x, the rule here for a per-replica batch that leaves part of "
                     f"the hardware idle: the best to expect is a speed-up of about {best:.2f}x (an efficiency of "
                     f"about {best / replicas:.0%}): the replicas can fill the idle part, the work per step grows, "
                     "not the hardware. ")
        else:
            best = 1.0
            text += (f"That is not above {filled_idle:.2f}x, the rule here for a per-replica batch that leaves part "
                     f"of the hardware idle: the best to expect is a speed-up of about 1x (an efficiency of about "
                     f"{1 / replicas:.0%}). ")
        text += measured + " "
        if shown < best:
            text += (f"The gap to {best:.2f}x is overhead, not a limit of the hardware: {overhead}. "
                     "Extra replicas on a split device add overhead, never compute. ")
        else:
            text += (f"That is at or above {best:.2f}x: no cost of the replicas shows at this size, though {overhead}. "
                     "Extra replicas on a split device add no compute. ")
    else:
        text += measured + " "
        if percent < round(100 * near_ideal):
            text += (f"Below {near_ideal:.0%}, so short of the ideal, because {overhead}: costs that a longer step "
                     "(more work per replica) hides. ")
        elif percent > 100:
            text += ("Above 100 %: more than N times one GPU's rate, which a busy moment during the one-GPU run "
                     "also gives: time it again. ")
        else:
            text += f"At or above {near_ideal:.0%}: near the ideal. "
    nvidia = "; ".join(f"{p.speedup:.2f}x on {p.label} ({p.efficiency:.0%})" for p in PUBLISHED)
    return text + (f"For comparison, measured by NVIDIA with ResNet-50 in TensorFlow, per-GPU batch fixed: {nvidia} "
                   f"({SOURCE}).")


# --------------------------------------------------------------------------- all-reduce measured (notebook 07)
MATCHES_WITHIN = 2.0  # the time beyond the fixed cost within 2x of the bytes term (either way) "matches" it
COMPARABLE = 1.0  # the bytes term is tested only where it is at least 1x the fixed cost


def _count(name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name}={value!r}: use an integer >= {low}.")
    return value


def ring_bytes(nbytes: float, replicas: int) -> float:
    """Bytes each device sends (and receives) in one ring all-reduce of `nbytes`: 2 (N-1) / N x `nbytes`.

    Reduce-scatter and all-gather take N-1 steps each; in every step a device sends one chunk of
    `nbytes` / N (NVIDIA nccl-tests, doc/PERFORMANCE.md, "bus bandwidth").

    Example:
        >>> ring_bytes(1000, 2), ring_bytes(1000, 4), ring_bytes(1000, 1)
        (1000.0, 1500.0, 0.0)
    """
    nbytes = _positive("nbytes", nbytes)
    replicas = _count("replicas", replicas)
    return 2 * (replicas - 1) / replicas * nbytes


def predicted_seconds(fixed_s: float, nbytes: float, replicas: int, bytes_per_s: float, shared: bool) -> float:
    """The all-reduce time a plain model predicts: a fixed cost per call, plus the bytes moved over a bandwidth.

    Bytes moved: :func:`ring_bytes` for one device. When the replicas share one device (`shared`:
    logical CPUs, or logical GPUs of one card) all N of them move their bytes through the same
    memory, so N times that; with a device each, each link carries its own.

    Example:
        >>> round(predicted_seconds(1e-4, 1e6, 2, 1e10, shared=True), 9)  # 1e-4 s + 2 x 1e6 B / 1e10 B/s
        0.0003
    """
    if isinstance(fixed_s, bool) or not isinstance(fixed_s, (int, float)) or not math.isfinite(fixed_s) or fixed_s < 0:
        raise ValueError(f"fixed_s={fixed_s!r}: use a number of seconds >= 0.")
    bytes_per_s = _positive("bytes_per_s", bytes_per_s)
    moved = ring_bytes(nbytes, replicas) * (replicas if shared else 1)
    return fixed_s + moved / bytes_per_s


def copy_seconds(nbytes: int, devices: Sequence[str], kind: str, repeats: int = 5, tf: Any = None) -> float:
    """Median seconds of a plain copy of `nbytes`: the yardstick bandwidth for the all-reduce.

    * ``kind="CPU"``: logical CPUs share the host's memory, and TensorFlow hands a tensor from one to
      another without copying it, so the yardstick is a NumPy copy of the bytes in memory.
    * ``kind="GPU"``: ``tf.identity`` of a tensor on the first replica's device, run on the last one's:
      a device-to-device copy (over NVLink or PCIe between cards; within the card for logical GPUs),
      timed with a device sync before the clock stops.

    Example:
        >>> copy_seconds(4_000_000, ["/device:CPU:0"], "CPU") > 0
        True
    """
    from helpers import bench

    nbytes = _count("nbytes", nbytes, 4)
    if kind not in ("CPU", "GPU"):
        raise ValueError(f"kind={kind!r}: use 'CPU' or 'GPU'.")
    if not devices:
        raise ValueError("devices=[]: pass the replicas' device names, at least one.")
    repeats = _count("repeats", repeats)
    if kind == "CPU":
        import numpy as np

        src = np.ones(nbytes // 4, dtype=np.float32)
        dst = np.empty_like(src)
        return bench.benchmark(np.copyto, dst, src, warmup=2, repeats=repeats, sync=None).median
    if tf is None:
        import tensorflow as tf
    with tf.device(devices[0]):
        src = tf.ones([nbytes // 4], dtype=tf.float32)

    def copy() -> Any:
        with tf.device(devices[-1]):
            return tf.identity(src)

    return bench.benchmark(copy, warmup=2, repeats=repeats).median


def prediction_reading(label: str, measured_s: float, fixed_s: float, bytes_s: float, shared: bool,
                       matches_within: float = MATCHES_WITHIN, comparable: float = COMPARABLE) -> str:
    """One line: does the bytes term predict the time an all-reduce takes beyond its fixed cost?

    The test of the ring's arithmetic is on the part the bytes explain: measured - fixed cost, against
    `bytes_s` (bytes moved / the copy's bandwidth, :func:`predicted_seconds` without the fixed cost).
    The rules, stated in the line: the bytes are tested only where `bytes_s` is at least `comparable`
    times the fixed cost (below that the fixed cost hides them); there, a ratio (measured - fixed) /
    `bytes_s` between 1 / `matches_within` and `matches_within` matches. Decided on the figures as
    printed (ms to 3 decimals, the ratio to 2).

    Example:
        >>> prediction_reading("13 MB", 0.0021, 0.0005, 0.0016, shared=False)[:96]
        '13 MB: measured 2.100 ms - fixed cost 0.500 ms = 1.600 ms for the bytes; the bytes term predicts'
        >>> prediction_reading("13 MB", 0.0021, 0.0005, 0.0016, shared=False).split("ratio ")[1][:13]
        '1.00: matches'
    """
    measured_s, fixed_s = _positive("measured_s", measured_s), _positive("fixed_s", fixed_s)
    if isinstance(bytes_s, bool) or not isinstance(bytes_s, (int, float)) or not math.isfinite(bytes_s) or bytes_s < 0:
        raise ValueError(f"bytes_s={bytes_s!r}: use a number of seconds >= 0 (0 for one replica: nothing moves).")
    matches_within = _positive("matches_within", matches_within)
    if matches_within < 1:
        raise ValueError(f"matches_within={matches_within!r}: use a factor >= 1 (2 for 'within 2x').")
    comparable = _positive("comparable", comparable)
    m, f, b = (round(v * 1e3, 3) for v in (measured_s, fixed_s, bytes_s))  # as printed, in ms
    extra = round(m - f, 3)
    if b < comparable * f or b == 0:
        return (f"{label}: measured {m:.3f} ms, fixed cost {f:.3f} ms; the bytes term predicts {b:.3f} ms, less than "
                f"{comparable:g}x the fixed cost (the rule: the bytes are tested only where their term is at least "
                f"{comparable:g}x the fixed cost): at this size the fixed cost hides the bytes, so this line does not "
                "test the ring's arithmetic.")
    rule = f"within {matches_within:g}x either way"
    if extra <= 0:
        return (f"{label}: measured {m:.3f} ms, no more than the fixed cost {f:.3f} ms, though the bytes term predicts "
                f"{b:.3f} ms: does not match (the rule: {rule}); the fixed cost was timed in a slower moment, or the "
                "bytes were not moved: time it again.")
    ratio = round(extra / b, 2)
    head = (f"{label}: measured {m:.3f} ms - fixed cost {f:.3f} ms = {extra:.3f} ms for the bytes; the bytes term "
            f"predicts {b:.3f} ms, ratio {ratio:.2f}")
    if ratio > matches_within:
        why = ("the replicas share one device's memory and arithmetic units, so the bandwidth the all-reduce gets is "
               "not a plain copy's: it also adds every chunk it receives and writes the sum, on the units the other "
               "replicas use, so a copy's bandwidth is not its yardstick here" if shared else
               "the all-reduce gets less than a plain copy's bandwidth: it also adds every chunk it receives, writes "
               "the sum, and its steps wait for each other")
        return f"{head}: slower than the bytes term, outside the rule ({rule}): {why}."
    if ratio * matches_within < 1:
        return (f"{head}: faster than the bytes term, outside the rule ({rule}): fewer bytes moved than the ring "
                "counts (replicas that share one memory can hand a tensor over without copying it), or the copy was "
                "timed in a slower moment.")
    return (f"{head}: matches (the rule: {rule}), so the ring's bytes at the copy's bandwidth account for the time "
            "beyond the fixed cost.")


def choices_lines(timings: Mapping[str, float | str], about_as_fast: float = ABOUT_AS_FAST) -> list[str]:
    """A line per ``cross_device_ops`` choice (its time, or why it did not run), then the one that reads them.

    `timings` maps a choice's name to seconds, or to a string: the error it raised or why it was not
    run. The last line names the fastest and every choice within `about_as_fast` of it (decided on
    the times as printed, ms to 3 decimals). It ranks this machine's figures only: what to use
    elsewhere is the page's to say.

    Example:
        >>> choices_lines({"A": 0.001, "B": 0.002, "C": "not run: no GPU"})[-1]
        'Fastest here: A (1.000 ms); the others that ran are slower by more than 5% (the rule here).'
    """
    if not timings:
        raise ValueError("timings={}: pass {choice: seconds or the reason it did not run}.")
    about_as_fast = float(about_as_fast)
    if not 0 <= about_as_fast < 1:
        raise ValueError(f"about_as_fast={about_as_fast!r}: use a fraction from 0 up to 1 (0.05 for 5 %).")
    width = max(len(name) for name in timings)
    lines, ran = [], {}
    for name, value in timings.items():
        if isinstance(value, str):
            lines.append(f"{name:<{width}}  {value}")
        else:
            ms = round(_positive(f'timings[{name!r}]', value) * 1e3, 3)  # as printed
            ran[name] = ms
            lines.append(f"{name:<{width}}  {ms:.3f} ms")
    if not ran:
        return [*lines, "None of the choices ran here."]
    best = min(ran, key=ran.get)
    near = [name for name, ms in ran.items() if name != best and ms <= ran[best] * (1 + about_as_fast)]
    text = f"Fastest here: {best} ({ran[best]:.3f} ms); "
    if near:
        text += f"within {about_as_fast:.0%} of it, so about as fast (the rule here): {', '.join(near)}."
    elif len(ran) > 1:
        text += f"the others that ran are slower by more than {about_as_fast:.0%} (the rule here)."
    else:
        text += "the only one that ran."
    return [*lines, text]


def regularization_reading(single: float, scaled: float, unscaled: float, replicas: int, tolerance: float) -> str:
    """Compare the distributed loss with ``scale_regularization_loss``, and without it, to one device's loss.

    Each figure is the total loss (data + regularisation) summed over the replicas; the rule: a
    difference of at most `tolerance` (relative) is a match.

    Example:
        >>> regularization_reading(1.0, 1.0, 1.2, 2, 1e-5).startswith("One device: 1.000000")
        True
    """
    single, scaled, unscaled = (_positive(k, v) for k, v in (("single", single), ("scaled", scaled),
                                                             ("unscaled", unscaled)))
    replicas = _count("replicas", replicas)
    tolerance = _positive("tolerance", tolerance)

    def verdict(value: float) -> str:
        gap = abs(value - single) / single
        return f"{'matches' if gap <= tolerance else 'differs'} (relative gap {gap:.1e})"

    return (f"One device: {single:.6f}. {replicas} replica(s) with tf.nn.scale_regularization_loss: {scaled:.6f}, "
            f"{verdict(scaled)}. Without it: {unscaled:.6f}, {verdict(unscaled)}. The rule: a relative gap of at most "
            f"{tolerance:.0e} is a match.")
