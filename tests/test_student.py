"""Classroom copies (tools/make_student.py): no solutions, every exercise and check kept, a tally that still works.

The unit tests read every real notebook and made-up ones; they take about a second in all and run in
``make test``. The run test executes each student copy under papermill in smoke mode, as a learner who
answers nothing would; it costs about a smoke run of the course, so it runs only when
``COURSE_STUDENT_RUN=1`` (``make test-student``), one notebook by name with ``-k 04_``.
"""

from __future__ import annotations

import ast
import copy
import doctest
import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from helpers.check._feedback import Feedback, not_filled, returned_none
from helpers.colab import BOOTSTRAP_CELL, BOOTSTRAP_TITLE
from tests import nbrun

sys.path.insert(0, str(nbrun.ROOT / "tools"))
import make_student  # noqa: E402
from make_student import StructureError, student_copy, write_student_copies  # noqa: E402

NAMES = nbrun.present()


def _src(cell: dict) -> str:
    return make_student._source(cell)


def _solutions_at(nb: dict) -> int:
    return next(i for i, c in enumerate(nb["cells"])
                if c["cell_type"] == "markdown" and re.search(r"^## Solutions\s*$", _src(c), re.MULTILINE))


def _last_check(cell: dict) -> str | None:
    if cell["cell_type"] != "code":
        return None
    body = ast.parse(make_student._python(_src(cell))).body
    if not body:
        return None
    last = body[-1]
    if len(body) > 1 and isinstance(last, ast.Expr) and isinstance(last.value, ast.Name):
        last = body[-2]  # the copy's feedback_N = check.<name>(...), then feedback_N shown
    if isinstance(last, ast.Assign):
        last = ast.Expr(last.value)
    return make_student._check_call(last)


@pytest.fixture(scope="module")
def pairs() -> dict[str, tuple[dict, dict]]:
    """Each real notebook and its student copy."""
    out = {}
    for name in NAMES:
        nb = json.loads((nbrun.NOTEBOOKS / name).read_text(encoding="utf-8"))
        out[name] = (nb, student_copy(nb, name))
    return out


# --- every real notebook ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_copy_has_no_solution_cell_and_no_solutions_heading(pairs, name):
    nb, student = pairs[name]
    text = "\n".join(_src(c) for c in student["cells"])
    assert not re.search(r"\bsolution_\d+\b", text)
    assert "## Solutions" not in text
    assert "Try the exercises first" not in text
    dropped = [c for c in nb["cells"][_solutions_at(nb) + 1:-1]]
    assert dropped and all(c["id"] not in {s["id"] for s in student["cells"]} for c in dropped)


@pytest.mark.parametrize("name", NAMES)
def test_copy_keeps_every_cell_before_the_solutions_and_every_check(pairs, name):
    nb, student = pairs[name]
    before = [c["id"] for c in nb["cells"][:_solutions_at(nb) + 1]]
    kept = [c["id"] for c in student["cells"][:-1]]
    assert kept == before  # same cells, same order, same ids (the Solutions cell keeps its Summary part)
    original_checks = [f for c in nb["cells"][:_solutions_at(nb)] if (f := _last_check(c))]
    copy_checks = [f for c in student["cells"] if (f := _last_check(c))]
    assert copy_checks == original_checks and len(copy_checks) == student["metadata"]["student_copy"]["exercises"]
    for old, new in zip(nb["cells"], student["cells"][:-1], strict=False):
        if old["cell_type"] == "code" and not _last_check(old):  # exercise cells to fill in, and every other cell
            assert _src(new) == "\n".join(x for x in _src(old).splitlines() if x.strip() != "# NBVAL_CHECK_OUTPUT")


@pytest.mark.parametrize("name", NAMES)
def test_every_feedback_the_tally_reads_is_assigned_by_a_check_cell_of_the_copy(pairs, name):
    _, student = pairs[name]
    tally = ast.parse(_src(student["cells"][-1]))
    read = {n.id for n in ast.walk(tally) if isinstance(n, ast.Name) and n.id.startswith("feedback_")}
    assigned = {}
    for cell in student["cells"][:-1]:
        if cell["cell_type"] == "code":
            for st in ast.parse(make_student._python(_src(cell))).body:
                if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                    if st.targets[0].id.startswith("feedback_"):
                        assigned[st.targets[0].id] = make_student._check_call(ast.Expr(st.value))
    assert read and read == set(assigned)
    assert all(assigned.values())  # each from check.<name>(the learner's answer)
    assert "exercises_solved" in _src(student["cells"][-1]) and "not filled in yet" in _src(student["cells"][-1])


