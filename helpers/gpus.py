"""Topic module of notebook 09 · Choosing a GPU: the spec table, the memory estimator, time, energy and cost.

The lesson stays on the notebook's page: the child script that measures one training step's peak
memory (``reset_memory_stats``, ``get_memory_info``), the jobs you compare, the benchmark of your
CPU. This module holds the arithmetic and the tables:

* :func:`lookup` finds a GPU of ``data/gpu_specs.csv`` by the name TensorFlow or NVML reports
  (``"NVIDIA A100-SXM4-80GB"``, ``"Tesla T4"``), or says plainly that it is not in the table;
  :func:`detected` does it for every GPU of this machine (section "Which GPU is this?");
* :func:`features` says what a compute capability gates, :func:`suggested_policy` which dtype policy
  follows (section "What compute capability gates");
* :func:`training_memory` and :func:`parameter_memory` estimate the memory of a training step:
  weights, gradients, optimizer state, activations, per dtype policy ("Training memory");
* :func:`fits` and :func:`fits_table` compare jobs with each GPU's memory ("Which GPUs fit");
* :func:`run_cost` turns a rate into hours, energy and cost per GPU ("Time, energy and cost").

Units: GPU datasheets print memory in GB ("16 GB GDDR6", NVIDIA's T4 datasheet). The chips hold binary
amounts: an A100 40 GB reports a total of 40,960 MiB through nvidia-smi, exactly 40 x 2**30 bytes, which
the IEC calls 40 GiB (IEC 80000-13, binary prefixes). What the driver leaves a program is less on most
cards (:data:`NVML_TOTAL_MIB`). The course therefore reads a datasheet's GB as 2**30 bytes and plans with
a share :data:`USABLE` of it. Bandwidth (GB/s) and FLOP/s are decimal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from helpers import params
from helpers.tables import text_table

MIB = 2**20  # bytes in one MiB, the unit of the memory estimate's table (nvidia-smi prints MiB too)
GIB = 2**30  # bytes in one GB of a GPU datasheet: the memory chips hold binary amounts (1 GiB, IEC 80000-13)
# The course's rule of thumb: plan with 90 % of the datasheet's memory. It sits below the smallest share of
# NVML_TOTAL_MIB (93.7 %, T4, A10, L4, L40S), and the CUDA context, workspaces and fragmentation take part of
# what the driver reports (notebook 09, "Which GPUs fit which jobs").
USABLE = 0.9

NVML_SOURCE = ("nvidia-smi totals listed in modal-labs/modal-client pull request #2797 (2025), "
               "https://github.com/modal-labs/modal-client/pull/2797")
# Total memory the driver reports (nvidia-smi, MiB) for GPUs of the table, published (NVML_SOURCE).
NVML_TOTAL_MIB = {"Tesla T4": 15360, "A10": 23028, "L4": 23034, "L40S": 46068, "A100 SXM4 40 GB": 40960,
                  "A100 SXM4 80 GB": 81920, "H100 SXM5 80 GB": 81559}

# Extra values the optimizer keeps per trainable weight (each float32, like the weights).
OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
# Bytes per value of the compute dtype of each Keras dtype policy; variables stay float32 (4 bytes).
COMPUTE_BYTES = {"float32": 4, "mixed_float16": 2, "mixed_bfloat16": 2}
_DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int8": 1,
                "uint8": 1, "bool": 1}

# What compute capability gates on NVIDIA GPUs (CUDA C++ Programming Guide, "Compute Capabilities";
# TensorFlow's mixed precision guide for what Keras uses).
GATES = (
    (7.0, "float16 Tensor Cores", "mixed_float16 pays off (notebook 06)"),
    (8.0, "bfloat16 and TF32 Tensor Cores", "mixed_bfloat16 pays off; float32 matmuls use TF32"),
    (8.9, "FP8 Tensor Cores", "8-bit floats, for frameworks that use them"),
)

DLE_SOURCE = ("NVIDIA DeepLearningExamples, TensorFlow/Classification/ConvNets/resnet50v1.5/README.md, "
              "'Results' (TensorFlow 20.06-tf1 NGC container)")
# ResNet-50 v1.5 training on one GPU, mixed precision + XLA, batch 256: images/s measured by NVIDIA (DLE_SOURCE,
# "Training performance"). The V100 row of data/gpu_specs.csv is the 32 GB SXM2 card; NVIDIA measured this rate
# on the 16 GB SXM2 card of a DGX-1, which the V100 datasheet lists with the same clocks, bandwidth and peaks.
MEASURED_TRAINING = {
    "Tesla V100 SXM2": (1270.0, "measured by NVIDIA on a V100 SXM2 16 GB (DGX-1), not this row's 32 GB card: same "
                                "datasheet peaks and bandwidth; mixed precision + XLA, batch 256"),
    "A100 SXM4 40 GB": (2375.0, "measured by NVIDIA on an A100 SXM4 40 GB (DGX A100), mixed precision + XLA, "
                                "batch 256"),
}
# The same table's one-GPU rows: the baseline precision beside mixed precision, and the speed-up NVIDIA's table
# prints ("Throughput speedup"), rounded by NVIDIA; speedup_note sets the published and the computed figure apart.
MEASURED_SPEEDUP = [
    {"gpu": "V100 SXM2 16 GB (DGX-1)", "baseline": "FP32", "baseline_images_per_s": 412.0, "baseline_batch": 128,
     "mixed_images_per_s": 1270.0, "mixed_batch": 256, "published_speedup": 3.08},
    {"gpu": "A100 SXM4 40 GB (DGX A100)", "baseline": "TF32", "baseline_images_per_s": 909.0, "baseline_batch": 256,
     "mixed_images_per_s": 2375.0, "mixed_batch": 256, "published_speedup": 2.60},
]
SCALE_FROM = "A100 SXM4 40 GB"  # rows without a measurement are scaled from this one's rate by datasheet peak
# What a GPU without Tensor Cores gets instead of a rate scaled by Tensor Core peak (the P100: its FP16 peak is plain)
NOT_COMPARABLE = "not comparable (no Tensor Cores)"
# ResNet-50 v1.5 inference at batch 64: images/s measured by NVIDIA (float32 is TF32 on the A100).
MEASURED_INFERENCE = [
    {"gpu": "T4 16 GB", "precision": "float32", "images_per_s": 424.0},
    {"gpu": "T4 16 GB", "precision": "mixed", "images_per_s": 991.0},
    {"gpu": "V100 16 GB", "precision": "float32", "images_per_s": 1252.0},
    {"gpu": "V100 16 GB", "precision": "mixed", "images_per_s": 2706.0},
    {"gpu": "A100 40 GB", "precision": "TF32", "images_per_s": 1794.0},
    {"gpu": "A100 40 GB", "precision": "mixed", "images_per_s": 3570.0},
]


# --------------------------------------------------------------------------- the table and lookup
def specs(data_dir: Any = None) -> list[dict[str, Any]]:
    """The GPU specification table (``data/gpu_specs.csv``, checksummed), one dict per GPU.

    Example:
        >>> any(g["name"] == "Tesla T4" for g in specs())
        True
    """
    from helpers.data import load_gpu_specs

    return load_gpu_specs(data_dir)


_VENDOR = {"nvidia", "tesla", "geforce", "gpu"}
_FORMS = {"pcie": "PCIe", "sxm": "SXM", "sxm2": "SXM", "sxm3": "SXM", "sxm4": "SXM", "sxm5": "SXM", "nvl": "NVL"}
_MEMORY_TYPE = re.compile(r"^(hbm\d?e?|gddr\d+x?)$")


@dataclass(frozen=True)
class ParsedName:
    """A GPU name split into the model (``a100``), form factor, memory in GB and any other words."""

    model: str | None
    form: str | None
    memory_gb: int | None
    other: tuple[str, ...]


def parse_name(name: str) -> ParsedName:
    """Split a GPU name as TensorFlow, NVML or a datasheet writes it.

    Example:
        >>> parse_name("NVIDIA A100-SXM4-80GB")
        ParsedName(model='a100', form='SXM', memory_gb=80, other=())
        >>> parse_name("NVIDIA GeForce RTX 4090 Laptop GPU").other
        ('laptop',)
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name={name!r}: pass a GPU name such as 'Tesla T4' or 'NVIDIA A100-SXM4-80GB'.")
    text = re.sub(r"(\d+)\s*gb\b", r"\1gb", name.lower())
    text = re.sub(r"\brtx\s+pro\b", "rtxpro", text)  # "RTX PRO 6000" is another card than "RTX 6000"
    tokens = [t for t in re.split(r"[\s\-_/,()]+", text) if t and t not in _VENDOR]
    model = form = memory = None
    other: list[str] = []
    for i, token in enumerate(tokens):
        if model is None and re.search(r"\d", token) and not token.endswith("gb"):
            prefix = tokens[i - 1] if i and tokens[i - 1] in ("rtx", "gtx", "rtxpro") and token.isdigit() else ""
            model = prefix + token
        elif token in _FORMS:
            form = _FORMS[token]
        elif re.fullmatch(r"\d+gb", token):
            memory = int(token[:-2])
        elif _MEMORY_TYPE.match(token) or token in ("rtx", "gtx", "rtxpro") or (token == "gb" and memory):
            continue
        else:
            other.append(token)
    return ParsedName(model, form, memory, tuple(other))


