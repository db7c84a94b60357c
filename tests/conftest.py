"""Shared test setup: quiet TensorFlow, a headless matplotlib, and the claims modules' asserts."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("MPLBACKEND", "Agg")

pytest.register_assert_rewrite("claims")
