"""Shared test setup: quiet TensorFlow, a headless matplotlib, and the claims modules' asserts."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("MPLBACKEND", "Agg")

pytest.register_assert_rewrite("claims")

# An IPython start-up file for test kernels only (tests/nbrun.py): importing it here, as --doctest-modules
# would, would patch Keras inside the test process itself.
collect_ignore = ["gpu_path"]

try:  # property tests (the reading functions): reproducible, quick, and no example database left on disk
    from hypothesis import HealthCheck, settings
except ImportError:  # the Colab-like venv runs only tests/test_colab_runtime.py, which needs none
    pass
else:
    settings.register_profile("course", database=None, derandomize=True, deadline=None, max_examples=150,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("course")