@dataclass
class Lookup:
    """The answer of :func:`lookup`: the row (None when the GPU is not in the table) and why."""

    query: str
    row: dict[str, Any] | None
    note: str

    @property
    def found(self) -> bool:
        return self.row is not None


def lookup(name: str, table: Sequence[Mapping[str, Any]] | None = None) -> Lookup:
    """Find the row of the GPU named `name` (as TensorFlow or NVML reports it), or say why there is none.

    The model must match, and so must the form factor (SXM, PCIe, NVL) and any variant word (Ti,
    Laptop, ...) when the name gives them: those cards have other clocks and power. Among rows of one
    model the one with the same memory size is taken; a different memory size is said in the note.

    Example:
        >>> lookup("NVIDIA A100-SXM4-80GB").row["name"]
        'A100 SXM4 80 GB'
        >>> lookup("NVIDIA H100 PCIe").found
        False
    """
    table = specs() if table is None else table
    want = parse_name(name)
    same_model = [r for r in table if want.model and parse_name(r["name"]).model == want.model]
    if not same_model:
        return Lookup(name, None, f"not in the table: data/gpu_specs.csv has no {name!r} (model "
                                  f"{want.model or 'not recognised'}). Look up its figures in its datasheet.")
    # a variant word (Ti, Laptop, Workstation, ...) must be in the row's own name ("Server Edition")
    same_variant = [r for r in same_model if set(want.other) <= set(parse_name(r["name"]).other)]
    if not same_variant:
        extra = [w for w in want.other if not all(w in parse_name(r["name"]).other for r in same_model)]
        return Lookup(name, None, f"not in the table: '{' '.join(extra)}' names a variant the table does not "
                                  f"list (it has {', '.join(r['name'] for r in same_model)}).")
    same_form = [r for r in same_variant if not want.form or not parse_name(r["name"]).form
                 or parse_name(r["name"]).form == want.form]
    if not same_form:
        return Lookup(name, None, f"not in the table: the table has {', '.join(r['name'] for r in same_model)}, "
                                  f"another form factor than {want.form}, with other power and clocks.")

    def memory(row: Mapping[str, Any]) -> float:
        return parse_name(row["name"]).memory_gb or row["memory_gb"]

    same_memory = [r for r in same_form if want.memory_gb is None or memory(r) == want.memory_gb]
    row = dict((same_memory or same_form)[0])
    if same_memory:
        return Lookup(name, row, f"in the table as {row['name']!r}")
    return Lookup(name, row, f"in the table as {row['name']!r}, which lists {memory(row):g} GB; this card has "
                             f"{want.memory_gb} GB (the other figures are the model's).")


