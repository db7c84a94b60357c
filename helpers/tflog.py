"""TensorFlow's C++ log kept off the learner's page (every notebook, through :func:`helpers.setup`).

Placeholder: filled in by the stderr-filter change.
"""

from __future__ import annotations


def keep_off_page() -> None:
    """Install the filter on file descriptor 2 (idempotent). Placeholder."""
