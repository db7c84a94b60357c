"""Shared test setup: quiet TensorFlow, a headless matplotlib, and the claims modules' asserts."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("MPLBACKEND", "Agg")

pytest.register_assert_rewrite("claims")

# An IPython start-up file for test kernels only (tests/nbrun.py): importing it here, as --doctest-modules
# would, would patch Keras inside the test process itself.
collect_ignore = ["gpu_path"]