def detected(tf: Any | None = None, nvml: Any | None = None,
             table: Sequence[Mapping[str, Any]] | None = None) -> list[Lookup]:
    """Look up every GPU TensorFlow sees here; [] without a GPU.

    Example:
        >>> from helpers import env
        >>> len(detected()) == len(env.tensorflow().config.list_physical_devices("GPU"))
        True
    """
    from helpers import env

    return [lookup(g.name, table) for g in env.gpus(tf, nvml)]


def short_name(row: Mapping[str, Any]) -> str:
    """A column label for a GPU: its model, plus the memory where a model has several rows.

    Example:
        >>> short_name({"name": "A100 SXM4 40 GB", "memory_gb": 40.0})
        'A100-40'
        >>> short_name({"name": "Tesla T4", "memory_gb": 16.0})
        'T4'
    """
    parsed = parse_name(row["name"])
    model = (parsed.model or row["name"]).upper().replace("RTX", "")
    return f"{model}-{parsed.memory_gb}" if parsed.memory_gb and model in ("A100",) else model


MEMORY_LABEL = "memory, GiB (datasheet 'GB')"  # a datasheet's "16 GB" card holds 16 x 2**30 bytes


def spec_table(table: Sequence[Mapping[str, Any]]) -> str:
    """The spec table as text: capability, memory, bandwidth, peaks, power, source.

    Example:
        >>> print(spec_table(specs()).splitlines()[0])  # doctest: +NORMALIZE_WHITESPACE
        GPU  arch  CC  memory, GiB (datasheet 'GB')  GB/s  FP32  FP16 TC  TF32 TC  BF16  TDP W  source

    The memory column counts binary GB (2**30 bytes, GiB), the figure the datasheets print as "GB";
    bandwidth (GB/s) and FLOP/s are decimal rates.
    """
    def num(value: Any) -> str:
        return "-" if value in (None, "") else f"{value:g}"

    rows = [("GPU", "arch", "CC", MEMORY_LABEL, "GB/s", "FP32", "FP16 TC", "TF32 TC", "BF16", "TDP W", "source")]
    for g in table:
        rows.append((g["name"], g["architecture"], f"{g['compute_capability']:.1f}",
                     f"{g['memory_gb']:g} {g['memory_type']}", num(g["bandwidth_gb_s"]), num(g["fp32_tflops"]),
                     num(g["fp16_tensor_tflops_dense"]), num(g["tf32_tensor_tflops_dense"]),
                     "yes" if g["bf16_tensor"] else "no", num(g["tdp_w"]), g["source"]))
    return text_table(rows)