@pytest.mark.parametrize("name", NAMES)
def test_no_line_unique_to_a_solution_is_left_in_the_copy(pairs, name):
    nb, student = pairs[name]
    at = _solutions_at(nb)
    solutions = nb["cells"][at + 1:-1]
    elsewhere = {line.strip() for c in nb["cells"][:at] for line in _src(c).splitlines()}
    unique = {line.strip() for c in solutions for line in _src(c).splitlines()
              if line.strip() and not line.strip().startswith("#")
              and not re.fullmatch(r"feedback_\d+", line.strip())} - elsewhere  # showing feedback_N tells nothing
    assert unique
    copy_lines = {line.strip() for c in student["cells"] for line in _src(c).splitlines()}
    assert not unique & copy_lines
    # nor the answer's expression in any text (what a solution returns, or assigns to solution_N), unless the
    # lesson above the exercises shows it already
    text = re.sub(r"\s+", "", "\n".join(_src(c) for c in student["cells"]))
    taught = re.sub(r"\s+", "", "\n".join(_src(c) for c in nb["cells"][:at]))
    for cell in solutions:
        for node in ast.walk(ast.parse(make_student._python(_src(cell)))):
            named = isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "").startswith("solution_")
            value = node.value if isinstance(node, ast.Return) or named else None
            if value is not None and not isinstance(value, ast.Name):
                shown = re.sub(r"\s+", "", ast.unparse(value))
                assert len(shown) < 8 or shown in taught or shown not in text, shown


@pytest.mark.parametrize("name", NAMES)
def test_a_constant_answer_is_not_printed_anywhere_in_the_copy(pairs, name):
    nb, student = pairs[name]
    text = "\n".join(_src(c) for c in student["cells"])
    for cell in nb["cells"][_solutions_at(nb) + 1:-1]:
        for st in ast.parse(make_student._python(_src(cell))).body:
            if isinstance(st, ast.Assign) and getattr(st.targets[0], "id", "").startswith("solution_"):
                try:
                    value = eval(compile(ast.Expression(st.value), "<solution>", "eval"), {"__builtins__": {}})
                except Exception:  # noqa: BLE001 - not a constant: the line test above covers it
                    continue
                assert str(value) not in text and f"{value:,}" not in text


@pytest.mark.parametrize("name", NAMES)
def test_copy_is_stripped_marked_and_valid(pairs, name):
    nb, student = pairs[name]
    nbformat.validate(nbformat.from_dict(copy.deepcopy(student)))
    ids = [c["id"] for c in student["cells"]]
    assert len(ids) == len(set(ids)) and set(ids) <= {c["id"] for c in nb["cells"]}
    for cell in student["cells"]:
        assert "keep_output" not in cell["metadata"]
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
            assert "NBVAL_CHECK_OUTPUT" not in _src(cell)
    assert student["metadata"]["student_copy"]["full_notebook"] == f"notebooks/{name}"
    first = _src(student["cells"][0]).splitlines()
    assert first[0].startswith("> **Student copy**") and "Your instructor has the full notebook" in first[0]
    assert any(line.startswith(f"# {name[:2]} · ") for line in first)  # the title follows
    assert nb["cells"][0]["source"][0].startswith(f"# {name[:2]} · ")  # the source notebook is not changed
    tally = [line for line in _src(student["cells"][-1]).splitlines() if line.strip()]
    assert len(tally) <= 20


@pytest.mark.parametrize("name", NAMES)
def test_copy_fetches_the_course_on_colab_and_kaggle_and_its_links_lead_somewhere(pairs, name):
    _, student = pairs[name]
    boot = [c for c in student["cells"] if _src(c).startswith(BOOTSTRAP_TITLE)]
    assert len(boot) == 1 and _src(boot[0]) == BOOTSTRAP_CELL
    here = nbrun.ROOT / "build" / "student"
    for cell in student["cells"]:
        if cell["cell_type"] == "markdown":
            for target in re.findall(r"\]\((?!https?:|#)([^)\s]+)\)", _src(cell)):
                path = target.split("#")[0]
                sibling = re.fullmatch(r"\d\d_\w+\.ipynb", path)
                assert (path in NAMES) if sibling else (here / path).resolve().exists(), target


