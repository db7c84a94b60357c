"""Rebuild ``data/fashion_mnist_subset.npz`` from Debian's Fashion-MNIST files.

The source is the Debian package ``dataset-fashion-mnist``, which installs the
four original IDX files (gzip-compressed) under
``/usr/share/datasets/fashion-mnist/``. This script parses them directly,
draws a class-balanced subset with a fixed seed and writes a byte-reproducible
``.npz`` archive (fixed zip timestamps, fixed member order, no pickles).

Subset rule: ``rng = numpy.random.default_rng(0)``; for the train split and
then the test split, for each class 0..9 in order, draw
``rng.choice(indices_of_class, size=k, replace=False)`` (k = 1000 for train,
200 for test); the chosen indices of a split are then sorted by original index.

Usage::

    python3 tools/build_fashion_subset.py [--source DIR] [--out PATH]
"""

from __future__ import annotations

import argparse
import gzip
import io
import struct
import zipfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = Path("/usr/share/datasets/fashion-mnist")
DEFAULT_OUT = REPO_ROOT / "data" / "fashion_mnist_subset.npz"

IMAGES_MAGIC = 2051  # 0x00000803: unsigned byte, 3 dimensions
LABELS_MAGIC = 2049  # 0x00000801: unsigned byte, 1 dimension
NUM_CLASSES = 10
ROWS = COLS = 28
SEED = 0
TRAIN_PER_CLASS = 1000
TEST_PER_CLASS = 200
# 1980-01-01 00:00:00 is the earliest timestamp a zip file can hold.
ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)

CLASS_NAMES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)

SPLIT_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 60000),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 10000),
}


def read_idx_images(path: Path, expected_count: int) -> np.ndarray:
    """Read a gzip-compressed IDX3 image file into a ``(N, 28, 28)`` uint8 array.

    Raises:
        ValueError: if the magic number, dimensions or payload size are wrong.
    """
    raw = gzip.decompress(path.read_bytes())
    if len(raw) < 16:
        raise ValueError(f"{path}: file too short for an IDX3 header")
    magic, count, rows, cols = struct.unpack(">4I", raw[:16])
    if magic != IMAGES_MAGIC:
        raise ValueError(f"{path}: magic {magic}, expected {IMAGES_MAGIC}")
    if (count, rows, cols) != (expected_count, ROWS, COLS):
        raise ValueError(f"{path}: shape {(count, rows, cols)}, expected {(expected_count, ROWS, COLS)}")
    payload = raw[16:]
    if len(payload) != count * rows * cols:
        raise ValueError(f"{path}: {len(payload)} pixel bytes, expected {count * rows * cols}")
    return np.frombuffer(payload, dtype=np.uint8).reshape(count, rows, cols).copy()


def read_idx_labels(path: Path, expected_count: int) -> np.ndarray:
    """Read a gzip-compressed IDX1 label file into an ``(N,)`` uint8 array.

    Raises:
        ValueError: if the magic number, count, payload size or label range is wrong.
    """
    raw = gzip.decompress(path.read_bytes())
    if len(raw) < 8:
        raise ValueError(f"{path}: file too short for an IDX1 header")
    magic, count = struct.unpack(">2I", raw[:8])
    if magic != LABELS_MAGIC:
        raise ValueError(f"{path}: magic {magic}, expected {LABELS_MAGIC}")
    if count != expected_count:
        raise ValueError(f"{path}: {count} labels, expected {expected_count}")
    payload = raw[8:]
    if len(payload) != count:
        raise ValueError(f"{path}: {len(payload)} label bytes, expected {count}")
    labels = np.frombuffer(payload, dtype=np.uint8).copy()
    if labels.max() >= NUM_CLASSES:
        raise ValueError(f"{path}: label {labels.max()} out of range")
    return labels


def load_split(source: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Load the images and labels of one original split (``train`` or ``test``)."""
    images_name, labels_name, count = SPLIT_FILES[split]
    images = read_idx_images(source / images_name, count)
    labels = read_idx_labels(source / labels_name, count)
    return images, labels


def balanced_indices(labels: np.ndarray, per_class: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``per_class`` indices of each class without replacement, sorted.

    Classes are visited in order 0..9 so that the generator's draws, and hence
    the result, are fully determined by its seed.
    """
    chosen = []
    for cls in range(NUM_CLASSES):
        candidates = np.flatnonzero(labels == cls)
        if candidates.size < per_class:
            raise ValueError(f"class {cls} has {candidates.size} examples, need {per_class}")
        chosen.append(rng.choice(candidates, size=per_class, replace=False))
    return np.sort(np.concatenate(chosen))


def write_npz_reproducible(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` as an ``.npz`` file whose bytes depend only on the data.

    ``np.savez_compressed`` stamps each member with the current time; here each
    array is serialised with ``np.lib.format.write_array`` and stored under a
    fixed timestamp and permission bits, in the given order.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, mode="w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=ZIP_DATE_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so external_attr is read as a mode
            info.external_attr = 0o644 << 16
            zf.writestr(info, buffer.getvalue(), compresslevel=9)
    tmp.replace(path)


def build(source: Path, out: Path) -> dict[str, np.ndarray]:
    """Build the subset from ``source`` and write it to ``out``; return the arrays."""
    rng = np.random.default_rng(SEED)
    arrays: dict[str, np.ndarray] = {}
    for split, per_class in (("train", TRAIN_PER_CLASS), ("test", TEST_PER_CLASS)):
        print(f"reading {split} split from {source}")
        images, labels = load_split(source, split)
        keep = balanced_indices(labels, per_class, rng)
        arrays[f"x_{split}"] = images[keep]
        arrays[f"y_{split}"] = labels[keep]
    ordered = {key: arrays[key] for key in ("x_train", "y_train", "x_test", "y_test")}
    write_npz_reproducible(out, ordered)
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return ordered


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse command-line arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--source",
        type=Path,
        default=DEFAULT_SOURCE,
        help=f"directory holding the four IDX .gz files (default: {DEFAULT_SOURCE})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="output .npz path (default: data/fashion_mnist_subset.npz)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    args = parse_args(argv)
    build(args.source, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