def plot_specs(table: Sequence[Mapping[str, Any]], ax: Any = None) -> Any:
    """Memory against dense FP16 Tensor Core peak, one labelled point per GPU, coloured by architecture.

    A GPU without Tensor Cores (the P100) has no Tensor Core peak: it is drawn with a cross at its plain
    FP16 peak, labelled as such in the legend, so it is not read as one.

    Example:
        >>> ax = plot_specs(specs())
        >>> len(ax.collections) >= 1
        True
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.2))
    archs = list(dict.fromkeys(g["architecture"] for g in table if has_tensor_cores(g)))
    groups = [(f"C{i}", "o", arch, [g for g in table if g["architecture"] == arch and has_tensor_cores(g)])
              for i, arch in enumerate(archs)]
    groups.append(("0.3", "x", NO_TENSOR_CORES_LABEL, [g for g in table if not has_tensor_cores(g)]))
    for color, marker, label, rows in groups:
        if not rows:
            continue
        ax.scatter([g["fp16_tensor_tflops_dense"] for g in rows], [g["memory_gb"] for g in rows], marker=marker,
                   s=[20 + g["tdp_w"] / 3 for g in rows], color=color, alpha=0.7, label=label)
        for g in rows:
            ax.annotate(short_name(g), (g["fp16_tensor_tflops_dense"], g["memory_gb"]), fontsize=8,
                        xytext=(4, 3), textcoords="offset points")
    ax.set(xscale="log", yscale="log", xlabel="dense FP16 Tensor Core peak, TFLOP/s (datasheet; x: no Tensor Cores)",
           ylabel=MEMORY_LABEL, title="The GPU table: memory against half-precision peak (dot size: TDP)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return ax


NO_TENSOR_CORES_LABEL = "no Tensor Cores: plain FP16 peak, not comparable"


# --------------------------------------------------------------------------- compute capability
def features(compute_capability: float | tuple[int, int]) -> dict[str, bool]:
    """Which Tensor Core formats a GPU of this compute capability has.

    Example:
        >>> features(7.5)
        {'float16 Tensor Cores': True, 'bfloat16 and TF32 Tensor Cores': False, 'FP8 Tensor Cores': False}
        >>> features((8, 9))["FP8 Tensor Cores"]
        True
    """
    if isinstance(compute_capability, tuple):
        major, minor = compute_capability
        compute_capability = major + minor / 10
    if not isinstance(compute_capability, (int, float)) or compute_capability <= 0:
        raise ValueError(f"compute_capability={compute_capability!r}: use a number such as 7.5, or (7, 5).")
    return {name: compute_capability >= gate - 1e-9 for gate, name, _ in GATES}


def suggested_policy(compute_capability: float | tuple[int, int]) -> str:
    """The Keras dtype policy to train with on a GPU of this compute capability (notebook 06's rule).

    bfloat16 Tensor Cores from 8.0 (no loss scaling needed), float16 ones from 7.0. Below 7.0 (a P100,
    6.0, an older card) there are no Tensor Cores: float32, and mixed_float16 only to
    halve the activations' memory (TensorFlow's mixed precision guide expects a speed-up from 7.0 on).

    Example:
        >>> suggested_policy((8, 6)), suggested_policy(7.5)
        ('mixed_bfloat16', 'mixed_float16 with loss scaling')
        >>> suggested_policy((6, 0))[:36]
        'float32 (no Tensor Cores before 7.0)'
    """
    on = features(compute_capability)
    if on["bfloat16 and TF32 Tensor Cores"]:
        return "mixed_bfloat16"
    if on["float16 Tensor Cores"]:
        return "mixed_float16 with loss scaling"
    return ("float32 (no Tensor Cores before 7.0), or mixed_float16 with loss scaling where memory is short: it "
            "halves the activations, not the time")


def features_table(table: Sequence[Mapping[str, Any]]) -> str:
    """One row per GPU: its compute capability and a mark for each feature it gates.

    Example:
        >>> print(features_table([{"name": "Tesla T4", "compute_capability": 7.5}]))
        GPU       CC   float16 TC (7.0)  bfloat16/TF32 TC (8.0)  FP8 TC (8.9)
        Tesla T4  7.5  yes               -                       -
    """
    rows = [("GPU", "CC", "float16 TC (7.0)", "bfloat16/TF32 TC (8.0)", "FP8 TC (8.9)")]
    for g in table:
        marks = ["yes" if on else "-" for on in features(g["compute_capability"]).values()]
        rows.append((g["name"], f"{g['compute_capability']:.1f}", *marks))
    return text_table(rows)


# --------------------------------------------------------------------------- memory estimate
@dataclass
class MemoryEstimate:
    """Bytes of one training (or inference) step, by part; ``total`` is their sum."""

    weights: int
    weight_copies: int
    gradients: int
    optimizer_state: int
    activations: int
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.weights + self.weight_copies + self.gradients + self.optimizer_state + self.activations

    def parts(self) -> dict[str, int]:
        """The parts and the total as a dict (what a child process prints as JSON)."""
        return {"weights": self.weights, "weight_copies": self.weight_copies, "gradients": self.gradients,
                "optimizer_state": self.optimizer_state, "activations": self.activations, "total": self.total}

    def table(self, measured: int | None = None) -> str:
        """The parts in MiB (2**20 bytes, the binary unit of GPU memory, as the GiB of the fits table) and as a
        share of the total; the measurement and the error when given.

        Example:
            >>> print(MemoryEstimate(2**20, 0, 2**20, 2 * 2**20, 0).table())
            part                                MiB  share
            weights (float32 variables)         1.0  25%
            weight copies in the compute dtype  0.0  0%
            gradients (float32)                 1.0  25%
            optimizer state (float32 slots)     2.0  50%
            activations of the batch            0.0  0%
            estimate, total                     4.0  100%
        """
        labels = {"weights": "weights (float32 variables)", "weight_copies": "weight copies in the compute dtype",
                  "gradients": "gradients (float32)", "optimizer_state": "optimizer state (float32 slots)",
                  "activations": "activations of the batch"}
        rows = [("part", "MiB", "share")]
        for key, label in labels.items():
            value = getattr(self, key)
            rows.append((label, f"{value / MIB:,.1f}", f"{value / self.total:.0%}" if self.total else "-"))
        rows.append(("estimate, total", f"{self.total / MIB:,.1f}", "100%"))
        if measured:
            rows.append(("measured peak", f"{measured / MIB:,.1f}", f"error {(self.total - measured) / measured:+.1%}"))
        return text_table(rows)


def _check_policy_optimizer(optimizer: str, policy: str) -> None:
    if optimizer not in OPTIMIZER_SLOTS:
        raise ValueError(f"optimizer={optimizer!r}: use one of {', '.join(map(repr, OPTIMIZER_SLOTS))}.")
    if policy not in COMPUTE_BYTES:
        raise ValueError(f"policy={policy!r}: use one of {', '.join(map(repr, COMPUTE_BYTES))}.")


def _size(shape: Iterable[Any]) -> int:
    return math.prod(int(d) for d in shape)


def _outputs(layer: Any) -> list[Any]:
    """The output tensors of `layer`, and of every layer inside it when it is a model itself."""
    inner = getattr(layer, "layers", None)
    if inner:
        return [t for sub in inner for t in _outputs(sub)]
    try:
        out = layer.output
    except (AttributeError, ValueError) as exc:
        raise ValueError(f"layer {layer.name!r} has no single output shape ({exc}); build the model on a "
                         "keras.Input first, and do not call a layer on two inputs.") from exc
    return list(out) if isinstance(out, (list, tuple)) else list(out.values()) if isinstance(out, dict) else [out]


def activation_values(model: Any) -> int:
    """Values the layers of `model` output for one sample (the sum over layers of each output's size).

    Example:
        >>> import keras
        >>> m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(2)])
        >>> activation_values(m)  # 8 + 2 (a Sequential model has no InputLayer in .layers)
        10
    """
    return sum(_size(t.shape[1:]) for layer in model.layers for t in _outputs(layer))


def training_memory(model: Any, batch_size: int, optimizer: str = "adam", policy: str = "float32") -> MemoryEstimate:
    """Estimate the memory of one training step of a Keras `model` at `batch_size`.

    * weights: every variable, float32 (Keras keeps variables in float32 under mixed precision);
    * weight copies: under a mixed policy each layer casts its weights to the compute dtype;
    * gradients: one float32 value per trainable weight;
    * optimizer state: ``OPTIMIZER_SLOTS[optimizer]`` float32 values per trainable weight;
    * activations: every layer's output for `batch_size` samples, in the policy's compute dtype.

    Left out: the input pipeline, temporaries of the backward pass, library workspaces (cuDNN),
    the allocator's rounding and fragmentation, the CUDA context.

    Example:
        >>> import keras
        >>> m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(2)])
        >>> e = training_memory(m, batch_size=10, optimizer="adam")
        >>> e.weights, e.gradients, e.optimizer_state, e.activations  # 58 weights, 10 x 10 outputs
        (232, 232, 464, 400)
    """
    _check_policy_optimizer(optimizer, policy)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r}: use an integer >= 1.")
    weights = sum(_size(v.shape) * _DTYPE_BYTES.get(str(getattr(v.dtype, "name", v.dtype)), 4) for v in model.weights)
    trainable = sum(_size(v.shape) for v in model.trainable_weights)
    compute = COMPUTE_BYTES[policy]
    return MemoryEstimate(
        weights=weights,
        weight_copies=trainable * compute if policy != "float32" else 0,
        gradients=trainable * 4,
        optimizer_state=OPTIMIZER_SLOTS[optimizer] * trainable * 4,
        activations=batch_size * activation_values(model) * compute,
    )


def parameter_memory(n_params: float, optimizer: str = "adam", policy: str = "mixed_bfloat16",
                     training: bool = True) -> MemoryEstimate:
    """Weights, gradients and optimizer state of a model of `n_params` weights; activations left out.

    For inference (``training=False``) the weights are stored in the compute dtype, as inference
    servers do, and nothing else is counted (no activations, no attention cache).

    Example:
        >>> parameter_memory(1e9, "adam", "mixed_bfloat16").total / 1e9  # 4 + 2 + 4 + 8 bytes per weight
        18.0
        >>> parameter_memory(7e9, policy="mixed_bfloat16", training=False).total / 1e9
        14.0
    """
    _check_policy_optimizer(optimizer, policy)
    if not isinstance(n_params, (int, float)) or isinstance(n_params, bool) or not n_params > 0:
        raise ValueError(f"n_params={n_params!r}: use a positive number of weights, such as 7e9.")
    n, compute = int(n_params), COMPUTE_BYTES[policy]
    note = "activations not counted: they grow with batch and sequence length"
    if not training:
        return MemoryEstimate(n * compute, 0, 0, 0, 0, notes=[note + "; nor is the attention (KV) cache"])
    return MemoryEstimate(n * 4, n * compute if policy != "float32" else 0, n * 4,
                          OPTIMIZER_SLOTS[optimizer] * n * 4, 0, notes=[note])


# --------------------------------------------------------------------------- which GPUs fit
def fits(job_bytes: float, memory_gb: float, usable: float = USABLE) -> bool:
    """True when a job of `job_bytes` fits in `usable` of a GPU with `memory_gb` GB (binary: 2**30 bytes).

    Example:
        >>> fits(15e9, 16)  # 16 GB = 17.2e9 bytes, 90 % of it 15.5e9
        True
        >>> fits(16e9, 16)
        False
    """
    if not 0 < usable <= 1:
        raise ValueError(f"usable={usable!r}: use a share of the memory between 0 and 1, such as 0.9.")
    return job_bytes <= usable * memory_gb * GIB


def fits_table(jobs: Mapping[str, float], table: Sequence[Mapping[str, Any]], usable: float = USABLE) -> str:
    """One row per job: the GiB (2**30 bytes) it needs, then a mark per GPU: "yes" when it fits, "-" when not.

    A mark is :func:`fits` with the same `usable` share, so the table and the rule cannot disagree.

    Example:
        >>> print(fits_table({"small job": 10e9}, [{"name": "Tesla T4", "memory_gb": 16.0}]))
        job        needs (GiB)  T4
        small job  9.3          yes
    """
    if not jobs:
        raise ValueError("jobs is empty: pass {job name: bytes it needs}.")
    rows = [("job", "needs (GiB)", *[short_name(g) for g in table])]
    for job, need in jobs.items():
        rows.append((job, f"{need / GIB:,.1f}", *["yes" if fits(need, g["memory_gb"], usable) else "-"
                                                 for g in table]))
    return text_table(rows)


def driver_totals_table(rows: Iterable[tuple[str, float, float]]) -> str:
    """``(GPU, datasheet GB, total MiB the driver reports)`` per row, as one table in MiB only.

    A datasheet's GB is read as 2**30 bytes (module docstring), so it is printed as GB x 1,024 MiB beside
    the driver's total and the share the driver leaves of it.

    Example:
        >>> print(driver_totals_table([("Tesla T4", 16.0, 15360)]))
        GPU       datasheet (MiB)  driver total (MiB)  share
        Tesla T4  16,384           15,360              93.8%
    """
    out = [("GPU", "datasheet (MiB)", "driver total (MiB)", "share")]
    for name, gb, mib in rows:
        if not (gb > 0 and mib > 0):
            raise ValueError(f"row {name!r}: datasheet GB {gb!r} and total MiB {mib!r} must be positive.")
        out.append((name, f"{gb * 1024:,.0f}", f"{mib:,.0f}", f"{mib / (gb * 1024):.1%}"))
    if len(out) == 1:
        raise ValueError("rows is empty: pass (GPU name, datasheet GB, total MiB) for each GPU.")
    return text_table(out)


# --------------------------------------------------------------------------- time, energy, cost
def check_prices(prices: Mapping[str, float], table: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``PRICE_PER_HOUR`` checked: every name must be a GPU of the table; returns a plain dict.

    Example:
        >>> check_prices({"Tesla T4": 0.5}, [{"name": "Tesla T4"}])
        {'Tesla T4': 0.5}
        >>> check_prices({"T4": 0.5}, [{"name": "Tesla T4"}])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: PRICE_PER_HOUR has 'T4', which is not a GPU of data/gpu_specs.csv (did you mean 'Tesla T4'?): ...
    """
    params.validate({"PRICE_PER_HOUR": prices})
    names = [g["name"] for g in table]
    for name in prices:
        if name not in names:
            near = lookup(name, table) if isinstance(name, str) and name.strip() else None
            hint = f" (did you mean {near.row['name']!r}?)" if near and near.found else ""
            raise ValueError(f"PRICE_PER_HOUR has {name!r}, which is not a GPU of data/gpu_specs.csv{hint}: use the "
                             f"names {', '.join(map(repr, names))}.")
    return dict(prices)


