"""Classroom copies of the notebooks: the exercises and their checks, without the Solutions section.

``make student`` writes ``build/student/NN_name.ipynb`` for every notebook of the course, in teaching
order (``COURSE`` in ``tests/nbrun.py``)::

    .venv/bin/python tools/make_student.py                 # all notebooks, into build/student/
    .venv/bin/python tools/make_student.py --out handout 03_cpu_vs_gpu_timing.ipynb

A copy runs where the full notebook runs: from ``build/student/`` in a clone of the course (``make lab``
installs ``helpers`` into ``.venv``, and ``helpers`` finds ``data/`` itself), and on its own on Colab or
Kaggle, where its unchanged bootstrap cell fetches the course's helpers (not the notebooks). A link to a file
of the course (``../README.md``) gets one more ``../``, so it still leads there from ``build/student/``.

The transformation finds its way by the skeleton of CONTRIBUTING.md, and refuses a notebook it does not
recognise (:class:`StructureError`, naming the notebook and what is missing) rather than write a broken copy:

* one markdown line ``## Exercises``, and after it one line ``## Solutions``;
* after ``## Solutions``, code cells only: solution cells, each assigning ``feedback_N = check.<name>(...)``,
  then the tally, the last cell, which writes ``results["exercises_solved"]`` from those ``feedback_N``;
* between the two headings, for each solution, exactly one check cell ending with ``check.<name>(...)``
  (and no check cell without a solution); before ``## Solutions``, no ``solution_N`` and no ``feedback_N``.

The copy drops the ``## Solutions`` heading and the text after it in its cell, and every solution cell.
Each check cell keeps its check and now also names its feedback (``feedback_N = check.<name>(answer)``),
so the tally reads the learner's own answers; the new tally prints how many exercises are solved and how
many are not filled in yet (a check's "Not answered yet" feedback, ``helpers/check/_feedback.py``). Outputs,
execution counts, ``# NBVAL_CHECK_OUTPUT`` marks and ``keep_output`` are stripped, cell ids are kept, the
notebook's metadata says it is a student copy, and its first line says so and that the instructor has the full
notebook. A copy carries no way to its solutions: no link to the full notebook, and the title cell's badge line
(Open in Colab, Open in Kaggle, View source: each opens ``notebooks/NN_name.ipynb``) is dropped. A copy is handed
out as a file, uploaded to Colab or Kaggle or opened in JupyterLab; its second line says so.
All copies are made in memory first, then written to a temporary folder that replaces the output folder:
a refused notebook leaves no copy and the previous output untouched.
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import nbrun  # noqa: E402

OUT_DIR = ROOT / "build" / "student"
# The words every "not filled in yet" feedback starts with (not_filled and returned_none in
# helpers/check/_feedback.py); the student tally counts them.
UNANSWERED = "Not answered yet"
NBVAL_MARK = "# NBVAL_CHECK_OUTPUT"
METADATA_KEY = "student_copy"

_EXERCISES = re.compile(r"^## Exercises[ \t]*$", re.MULTILINE)
_SOLUTIONS = re.compile(r"^## Solutions[ \t]*$", re.MULTILINE)
_FEEDBACK = re.compile(r"^feedback_(\d+)$")
_SOLUTION_NAME = re.compile(r"^solution_\d+$")
_UP_LINK = re.compile(r"\]\(\.\./")


class StructureError(ValueError):
    """A notebook whose exercises and solutions :func:`student_copy` does not recognise."""

    def __init__(self, notebook: str, problem: str) -> None:
        super().__init__(f"{notebook}: {problem}. No student copy written: give the notebook the skeleton of "
                         "CONTRIBUTING.md (## Exercises with a check cell per exercise, then ## Solutions with "
                         "feedback_N = check.<name>(solution_N) cells and the exercises_solved tally last).")
        self.notebook = notebook
        self.problem = problem


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


@functools.lru_cache(maxsize=4096)
def _python(source: str) -> str:
    """A cell's source as the kernel runs it: IPython turns magics and ``!`` lines into Python, line for line."""
    if "%" not in source and "!" not in source:  # plain Python: nothing to transform
        return source
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _parse(cell: dict[str, Any], name: str, index: int) -> ast.Module:
    try:
        return ast.parse(_python(_source(cell)))
    except SyntaxError as error:
        raise StructureError(name, f"code cell {index} does not parse ({error.msg})") from None


def _check_call(statement: ast.stmt) -> str | None:
    """The <name> of a statement ``check.<name>(...)``, else None."""
    if isinstance(statement, ast.Expr) and isinstance(call := statement.value, ast.Call):
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "check":
            return func.attr
    return None


