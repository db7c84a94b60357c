"""Loaders for the datasets shipped in ``data/``, each verified against ``data/MANIFEST``.

Used by every notebook that trains (Fashion-MNIST: 01, 02, 04-07; SMS spam: 03), by 00 and 02 (the
GPU table, and the hashes behind the readiness table) and by ``make doctor``.

Nothing here touches the network: the files come with the repository (see ``data/README.md`` for
provenance and licences). A file whose sha256 does not match the manifest is refused.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import os
from pathlib import Path
from typing import Any

import numpy as np

DATA_DIR = Path(os.environ.get("COURSE_DATA_DIR", Path(__file__).resolve().parent.parent / "data"))

FASHION_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                   "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
FILES = ("fashion_mnist_subset.npz", "sms_spam_subset.csv.gz", "gpu_specs.csv", "kubeflow_tfjob_crd.yaml")


class DataIntegrityError(ValueError):
    """A shipped data file is missing or does not match its sha256 in the manifest."""


def _manifest(data_dir: Path) -> dict[str, str]:
    path = data_dir / "MANIFEST"
    if not path.exists():
        raise DataIntegrityError(f"{path} is missing: restore data/ from the repository (git checkout data/).")
    entries = {}
    for line in path.read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            entries[name.strip().lstrip("*")] = digest
    return entries


def sha256(path: Path) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(name: str, data_dir: Path | str | None = None) -> Path:
    """Return the path of data file `name` after checking its sha256 against the manifest.

    Raises:
        ValueError: `name` is not a shipped file (the message lists them).
        DataIntegrityError: the file is missing or its hash differs from the manifest.

    Example:
        >>> verify("gpu_specs.csv").name
        'gpu_specs.csv'
    """
    if name not in FILES:
        raise ValueError(f"name={name!r} is not a shipped data file: use one of {', '.join(FILES)}.")
    data_dir = Path(data_dir) if data_dir is not None else DATA_DIR
    expected = _manifest(data_dir).get(name)
    path = data_dir / name
    if expected is None:
        raise DataIntegrityError(f"{name} has no entry in {data_dir / 'MANIFEST'}.")
    if not path.exists():
        raise DataIntegrityError(f"{path} is missing: restore data/ from the repository (git checkout data/).")
    actual = sha256(path)
    if actual != expected:
        raise DataIntegrityError(
            f"{path} does not match its sha256 in MANIFEST (expected {expected[:12]}..., got {actual[:12]}...): "
            "the file is corrupt or was changed. Restore it with `git checkout data/`, or rebuild it with "
            "tools/build_data.py and review the change.")
    return path


def verify_all(data_dir: Path | str | None = None) -> bool:
    """True when every shipped file matches the manifest.

    Example:
        >>> verify_all()
        True
    """
    try:
        for name in FILES:
            verify(name, data_dir)
    except DataIntegrityError:
        return False
    return True


def load_fashion_mnist(data_dir: Path | str | None = None) -> tuple[tuple[np.ndarray, np.ndarray],
                                                                   tuple[np.ndarray, np.ndarray]]:
    """The Fashion-MNIST subset: ``(x_train, y_train), (x_test, y_test)``, uint8, like Keras' loader.

    10,000 training and 2,000 test images of 28x28 pixels, 10 balanced classes
    (names in ``FASHION_CLASSES``).

    Example:
        >>> (x, y), (xt, yt) = load_fashion_mnist()
        >>> x.shape, xt.shape
        ((10000, 28, 28), (2000, 28, 28))
    """
    path = verify("fashion_mnist_subset.npz", data_dir)
    with np.load(path, allow_pickle=False) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])


def load_sms_spam(data_dir: Path | str | None = None) -> tuple[list[str], np.ndarray]:
    """The SMS Spam Collection subset: ``(texts, labels)`` with label 1 = spam, 0 = ham.

    Example:
        >>> texts, labels = load_sms_spam()
        >>> len(texts) == len(labels), set(labels.tolist())
        (True, {0, 1})
    """
    path = verify("sms_spam_subset.csv.gz", data_dir)
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    texts = [r["text"] for r in rows]
    labels = np.array([1 if r["label"] == "spam" else 0 for r in rows], dtype=np.int64)
    return texts, labels


def load_gpu_specs(data_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """The GPU specification table, one dict per GPU, numbers parsed (None where blank).

    Example:
        >>> t4 = next(g for g in load_gpu_specs() if g["name"] == "Tesla T4")
        >>> t4["compute_capability"], t4["memory_gb"]
        (7.5, 16.0)
    """
    path = verify("gpu_specs.csv", data_dir)
    text_columns = {"name", "architecture", "memory_type", "source"}
    rows = []
    for raw in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))):
        row: dict[str, Any] = {}
        for key, value in raw.items():
            if key in text_columns:
                row[key] = value
            elif value in ("true", "false"):
                row[key] = value == "true"
            else:
                row[key] = float(value) if value != "" else None
        rows.append(row)
    return rows