def has_tensor_cores(row: Mapping[str, Any]) -> bool:
    """True when the GPU of `row` has Tensor Cores (compute capability 7.0 and later, Volta on).

    Example:
        >>> has_tensor_cores({"compute_capability": 6.0}), has_tensor_cores({"compute_capability": 7.5})
        (False, True)
    """
    return features(row["compute_capability"])["float16 Tensor Cores"]


def training_rate(row: Mapping[str, Any], table: Sequence[Mapping[str, Any]]) -> tuple[float | None, str]:
    """ResNet-50 training images/s of a GPU in mixed precision and where the figure comes from.

    A rate measured by NVIDIA where one is published (V100, A100 40 GB); otherwise the A100's
    measured rate scaled by the ratio of dense FP16 Tensor Core peaks, which is a rough guess: real
    speed also depends on memory bandwidth, the input pipeline and the software. A GPU without Tensor
    Cores (the P100, compute capability 6.0) gets no rate, None and :data:`NOT_COMPARABLE`: its FP16
    figure is a plain half-precision peak, and a Tensor Core rate scaled by it compares unlike things.

    Example:
        >>> table = specs()
        >>> training_rate(next(g for g in table if g["name"] == "A100 SXM4 40 GB"), table)[0]
        2375.0
        >>> round(training_rate(next(g for g in table if g["name"] == "Tesla T4"), table)[0])
        495
        >>> training_rate(next(g for g in table if g["name"].startswith("Tesla P100")), table)[1][:32]
        'not comparable (no Tensor Cores)'
    """
    if row["name"] in MEASURED_TRAINING:
        return MEASURED_TRAINING[row["name"]]
    if not has_tensor_cores(row):
        return None, (f"{NOT_COMPARABLE}: its {row['fp16_tensor_tflops_dense']:g} TFLOP/s is a plain FP16 peak, so "
                      "the A100's Tensor Core rate is not scaled to it")
    ref = next(g for g in table if g["name"] == SCALE_FROM)
    rate = MEASURED_TRAINING[SCALE_FROM][0] * row["fp16_tensor_tflops_dense"] / ref["fp16_tensor_tflops_dense"]
    return rate, (f"scaled from the A100 40 GB's measured rate by datasheet peak ({row['fp16_tensor_tflops_dense']:g}"
                  f" / {ref['fp16_tensor_tflops_dense']:g} TFLOP/s): a rough guess")