def _solution_feedback(tree: ast.Module) -> tuple[int, str] | None:
    """(N, <name>) of the one top-level ``feedback_N = check.<name>(...)`` of a solution cell, else None."""
    found = []
    for statement in tree.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(target := statement.targets[0], ast.Name) and (m := _FEEDBACK.match(target.id))
                and (name := _check_call(ast.Expr(statement.value))) is not None):
            found.append((int(m.group(1)), name))
    return found[0] if len(found) == 1 else None


def _feedback_names(tree: ast.Module) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and _FEEDBACK.match(node.id)}


def _is_tally(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name) and node.value.id == "results"
                and isinstance(node.slice, ast.Constant) and node.slice.value == "exercises_solved"):
            return True
    return False


def tally_source(feedbacks: Sequence[str]) -> str:
    """The student copy's last cell: how many exercises are solved, and how many not filled in yet.

    Example:
        >>> print(tally_source(["feedback_1", "feedback_2"]).splitlines()[1])
        feedbacks = [feedback_1, feedback_2]  # the checks of the exercises above
    """
    if not feedbacks or any(not _FEEDBACK.match(f) for f in feedbacks):
        raise ValueError(f"feedbacks={list(feedbacks)!r}: use one or more names feedback_1, feedback_2, ...")
    return (
        "# How far you are: run this cell again after you answer the exercises and run their checks.\n"
        f"feedbacks = [{', '.join(feedbacks)}]  # the checks of the exercises above\n"
        "solved = sum(fb.ok for fb in feedbacks)\n"
        f'unanswered = sum(fb.message.startswith("{UNANSWERED}") for fb in feedbacks)\n'
        'print(f"Exercises: {solved} of {len(feedbacks)} solved, {unanswered} not filled in yet, "\n'
        '      f"{len(feedbacks) - solved - unanswered} to fix (read their checks above).")\n'
        'results["exercises_solved"] = solved == len(feedbacks)\n'
        'results["exercises_unanswered"] = unanswered\n'
        "saved = results.save()\n"
        'print(f"Key results written to {saved}" if saved else "RESULTS_PATH is empty: key results not written.")'
    )


def banner(name: str) -> str:
    """The lines a student copy starts with: what it is, that the instructor has the full notebook, how to open it.

    No link to the full notebook: it holds the solutions.

    Example:
        >>> banner("00_environment_check.ipynb").startswith("> **Student copy**")
        True
    """
    if name not in nbrun.COURSE:
        raise ValueError(f"name={name!r}: use one of {', '.join(nbrun.COURSE)}.")
    return ("> **Student copy**: the exercises without their answers. Your instructor has the full notebook. "
            "Run every cell, then fill in the exercises and run their checks again.\n"
            ">\n"
            "> Open this file in JupyterLab, or upload it to Colab (File > Upload notebook) or Kaggle "
            "(File > Import Notebook): its Setup cell fetches the course's helpers there.\n\n")


# The title cell's badge line: Open in Colab / Open in Kaggle / View source, each opening notebooks/NN_name.ipynb.
_BADGE_LINE = re.compile(r"^.*\]\(https://(?:colab\.research\.google\.com/github/|kaggle\.com/kernels/welcome"
                         r"|github\.com/[^)]*/notebooks/\d\d_\w+\.ipynb).*\n?", re.MULTILINE)


def _without_badges(title: str) -> str:
    r"""The title cell's text without its badge line (and the blank line it leaves).

    Example:
        >>> _without_badges("# 00 · T\n\n[![Open in Colab](x.svg)](https://colab.research.google.com/github/o/r/"
        ...                 "blob/main/notebooks/00_x.ipynb)\n\n## What you will learn")
        '# 00 · T\n\n## What you will learn'
    """
    return re.sub(r"\n{3,}", "\n\n", _BADGE_LINE.sub("", title))


def _strip(cell: dict[str, Any]) -> dict[str, Any]:
    cell = copy.deepcopy(cell)
    cell["metadata"].pop("keep_output", None)
    cell["metadata"].pop("execution", None)
    cell["metadata"].pop("papermill", None)
    if cell["cell_type"] == "code":
        cell["outputs"] = []
        cell["execution_count"] = None
        lines = [line for line in _source(cell).splitlines() if line.strip() != NBVAL_MARK]
        cell["source"] = "\n".join(lines)
    return cell


