"""The package ships every helpers module: a wheel built from a copy of the sources holds each one."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_contains_every_helpers_module(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "helpers", source / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = (tmp_path / "dist").glob("*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "helpers").rglob("*.py")}
    assert any(m.startswith("helpers/check/") for m in modules)
    missing = sorted(modules - shipped)
    assert not missing, f"the wheel lacks {missing}: list every subpackage in pyproject.toml"