def run_cost(images: float, table: Sequence[Mapping[str, Any]], prices: Mapping[str, float] | None = None,
             job_bytes: float | None = None) -> dict[str, dict[str, Any]]:
    """Hours, energy (kWh at the board's TDP: an upper-bound estimate) and cost of processing `images` per GPU.

    ``cost`` is None for a GPU without a price in `prices` (you set prices; the course invents none).
    A GPU without a rate (:func:`training_rate`: no Tensor Cores) gets None for rate, hours, energy and cost.

    Example:
        >>> t4 = [g for g in specs() if g["name"] in ("Tesla T4", "A100 SXM4 40 GB")]
        >>> r = run_cost(2375 * 3600, t4, {"A100 SXM4 40 GB": 2.0})["A100 SXM4 40 GB"]
        >>> r["hours"], r["kwh"], r["cost"]
        (1.0, 0.4, 2.0)
    """
    if not isinstance(images, (int, float)) or not images > 0:
        raise ValueError(f"images={images!r}: use a positive number of images.")
    full = table if any(g["name"] == SCALE_FROM for g in table) else specs()
    prices = dict(prices or {})
    out = {}
    for g in table:
        rate, source = training_rate(g, full)
        hours = None if rate is None else images / rate / 3600
        kwh = None if hours is None else hours * g["tdp_w"] / 1000
        out[g["name"]] = {"images_per_s": rate, "rate_source": source, "hours": hours, "kwh": kwh,
                          "cost": hours * prices[g["name"]] if g["name"] in prices and hours is not None else None,
                          "fits": None if job_bytes is None else fits(job_bytes, g["memory_gb"])}
    return out