def _rewrite_check(source: str, feedback: str) -> str:
    """``check.<name>(answer)`` as its cell's last statement becomes ``feedback_N = ...`` then ``feedback_N``."""
    lines = source.splitlines()
    last = ast.parse(_python(source)).body[-1]  # a check cell has no magic before its last line
    start, end = last.lineno - 1, last.end_lineno
    call = "\n".join(lines[start:end])
    return "\n".join(lines[:start] + [f"{feedback} = {call}", feedback] + lines[end:])


def student_copy(nb: dict[str, Any], name: str) -> dict[str, Any]:
    """The student copy of notebook `nb` (file name `name`); raises :class:`StructureError` on a structure it does
    not recognise. `nb` is not changed.

    Example:
        >>> import json
        >>> nb = json.loads((nbrun.NOTEBOOKS / "00_environment_check.ipynb").read_text())
        >>> copy = student_copy(nb, "00_environment_check.ipynb")
        >>> copy["metadata"]["student_copy"]["exercises"], any("solution_" in _source(c) for c in copy["cells"])
        (2, False)
    """
    if name not in nbrun.COURSE:
        raise ValueError(f"name={name!r}: use one of {', '.join(nbrun.COURSE)}.")
    cells = nb.get("cells", [])
    markdown = [(i, _source(c)) for i, c in enumerate(cells) if c.get("cell_type") == "markdown"]
    exercises = [i for i, text in markdown if _EXERCISES.search(text)]
    solutions = [i for i, text in markdown if _SOLUTIONS.search(text)]
    if len(exercises) != 1:
        raise StructureError(name, f"{'no' if not exercises else 'more than one'} markdown line '## Exercises'")
    if sum(len(_SOLUTIONS.findall(text)) for _, text in markdown) != 1:
        raise StructureError(name, f"{'no' if not solutions else 'more than one'} markdown line '## Solutions'")
    first, heading = exercises[0], solutions[0]
    if heading < first or (heading == first and _SOLUTIONS.search(_source(cells[first])).start()
                           < _EXERCISES.search(_source(cells[first])).start()):
        raise StructureError(name, "'## Solutions' comes before '## Exercises'")
    head_text = _source(cells[heading])
    cut = _SOLUTIONS.search(head_text)
    if re.search(r"^#", head_text[cut.end():], re.MULTILINE):
        raise StructureError(name, "another heading follows '## Solutions' in its cell")
    for i, cell in enumerate(cells[:heading]):
        if cell.get("cell_type") != "code":
            continue
        tree = _parse(cell, name, i)
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if any(_SOLUTION_NAME.match(n) for n in names) or any(_FEEDBACK.match(n) for n in stored):
            raise StructureError(name, f"code cell {i} uses a solution_N or assigns a feedback_N before '## Solutions' "
                                       "(a solution cell before the exercises)")
    after = cells[heading + 1:]
    if not after:
        raise StructureError(name, "no solution cells and no tally after '## Solutions'")
    solved: dict[str, str] = {}  # feedback_N -> check name
    for offset, cell in enumerate(after):
        i = heading + 1 + offset
        if cell.get("cell_type") != "code":
            raise StructureError(name, f"cell {i} after '## Solutions' is {cell.get('cell_type')}, not a solution cell")
        tree = _parse(cell, name, i)
        if offset == len(after) - 1:
            if not _is_tally(tree):
                raise StructureError(name, f"the last cell ({i}) is not the tally: it writes no "
                                           "results[\"exercises_solved\"]")
            read = _feedback_names(tree)
            if set(read) != set(solved):
                raise StructureError(name, f"the tally reads {sorted(read)} but the solution cells define "
                                           f"{sorted(solved)}")
            continue
        found = _solution_feedback(tree)
        if found is None:
            raise StructureError(name, f"code cell {i} after '## Solutions' is not a solution cell: it has no one "
                                       "feedback_N = check.<name>(...)")
        feedback = f"feedback_{found[0]}"
        if feedback in solved:
            raise StructureError(name, f"{feedback} is assigned by two solution cells")
        solved[feedback] = found[1]
    checks: dict[str, list[int]] = {}
    for i in range(first + 1, heading):
        if cells[i].get("cell_type") == "code" and (body := _parse(cells[i], name, i).body):
            if (fn := _check_call(body[-1])) is not None:
                checks.setdefault(fn, []).append(i)
    wanted = set(solved.values())
    for fn in sorted(set(checks) - wanted):
        raise StructureError(name, f"the check cell check.{fn}(...) (cell {checks[fn][0]}) has no solution cell, "
                                   "so the tally would leave its exercise out")
    rewrite: dict[int, str] = {}
    for feedback, fn in solved.items():
        where = checks.get(fn, [])
        if len(where) != 1:
            raise StructureError(name, f"{feedback} checks check.{fn}, but {len(where) or 'no'} check cells between "
                                       f"'## Exercises' and '## Solutions' end with check.{fn}(...)")
        rewrite[where[0]] = feedback

    out = copy.deepcopy({k: v for k, v in nb.items() if k != "cells"})
    meta = out.setdefault("metadata", {})
    meta[METADATA_KEY] = {"full_notebook": f"notebooks/{name}", "exercises": len(solved),
                          "made_by": "tools/make_student.py"}
    new_cells = []
    for i, cell in enumerate(cells[:heading + 1]):
        cell = _strip(cell)
        text = _source(cell)
        if i == heading:
            text = text[:cut.start()].rstrip()
            if not text:
                continue
        if cell["cell_type"] == "markdown":
            text = _UP_LINK.sub("](../../", text)
        if i in rewrite:
            text = _rewrite_check(text, rewrite[i])
        cell["source"] = text.splitlines(keepends=True)
        new_cells.append(cell)
    title = next(c for c in new_cells if c["cell_type"] == "markdown")
    title["source"] = (banner(name) + _without_badges(_source(title))).splitlines(keepends=True)
    tally = _strip(after[-1])
    tally["source"] = tally_source(sorted(solved, key=lambda f: int(f.split("_")[1]))).splitlines(keepends=True)
    new_cells.append(tally)
    out["cells"] = new_cells
    return out


