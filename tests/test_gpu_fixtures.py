"""Every GPU-shaped fixture (``tests/claims/gpu_nbNN.json``) holds figures a real GPU can produce, and its text agrees
with its results.

Each fixture is checked against the datasheet row of the card it names (``data/gpu_specs.csv`` through
``helpers.gpus``, by name): no rate above the card's dense peak for its precision (FP16 Tensor Cores for 16-bit
figures; TF32 for float32 from compute capability 8.0, FP32 below), no memory bandwidth above the datasheet's (a copy
reads and writes its bytes, so it moves twice the bytes it copies), no placeholder figure, and the figures its text
quotes equal its results.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import gpus

CLAIMS = Path(__file__).resolve().parent / "claims"
FIXTURES = sorted(CLAIMS.glob("gpu_nb*.json"))
PLACEHOLDER = re.compile(r"(?<![\d.])(?:1\.2345|12345|0\.12345)(?![\d])|\bTODO\b|\bXXX\b|\blorem\b", re.I)
RATE = re.compile(r"([\d,]+(?:\.\d+)?) ([GT])FLOP/s")
BANDWIDTH = re.compile(r"([\d,]+(?:\.\d+)?) GB/s")
NAMED = re.compile(r"(?:GPU \d: |GPU\(s\): |1 GPU: |GPU: |measured on |this |for |[aA] |\"name\": \")"
                   r"((?:Tesla |NVIDIA )?[A-Z]\d+[\w -]*?)(?= \(compute|[:,\"]|'s | did | fitted| ran)")
HALF_KEYS = ("multiple_of_8",)  # 06's Tensor Core experiment times float16 matmuls
QUOTED_PEAK = ("peak", "datasheet")  # a line that quotes a datasheet figure, labelled as such, measures nothing


def load(path: Path) -> tuple[dict[str, Any], str]:
    data = json.loads(path.read_text())
    text = data.get("text", "")
    return data["results"], "\n".join(text) if isinstance(text, list) else text


def card(path: Path) -> dict[str, Any]:
    """The datasheet row of the GPU the fixture names most (its hardware line, NVML, 'measured on ...')."""
    results, text = load(path)
    names = NAMED.findall(text + "\n" + json.dumps(results))
    found = [hit.row for hit in map(gpus.lookup, names) if hit.found]
    if not found:  # a fixture that names no card may quote no GPU rate or bandwidth either
        assert not RATE.search(text) and not BANDWIDTH.search(text), f"{path.name} quotes rates but names no GPU"
        pytest.skip(f"{path.name} names no GPU and quotes no rate")
    counts = Counter(row["name"] for row in found)  # the run's own card is the one it names most
    return next(row for row in found if row["name"] == counts.most_common(1)[0][0])


def peak_tflops(row: dict[str, Any], line: str) -> float:
    """The card's dense peak for the precision a line or a result key speaks of."""
    if re.search(r"float16|fp16|bfloat16|mixed|half", line, re.I) or any(key in line for key in HALF_KEYS):
        return max(float(row["fp16_tensor_tflops_dense"] or 0), float(row["fp32_tflops"]))
    tf32 = row.get("tf32_tensor_tflops_dense")
    tensor_float32 = tf32 not in (None, "") and float(row["compute_capability"]) >= 8.0
    return float(tf32) if tensor_float32 else float(row["fp32_tflops"])


def number(text: str) -> float:
    return float(text.replace(",", ""))


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, f"{path}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from walk(item, f"{path}/{i}")
    else:
        yield path, value


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_no_placeholder_figure(path):
    results, text = load(path)
    found = PLACEHOLDER.findall(text) + PLACEHOLDER.findall(json.dumps(results))
    assert not found, f"{path.name} holds placeholder figures: {found}"


@pytest.mark.parametrize("path", [p for p in FIXTURES if p.name != "gpu_nb09.json"], ids=lambda p: p.name)
def test_no_rate_above_the_named_cards_dense_peak(path):
    """gpu_nb09.json compares many cards' datasheets; its own checks live in test_claims_fixture_nb09.py."""
    row, (results, text) = card(path), load(path)
    for line in text.splitlines():
        if any(word in line.lower() for word in QUOTED_PEAK):
            continue
        for value, unit in RATE.findall(line):
            tflops = number(value) / (1000 if unit == "G" else 1)
            assert tflops <= peak_tflops(row, line), f"{path.name}: {value} {unit}FLOP/s on a {row['name']}: {line}"
    for key, value in walk(results):
        scale = 1 if "tflops" in key.lower() else 1000 if "gflops" in key.lower() else None
        if scale and isinstance(value, (int, float)) and "peak" not in key.lower() and "/CPU" not in key:
            assert value / scale <= peak_tflops(row, key), f"{path.name}: {key} = {value} on a {row['name']}"


@pytest.mark.parametrize("path", [p for p in FIXTURES if p.name != "gpu_nb09.json"], ids=lambda p: p.name)
def test_no_bandwidth_above_the_named_cards_datasheet(path):
    row, (results, text) = card(path), load(path)
    limit = float(row["bandwidth_gb_s"])
    for line in text.splitlines():
        if any(word in line.lower() for word in QUOTED_PEAK):
            continue
        for value in BANDWIDTH.findall(line):
            moved = number(value) * (2 if "a copy" in line else 1)  # a copy reads and writes every byte
            assert moved <= limit, f"{path.name}: {moved:g} GB/s of traffic on a {row['name']} ({limit:g}): {line}"
    sizes = results.get("all_reduce_sizes", {})
    for label, seconds in sizes.get("copy_seconds", {}).items():
        assert 2 * sizes["bytes"][label] / seconds / 1e9 <= limit, f"{path.name}: the copy of {label}"
    for key, value in walk(results):
        if key.endswith("_gb_s") or "_gb_s/GPU" in key:
            assert value <= limit, f"{path.name}: {key} = {value} GB/s on a {row['name']}"


def test_the_quoted_figures_equal_the_results():
    """The sentences each fixture quotes, read back against the results they come from."""
    r, text = load(CLAIMS / "gpu_nb01.json")
    m = re.search(r"after (\d+) epochs from the same start the training loss is ([\d.]+) with Adam, ([\d.]+) with "
                  r"momentum SGD and ([\d.]+) with plain SGD", text)
    assert m, "01's optimizer sentence"
    assert int(m[1]) == r["epochs"] == len(r["optimizer_losses"]["Adam"]) - 1
    keys = ("adam_final_loss", "sgd_momentum_final_loss", "sgd_final_loss")
    assert [m[2], m[3], m[4]] == [f"{r[k]:.3f}" for k in keys]
    (pt, pv), (rt, rv) = r["overfit_accuracy"]["plain"], r["overfit_accuracy"]["dropout + L2"]
    assert (f"({pv:.3f} -> {rv:.3f}) while training accuracy falls by {pt - rt:.3f}") in text
    assert f"{r['resnet50_achieved_gflops']:,.0f} GFLOP/s (measured)" in text

    r, text = load(CLAIMS / "gpu_nb06.json")
    timed = r["multiple_of_8"]
    for n, got in timed.items():
        assert got["tflops"] == pytest.approx(2 * int(n) ** 3 / got["s"] / 1e12, rel=0.01), (n, got)
        assert f"n={n} {got['tflops']:.1f} TFLOP/s" in text

    r, text = load(CLAIMS / "gpu_nb07.json")
    sizes = r["all_reduce_sizes"]
    for label, seconds in sizes["copy_seconds"].items():
        assert f"a copy {seconds * 1e3:.3f} ms ({sizes['bytes'][label] / seconds / 1e9:.1f} GB/s)" in text, label