def cost_table(costs: Mapping[str, Mapping[str, Any]]) -> str:
    """The result of :func:`run_cost` as text; a cost column only when some price was given.

    The rate column names the card a measured rate comes from (the part of ``rate_source`` before its first
    comma), or says the rate was scaled by peak; a GPU without a rate reads :data:`NOT_COMPARABLE` in place of
    its images/s, and "-" for hours, energy and cost.

    Example:
        >>> print(cost_table({"Tesla T4": {"images_per_s": 495.0, "hours": 2.0, "kwh": 0.14, "cost": None,
        ...                                "fits": True, "rate_source": "scaled"}}))
        GPU       fits  images/s  hours  kWh (at TDP)  rate
        Tesla T4  yes   495       2.0    0.14          scaled by peak: rough
    """
    priced = any(c["cost"] is not None for c in costs.values())
    rows = [("GPU", "fits", "images/s", "hours", "kWh (at TDP)", *(["cost"] if priced else []), "rate")]
    for name, c in costs.items():
        fit = "-" if c.get("fits") is None else ("yes" if c["fits"] else "no")
        cost = ["-" if c["cost"] is None else f"{c['cost']:,.2f}"] if priced else []
        if c["images_per_s"] is None:
            rows.append((name, fit, NOT_COMPARABLE, "-", "-", *cost, "not scaled"))
            continue
        rate = c["rate_source"].split(",")[0] if c["rate_source"].startswith("measured") else "scaled by peak: rough"
        rows.append((name, fit, f"{c['images_per_s']:,.0f}", f"{c['hours']:,.1f}", f"{c['kwh']:,.2f}", *cost, rate))
    return text_table(rows)


