"""Key results of a notebook, written as JSON so tests can check the notebook's claims (every notebook).

Example (in a notebook)::

    results = helpers.results.Recorder(RESULTS_PATH)
    results["gpu_count"] = hw.gpu_count
    results.save()          # writes nothing when RESULTS_PATH == ""
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Convert NumPy scalars/arrays, tuples, paths and dataclass-like objects to plain JSON types.

    Non-finite floats become None (JSON has no NaN).

    Example:
        >>> import numpy as np
        >>> to_jsonable({"a": np.float32(1.5), "b": (1, 2)})
        {'a': 1.5, 'b': [1, 2]}
    """
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist"):  # NumPy scalars and arrays, TF tensors via .numpy() first
        return to_jsonable(value.tolist())
    if hasattr(value, "numpy"):
        return to_jsonable(value.numpy())
    if hasattr(value, "to_dict"):
        return to_jsonable(value.to_dict())
    raise TypeError(f"Cannot store {type(value).__name__} in results JSON: convert it to numbers or text first.")


class Recorder(dict):
    """A dict of results that :meth:`save` writes atomically to `path` (nothing when path is "")."""

    def __init__(self, path: str | os.PathLike[str] = "") -> None:
        super().__init__()
        path = str(path)
        if path and not path.endswith(".json"):
            raise ValueError(f'RESULTS_PATH={path!r}: use a path ending in .json, or "" to write nothing.')
        self.path = path

    def save(self) -> Path | None:
        """Write the results as JSON (atomically: a reader never sees half a file); return the path."""
        if not self.path:
            return None
        target = Path(self.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps(to_jsonable(dict(self)), indent=2, sort_keys=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".results-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(payload + "\n")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a results file written by :class:`Recorder`."""
    return json.loads(Path(path).read_text())
