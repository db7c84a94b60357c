"""Helpers for the GPU Deep Learning Notebooks course: the plumbing, so the lesson stays on the page.

Each module's docstring names the notebooks that use it; each notebook's Setup section lists the
modules it uses. Importing ``helpers`` loads every module below (about 0.2 s) but never TensorFlow:
:func:`setup` validates the parameters first and imports TensorFlow after that, quietly.

Every notebook uses
    ``session``   :func:`setup` (validate, import TF, device settings, seed, one-line report), :func:`scratch_dir`
    ``params``    the rule for every notebook parameter (SMOKE, SEED, SIZES, POLICY, N_REPLICAS, ...)
    ``results``   key results written as JSON for the tests (``Recorder``)
    ``data``      the datasets in ``data/``, verified against their sha256
    ``colab``     the repository's address and the Colab bootstrap cell
    ``check``     exercise feedback, one module per notebook (``from helpers.check import nb02 as check``)
Shared tools
    ``bench``     timing that waits for asynchronous work (warm-up, repeats, median, spread)
    ``flops``     FLOP counting for Keras models and matmuls
    ``children``  run a visible child script in fresh Pythons, collect its JSON answer
    ``plots``     plotting too long for a notebook cell (curves that keep their colours, bars)
    ``tables``    aligned text tables, scientific notation
    ``monitor``   a background utilisation sampler (NVML or psutil)
    ``tflog``     TensorFlow's C++ log lines kept off the page (a filter on stderr)
Hardware facts, by concern
    ``cpu``       the CPU's model, instruction-set flags, clocks and peak FLOP/s
    ``env``       what TensorFlow sees: versions, build, devices, GPUs, memory, the report
    ``nvml``      NVIDIA's management library: utilisation, memory, power, temperature
    ``readiness`` the readiness table of notebook 00 and ``make doctor``
Topic modules, one per notebook that needs one
    ``nn`` (01), ``placement`` (02), ``timing`` (03), ``pipelines`` (04), ``batching`` (05), ``precision`` (06),
    ``distribute`` (07), ``cluster``, ``manifests``, ``netns`` and ``slurm`` (08), ``gpus`` (09)
"""

from __future__ import annotations

import os

# TensorFlow reads these when it is first imported; set them before anything imports it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Number GPUs by PCI bus, as NVML and nvidia-smi do (CUDA's default puts the fastest first), so that
# TensorFlow's GPU:i and NVML's GPU i are the same card.
os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")

from helpers import (  # noqa: E402  (the variables above must be set first)
    batching,
    bench,
    check,
    children,
    cluster,
    colab,
    cpu,
    data,
    distribute,
    env,
    flops,
    gpus,
    manifests,
    monitor,
    netns,
    nn,
    nvml,
    params,
    pipelines,
    placement,
    plots,
    precision,
    readiness,
    results,
    session,
    slurm,
    tables,
    tflog,
    timing,
)
from helpers.session import scratch_dir, setup  # noqa: E402

__all__ = [
    "setup",
    "scratch_dir",
    "batching",
    "bench",
    "check",
    "children",
    "cluster",
    "colab",
    "cpu",
    "data",
    "distribute",
    "env",
    "flops",
    "gpus",
    "manifests",
    "monitor",
    "netns",
    "nn",
    "nvml",
    "params",
    "pipelines",
    "placement",
    "plots",
    "precision",
    "readiness",
    "results",
    "session",
    "slurm",
    "tables",
    "tflog",
    "timing",
]