def dumps(nb: dict[str, Any]) -> str:
    """A notebook as the course writes it: canonical JSON, one-space indent, sorted keys."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _is_student_copy(path: Path) -> bool:
    try:
        return path.suffix == ".ipynb" and METADATA_KEY in json.loads(path.read_text(encoding="utf-8"))["metadata"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def write_student_copies(out_dir: Path = OUT_DIR, names: Sequence[str] | None = None,
                         source: Path = nbrun.NOTEBOOKS) -> list[Path]:
    """Write the student copies of `names` (default: every notebook of the course) into `out_dir`.

    Every copy is made before anything is written; they go to a temporary folder beside `out_dir`, which then
    replaces `out_dir`. An `out_dir` holding anything but student copies is refused, untouched. Returns the
    paths written, in teaching order.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     [p.name for p in write_student_copies(Path(tmp) / "student", ["01_deep_learning_basics.ipynb"])]
        ['01_deep_learning_basics.ipynb']
    """
    names = list(nbrun.present() if names is None else names)
    unknown = [n for n in names if n not in nbrun.COURSE]
    if unknown or not names:
        raise ValueError(f"names={unknown or names!r}: use notebooks of the course: {', '.join(nbrun.COURSE)}.")
    names.sort(key=nbrun.COURSE.index)
    missing = [n for n in names if not (source / n).is_file()]
    if missing:
        raise ValueError(f"names={missing!r}: no such file in {source}.")
    out_dir = Path(out_dir)
    if out_dir.exists():
        others = [p.name for p in out_dir.iterdir() if not _is_student_copy(p)]
        if not out_dir.is_dir() or others:
            raise ValueError(f"out_dir={str(out_dir)!r}: use a new folder, or one that holds only student copies "
                             f"(it is replaced as a whole; it holds {others[:3] or 'a file'}).")
    copies = {n: student_copy(json.loads((source / n).read_text(encoding="utf-8")), n) for n in names}
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}-"))
    try:
        tmp.chmod(0o755)  # mkdtemp's folder is private; the copies are to be handed out
        for n, nb in copies.items():
            (tmp / n).write_text(dumps(nb), encoding="utf-8")
        old = None
        if out_dir.exists():
            old = out_dir.parent / f"{tmp.name}-old"
            out_dir.rename(old)
        tmp.rename(out_dir)
        if old is not None:
            shutil.rmtree(old)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [out_dir / n for n in names]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", metavar="NN_name.ipynb",
                        help="notebooks to copy (default: every notebook of the course)")
    parser.add_argument("--out", type=Path, default=OUT_DIR,
                        help=f"output folder, replaced as a whole (default: {OUT_DIR.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    try:
        written = write_student_copies(args.out, args.notebooks or None)
    except ValueError as error:  # StructureError too: one sentence, no traceback
        print(f"make_student: {error}", file=sys.stderr)
        return 2
    shown = args.out.resolve()
    shown = shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown
    print(f"{len(written)} student copies in {shown}/: hand these out before the exercise session.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
