"""Record the reference outputs nbval compares, and strip everything else.

Cells whose first line is ``# NBVAL_CHECK_OUTPUT`` keep the outputs of a smoke run (marked with
``keep_output`` so nbstripout leaves them, and numbered, since nbval compares only cells with an
execution count; ``nbstripout --keep-count`` keeps those numbers). Every other cell is stripped.
Run it after changing such a cell::

    .venv/bin/python tools/record_outputs.py notebooks/00_environment_check.ipynb
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import nbformat

MARK = "# NBVAL_CHECK_OUTPUT"


def checked(cell) -> bool:
    return cell.cell_type == "code" and cell.source.lstrip().startswith(MARK)


def record(path: Path) -> int:
    import papermill as pm

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["COURSE_SCRATCH"] = str(Path(tmp) / "scratch")
        out = Path(tmp) / path.name
        pm.execute_notebook(str(path), str(out), parameters={"SMOKE": True}, cwd=tmp, kernel_name="python3",
                            progress_bar=False)
        executed = nbformat.read(out, as_version=4)
    nb = nbformat.read(path, as_version=4)
    by_id = {c.id: c for c in executed.cells}
    kept = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.execution_count = None
        if checked(cell):
            kept += 1
            # nbval skips a cell whose execution_count is None, so checked cells carry a count.
            cell.execution_count = kept
            cell.outputs = by_id[cell.id].outputs
            for output in cell.outputs:
                if "execution_count" in output:
                    output["execution_count"] = kept
            cell.metadata["keep_output"] = True
        else:
            cell.outputs = []
            cell.metadata.pop("keep_output", None)
            cell.metadata.pop("execution", None)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    for path in parser.parse_args(argv).notebooks:
        print(f"{path}: kept outputs of {record(path)} checked cell(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
