"""Results JSON: plain types, atomic writes, nothing written when the path is empty."""

import json

import numpy as np
import pytest

from helpers import results


def test_recorder_writes_numpy_values_as_plain_json(tmp_path):
    rec = results.Recorder(tmp_path / "sub" / "r.json")
    rec["a"] = np.float32(0.5)
    rec["b"] = {"x": np.arange(3), "t": (1, 2)}
    rec["nan"] = float("nan")
    path = rec.save()
    assert json.loads(path.read_text()) == {"a": 0.5, "b": {"x": [0, 1, 2], "t": [1, 2]}, "nan": None}
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]  # no temporary file left


def test_empty_path_writes_nothing(tmp_path):
    rec = results.Recorder("")
    rec["a"] = 1
    assert rec.save() is None


def test_bad_path_and_unstorable_values_are_refused(tmp_path):
    with pytest.raises(ValueError, match="RESULTS_PATH='r.txt'"):
        results.Recorder("r.txt")
    rec = results.Recorder(tmp_path / "r.json")
    rec["f"] = object()
    with pytest.raises(TypeError, match="Cannot store object"):
        rec.save()
    assert not (tmp_path / "r.json").exists() and list(tmp_path.iterdir()) == []