def units_table(cpu_images_per_s: float) -> str:
    """NVIDIA's measured ResNet-50 inference rates beside a CPU's: units of CPU time per unit of GPU time.

    Each unit figure is the GPU's published rate divided by `cpu_images_per_s`, rounded to a whole number.

    Example:
        >>> print(units_table(10.0).splitlines()[1])  # doctest: +NORMALIZE_WHITESPACE
        T4 16 GB  float32  424  42
    """
    if isinstance(cpu_images_per_s, bool) or not isinstance(cpu_images_per_s, (int, float)) \
            or not 0 < cpu_images_per_s < math.inf:
        raise ValueError(f"cpu_images_per_s={cpu_images_per_s!r}: use the positive, finite rate you measured.")
    rows = [("GPU (measured by NVIDIA)", "precision", "images/s", "units of this CPU's time per unit of GPU time")]
    for m in MEASURED_INFERENCE:
        rows.append((m["gpu"], m["precision"], f"{m['images_per_s']:,.0f}",
                     f"{m['images_per_s'] / cpu_images_per_s:,.0f}"))
    return text_table(rows)


def speedup_note(row: Mapping[str, Any]) -> str:
    """One row of :data:`MEASURED_SPEEDUP` as a sentence: the published speed-up and the one computed from the rates.

    NVIDIA's table prints its speed-up rounded from its own unrounded rates, so the ratio of the rounded rates
    can differ in the last digit: the sentence says which figure is NVIDIA's and which is computed here.

    Example:
        >>> print(speedup_note(MEASURED_SPEEDUP[1]))  # doctest: +NORMALIZE_WHITESPACE
        On one A100 SXM4 40 GB (DGX A100), NVIDIA measured 909 images/s in TF32 (batch 256) and 2,375 in mixed
        precision (batch 256): its table prints a 2.60x speed-up (published); 2,375 / 909 = 2.61 (computed here
        from the two rates).
    """
    keys = ("gpu", "baseline", "baseline_images_per_s", "baseline_batch", "mixed_images_per_s", "mixed_batch",
            "published_speedup")
    missing = [k for k in keys if k not in row]
    if missing:
        raise ValueError(f"row lacks {missing}: pass a row of MEASURED_SPEEDUP, with the keys {list(keys)}.")
    base, mixed = row["baseline_images_per_s"], row["mixed_images_per_s"]
    if not (0 < base < math.inf and 0 < mixed < math.inf):
        raise ValueError(f"row rates {base!r} and {mixed!r}: use positive, finite images per second.")
    return (f"On one {row['gpu']}, NVIDIA measured {base:,.0f} images/s in {row['baseline']} (batch "
            f"{row['baseline_batch']}) and {mixed:,.0f} in mixed precision (batch {row['mixed_batch']}): its table "
            f"prints a {row['published_speedup']:.2f}x speed-up (published); {mixed:,.0f} / {base:,.0f} = "
            f"{mixed / base:.2f} (computed here from the two rates).")
