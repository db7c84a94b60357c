"""Helpers for the GPU Deep Learning Notebooks course.

The notebooks share one small vocabulary:

* ``helpers.setup(**params)``: validate parameters, seed, apply GPU settings, print the hardware.
* ``helpers.env``: hardware and software facts (GPUs, build info, NVML readings).
* ``helpers.bench``: timing that waits for asynchronous work.
* ``helpers.data``: the datasets shipped in ``data/``, verified against their sha256.
* ``helpers.check``: feedback for the exercises.
* ``helpers.results``: key results written as JSON for the tests.
* ``helpers.plots``: plotting code too long to inline into a notebook.

Importing ``helpers`` is cheap: submodules load on first use, and TensorFlow is imported only by
the functions that need it (quietly, so the learner's page stays free of C++ log noise).
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

# TensorFlow reads these when it is first imported; set them before anything imports it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Number GPUs by PCI bus, as NVML and nvidia-smi do (CUDA's default puts the fastest first), so that
# TensorFlow's GPU:i and NVML's GPU i are the same card.
os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")


_SUBMODULES = ("bench", "check", "colab", "data", "env", "monitor", "nn", "params", "placement", "plots", "results",
               "session", "tables")

if TYPE_CHECKING:  # pragma: no cover - for editors and type checkers only
    from helpers import bench, check, colab, data, env, monitor, nn, params, placement, plots, results, session, tables  # noqa: F401
    from helpers.session import scratch_dir, setup  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"helpers.{name}")
    if name in ("setup", "scratch_dir"):
        return getattr(importlib.import_module("helpers.session"), name)
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")


__all__ = ["setup", "scratch_dir", *_SUBMODULES]
