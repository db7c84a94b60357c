"""What every claims module shares: the branch on the recorded GPU count, and the check for missing keys."""

from __future__ import annotations

import sys
from collections.abc import Iterable


def dispatch(run, module_name: str) -> None:
    """Run the module's ``shared(run)``, then ``on_gpu(run)`` or ``on_cpu(run)`` by the recorded ``gpu_count``.

    The branches are looked up when called, so a test can replace one of them.
    """
    module = sys.modules[module_name]
    module.shared(run)
    (module.on_gpu if run.results["gpu_count"] else module.on_cpu)(run)


def require(results: dict, keys: Iterable[str]) -> None:
    """Fail naming every key the notebook did not record."""
    missing = [key for key in keys if key not in results]
    assert not missing, f"results lack {missing}"