def test_the_tally_counts_what_the_checks_say_about_unanswered_exercises():
    assert not_filled(...).message.startswith(make_student.UNANSWERED)
    assert returned_none("f").message.startswith(make_student.UNANSWERED)
    scope = {"feedback_1": not_filled(...), "feedback_2": Feedback(True, "Right."),
             "feedback_3": Feedback(False, "Not yet. Off by one."), "results": {}}
    scope["results"] = type("R", (dict,), {"save": lambda self: None})()
    printed = []
    scope["print"] = printed.append
    exec(make_student.tally_source(["feedback_1", "feedback_2", "feedback_3"]), scope)
    assert printed[0] == "Exercises: 1 of 3 solved, 1 not filled in yet, 1 to fix (read their checks above)."
    assert scope["results"] == {"exercises_solved": False, "exercises_unanswered": 1}
    with pytest.raises(ValueError, match="feedbacks=.*feedback_1"):
        make_student.tally_source(["answer_1"])


def test_the_module_examples_hold():
    assert doctest.testmod(make_student).failed == 0


# --- made-up notebooks: what is refused ----------------------------------------------------------------------------

def _cell(kind: str, source: str, i: int) -> dict:
    cell = {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": source}
    if kind == "code":
        cell.update(outputs=[], execution_count=None)
    return cell


GOOD = [
    ("markdown", "# 00 · Made up\n\nOne sentence."),
    ("code", "SMOKE = False"),
    ("markdown", "## Exercises\n\n### Exercise 1"),
    ("code", "def f(x):\n    ...  # your code here"),
    ("code", "# NBVAL_CHECK_OUTPUT\ncheck.f(f)"),
    ("markdown", "### Exercise 2"),
    ("code", "answer_2 = ...  # your code here"),
    ("code", "check.g(\n    answer_2,\n)"),
    ("markdown", "## Summary\n\n- A point.\n\n## Solutions\n\nTry the exercises first."),
    ("code", "def solution_1(x):\n    return x * 1234\n\n\nfeedback_1 = check.f(solution_1)\nfeedback_1"),
    ("code", "solution_2 = 40 + 2\nfeedback_2 = check.g(solution_2)\nfeedback_2"),
    ("code", 'results["exercises_solved"] = all([feedback_1.ok, feedback_2.ok])\nresults.save()'),
]
NAME = "00_environment_check.ipynb"


def _made_up(cells=GOOD) -> dict:
    return {"cells": [_cell(k, s, i) for i, (k, s) in enumerate(cells)], "metadata": {}, "nbformat": 4,
            "nbformat_minor": 5}


def test_a_made_up_notebook_of_the_skeleton_is_copied():
    student = student_copy(_made_up(), NAME)
    sources = [_src(c) for c in student["cells"]]
    assert sources[4] == "feedback_1 = check.f(f)\nfeedback_1"
    assert sources[7] == "feedback_2 = check.g(\n    answer_2,\n)\nfeedback_2"
    assert sources[8] == "## Summary\n\n- A point."
    assert len(sources) == 10 and "x * 1234" not in "".join(sources)


REFUSED = {
    "no Solutions heading": (lambda c: c.__setitem__(8, ("markdown", "## Summary\n\n- A point.")),
                             "no markdown line '## Solutions'"),
    "no Exercises heading": (lambda c: c.__setitem__(2, ("markdown", "### Exercise 1")),
                             "no markdown line '## Exercises'"),
    "two Solutions headings": (lambda c: c.insert(10, ("markdown", "## Solutions")), "more than one"),
    "Solutions before Exercises": (lambda c: (c.__setitem__(2, ("markdown", "## Solutions\n\n### Exercise 1")),
                                              c.__setitem__(8, ("markdown", "## Summary\n\n## Exercises"))),
                                   "'## Solutions' comes before '## Exercises'"),
    "a solution cell before the exercises": (lambda c: c.insert(2, ("code", "solution_1 = 3")),
                                             "a solution cell before the exercises"),
    "a feedback assigned before the Solutions": (lambda c: c.__setitem__(4, ("code", "feedback_1 = check.f(f)")),
                                                 "a solution cell before the exercises"),
    "markdown among the solutions": (lambda c: c.insert(10, ("markdown", "Why this works: ...")),
                                     "is markdown, not a solution cell"),
    "a solution cell without its feedback": (lambda c: c.__setitem__(10, ("code", "solution_2 = 42")),
                                             "is not a solution cell"),
    "no tally at the end": (lambda c: c.pop(), "is not the tally"),
    "the tally reads a feedback no solution defines": (
        lambda c: c.__setitem__(11, ("code", 'results["exercises_solved"] = all([feedback_1.ok, feedback_3.ok])')),
        "the tally reads ['feedback_1', 'feedback_3']"),
    "a solution whose check has no check cell": (lambda c: c.__setitem__(7, ("code", "print(answer_2)")),
                                                 "no check cells"),
    "two check cells for one exercise": (lambda c: c.insert(5, ("code", "check.f(f)")), "2 check cells"),
    "a check cell without a solution": (lambda c: c.insert(5, ("code", "check.h(f)")),
                                        "check.h(...) (cell 5) has no solution cell"),
    "another heading after Solutions in its cell": (
        lambda c: c.__setitem__(8, ("markdown", "## Summary\n\n## Solutions\n\n### Answer 1\n\nx * 1234")),
        "another heading follows"),
    "an empty Solutions section": (lambda c: c.__delitem__(slice(9, None)), "no solution cells and no tally"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_structure_it_does_not_recognise_is_refused_with_the_notebook_and_what_is_missing(case):
    change, phrase = REFUSED[case]
    cells = list(GOOD)
    change(cells)
    with pytest.raises(StructureError) as caught:
        student_copy(_made_up(cells), NAME)
    assert str(caught.value).startswith(f"{NAME}: ") and phrase in str(caught.value)


def test_refused_names_and_a_refused_notebook_write_nothing(tmp_path):
    with pytest.raises(ValueError, match=r"name='nb.ipynb': use one of 00_environment_check\.ipynb"):
        student_copy(_made_up(), "nb.ipynb")
    with pytest.raises(ValueError, match=r"names=\['10_x.ipynb'\]: use notebooks of the course: 00_"):
        write_student_copies(tmp_path / "out", ["10_x.ipynb"])
    source = tmp_path / "notebooks"
    source.mkdir()
    (source / NAME).write_text(json.dumps(_made_up()))
    out = tmp_path / "student"
    assert write_student_copies(out, [NAME], source=source) == [out / NAME]
    before = (out / NAME).read_text()
    assert json.loads(before)["metadata"]["student_copy"]["exercises"] == 2
    broken = _made_up(GOOD[:8])  # no Solutions section
    (source / "01_deep_learning_basics.ipynb").write_text(json.dumps(broken))
    with pytest.raises(StructureError, match="01_deep_learning_basics.ipynb: no markdown line '## Solutions'"):
        write_student_copies(out, [NAME, "01_deep_learning_basics.ipynb"], source=source)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notebooks", "student"]  # no temporary folder left
    assert [p.name for p in out.iterdir()] == [NAME] and (out / NAME).read_text() == before


def test_the_command_line_replaces_the_folder_and_says_what_is_wrong(tmp_path, capsys):
    out = tmp_path / "handout"
    out.mkdir()
    (out / "stale.ipynb").write_text(json.dumps({"metadata": {"student_copy": {}}}))  # an older copy: replaced
    assert make_student.main(["--out", str(out), "01_deep_learning_basics.ipynb", "00_environment_check.ipynb"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["00_environment_check.ipynb", "01_deep_learning_basics.ipynb"]
    assert oct(out.stat().st_mode & 0o777) == "0o755"
    assert "2 student copies in" in capsys.readouterr().out
    assert make_student.main(["--out", str(out), "1_basics.ipynb"]) == 2
    assert "names=['1_basics.ipynb']: use notebooks of the course" in capsys.readouterr().err
    (out / "my_answers.ipynb").write_text(json.dumps({"metadata": {}}))  # not a student copy: never deleted
    assert make_student.main(["--out", str(out)]) == 2
    assert "out_dir=" in capsys.readouterr().err and (out / "my_answers.ipynb").exists()
    assert make_student.main(["--out", str(nbrun.NOTEBOOKS)]) == 2 and "out_dir=" in capsys.readouterr().err


# --- each copy run as a learner who answers nothing ----------------------------------------------------------------

RUN = os.environ.get("COURSE_STUDENT_RUN") == "1"


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> Path:
    """The student copies, in a folder whose name has a space (as ``~/Documents/ML course/``)."""
    folder = tmp_path_factory.mktemp("class room") / "student"
    write_student_copies(folder)
    return folder


@pytest.mark.notebook
@pytest.mark.skipif(not RUN, reason="runs every student copy (about a smoke run of the course): make test-student")
@pytest.mark.parametrize("name", NAMES)
def test_student_copy_runs_clean_and_every_check_says_not_answered_yet(copies, name, tmp_path):
    import papermill as pm

    workdir = tmp_path / "run"
    workdir.mkdir()
    results_path = workdir / "results.json"
    kernel_env = nbrun.kernel_environment(workdir)  # no course on PYTHONPATH: helpers as make lab installs them
    kernel_env.pop("COURSE_STUDENT_RUN", None)
    children_before = {p.pid for p in psutil.Process().children(recursive=True)}
    start = time.perf_counter()
    with nbrun.kernel_environ(kernel_env):
        nbrun.once_more_if_the_kernel_dies(lambda: pm.execute_notebook(
            str(copies / name), str(workdir / name), parameters={"SMOKE": True, "RESULTS_PATH": str(results_path)},
            cwd=str(copies), kernel_name="python3", progress_bar=False, execution_timeout=600), workdir / name)
    seconds = time.perf_counter() - start
    executed = nbformat.read(workdir / name, as_version=4)
    assert nbrun.stderr_text(executed) == ""
    assert not [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    n = json.loads((copies / name).read_text())["metadata"]["student_copy"]["exercises"]
    checks = [c for c in executed.cells if c.cell_type == "code" and re.search(r"^feedback_\d+ = check\.", c.source,
                                                                                  re.MULTILINE)]
    assert len(checks) == n
    assert not {p.pid for p in psutil.Process().children(recursive=True)} - children_before  # nothing left running
    results = json.loads(results_path.read_text())
    assert results["exercises_solved"] is False
    print(f"{name}: {seconds:.1f} s")
    for cell in checks:  # what the learner reads under each check, and the count at the end
        shown = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        assert shown.startswith(f"❌ {make_student.UNANSWERED}"), (cell.id, shown)
    tally = "".join(o.get("text", "") for o in executed.cells[-1].outputs)
    assert f"Exercises: 0 of {n} solved, {n} not filled in yet, 0 to fix" in tally
    assert results["exercises_unanswered"] == n


@pytest.mark.parametrize("name", NAMES)
def test_no_cell_of_a_copy_leads_to_the_full_notebook_and_its_solutions(pairs, name):
    """An instructor's review: the copy's first line and its Colab/Kaggle badges opened the full notebook."""
    nb, student = pairs[name]
    text = "\n".join(_src(c) for c in student["cells"])
    for leak in (f"notebooks/{name}", "colab.research.google.com/github", "kaggle.com/kernels/welcome",
                 "with the solutions", "colab-badge.svg", "open-in-kaggle.svg"):
        assert leak not in text, f"{name}: the copy still has {leak!r}"
    assert "colab-badge.svg" in _src(nb["cells"][0]), "the full notebook keeps its badges"


# Lines of the lessons where "solution" means the optimum a training run reaches, not an exercise's answer.
SOLUTION_IN_A_LESSON = {"ends further from a good solution."}


@pytest.mark.parametrize("name", NAMES)
def test_no_line_of_a_copy_mentions_solutions_and_the_title_keeps_its_text(pairs, name):
    _, student = pairs[name]
    for cell in student["cells"]:
        for line in _src(cell).splitlines():
            assert "solution" not in line.lower() or line.strip() in SOLUTION_IN_A_LESSON, (cell["id"], line)
    title = _src(student["cells"][0])
    assert "Open in Colab" not in title and "Open in Kaggle" not in title and "View source" not in title
    assert f"\n# {name[:2]} · " in title and "## What you will learn" in title and "\n\n\n" not in title
    assert "upload it to Colab" in title and "JupyterLab" in title  # how a copy handed out as a file is opened
