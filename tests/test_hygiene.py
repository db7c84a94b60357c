"""Structure of every notebook: the skeleton in CONTRIBUTING.md, papermill parameters, stripped outputs, links."""

import re

import nbformat
import nbrun
import pytest

from helpers import colab, params

NOTEBOOKS = nbrun.present()
COMMON = ("SMOKE", "SEED", "RESULTS_PATH")


def load(name):
    return nbformat.read(nbrun.NOTEBOOKS / name, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def markdown(nb):
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_course_has_notebooks_in_order():
    assert NOTEBOOKS and NOTEBOOKS[0] == "00_environment_check.ipynb"
    on_disk = sorted(p.name for p in nbrun.NOTEBOOKS.glob("*.ipynb"))
    assert on_disk == NOTEBOOKS, f"notebooks not in the course list (tests/nbrun.py COURSE): {on_disk}"
    numbers = [int(n[:2]) for n in NOTEBOOKS]
    assert numbers == list(range(len(numbers))), f"numbering has a gap: {numbers}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_valid_nbformat_with_python_kernel(name):
    nb = load(name)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_outputs_are_stripped_except_nbval_reference_cells(name):
    checked = 0
    for cell in code_cells(load(name)):
        if cell.source.startswith("# NBVAL_CHECK_OUTPUT"):
            checked += 1
            assert cell.outputs and cell.execution_count and cell.metadata.get("keep_output"), (
                f"{name}: record reference outputs with tools/record_outputs.py: {cell.source[:60]!r}")
        else:
            assert not cell.outputs and cell.execution_count is None, f"{name}: stored output in {cell.source[:60]!r}"
    assert checked >= 1, f"{name}: mark at least one deterministic cell '# NBVAL_CHECK_OUTPUT'"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_title_badges_and_sections_follow_the_skeleton(name):
    nb = load(name)
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    number = name[:2]
    assert re.match(rf"# {number} · \S", first.source), f"{name}: first line must be '# {number} · Title'"
    assert len(re.findall(r"^# ", markdown(nb), flags=re.M)) == 1, f"{name}: exactly one H1"
    assert colab.colab_url(name) in first.source, f"{name}: Open in Colab badge missing or stale"
    assert colab.source_url(name) in first.source, f"{name}: source badge missing"
    assert colab.kaggle_url(name) in first.source, f"{name}: Open in Kaggle badge missing or stale"
    for heading in ("## What you will learn", "## Runs on", "## Prerequisites"):
        assert heading in first.source, f"{name}: '{heading}' missing from the first cell"
    text = markdown(nb)
    order = [text.find(h) for h in ("## Exercises", "## Summary", "## Solutions")]
    assert -1 not in order and order == sorted(order), f"{name}: needs Exercises, then Summary, then Solutions"
    assert not re.search(r"\b(simply|just)\b", text, flags=re.I), f"{name}: avoid 'simply'/'just' in prose"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_parameters_cell_holds_the_common_knobs(name):
    nb = load(name)
    tagged = [c for c in code_cells(nb) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{name}: exactly one cell tagged 'parameters'"
    assert code_cells(nb)[0] is tagged[0], f"{name}: the parameters cell is the first code cell"
    names = re.findall(r"^([A-Z_][A-Z0-9_]*)\s*=", tagged[0].source, flags=re.M)
    for common in COMMON:
        assert common in names, f"{name}: parameters cell lacks {common}"
    unruled = set(names) - set(params.RULES)
    assert not unruled, f"{name}: parameters without a validation rule in helpers/params.py: {unruled}"
    for line in tagged[0].source.splitlines():
        assert line.count("=") <= 1, f"{name}: papermill cannot parse a parameters line with two '=': {line!r}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_colab_cell_is_the_bootstrap_collapsed(name):
    cell = code_cells(load(name))[1]
    assert cell.source == colab.BOOTSTRAP_CELL, f"{name}: the second code cell must be helpers.colab.BOOTSTRAP_CELL"
    assert cell.metadata.get("cellView") == "form" and cell.metadata.get("jupyter", {}).get("source_hidden"), (
        f"{name}: the Colab cell must be collapsed (helpers.colab.BOOTSTRAP_METADATA)")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_setup_cell_imports_its_checks_then_calls_setup_with_every_parameter(name):
    nb = load(name)
    cells = code_cells(nb)
    setup = cells[2].source
    number = name[:2]
    assert setup.startswith(f"import helpers\nfrom helpers.check import nb{number} as check\n"), (
        f"{name}: the setup cell starts with 'import helpers' and 'from helpers.check import nb{number} as check'")
    names = re.findall(r"^([A-Z_][A-Z0-9_]*)\s*=", cells[0].source, flags=re.M)
    call = re.search(r"helpers\.setup\((.*?)\)", setup, flags=re.S)
    assert call, f"{name}: setup cell must call helpers.setup(...)"
    for param in names:
        assert f"{param}={param}" in call.group(1), f"{name}: helpers.setup is not given {param}"
    assert setup.find("helpers.setup(") < setup.find("import tensorflow"), (
        f"{name}: import TensorFlow after helpers.setup (it imports it quietly)")
    assert len([ln for ln in setup.splitlines() if ln.strip()]) <= 12, f"{name}: keep the setup cell to a few lines"
    sources = "\n".join(c.source for c in cells)
    assert "except ImportError" not in sources, f"{name}: a broken import must fail loudly, not vanish"
    assert "helpers.check." not in sources.replace("helpers.check import", ""), (
        f"{name}: call the checks through the notebook's module: check.name(answer)")


def helper_modules_used(nb) -> set[str]:
    """The helpers modules a notebook's code uses: helpers.X.y, from helpers import X, from helpers.X import."""
    code = "\n".join(c.source for c in code_cells(nb)[2:])
    used = set(re.findall(r"\bhelpers\.([a-z_]+)\b", code))
    used |= set(re.findall(r"^from helpers\.([a-z_]+) import", code, flags=re.M))
    for names in re.findall(r"^from helpers import ([\w, ]+)", code, flags=re.M):
        used |= {n.strip() for n in names.split(",")}
    used = {"session" if m in ("setup", "scratch_dir") else m for m in used}
    return used | {"session", "results", "check"}


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_setup_markdown_lists_every_helper_module_the_notebook_uses(name):
    import helpers

    nb = load(name)
    setup_md = next(c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## Setup"))
    listed = set(re.findall(r"`helpers\.([a-z_]+)`", setup_md))
    used = helper_modules_used(nb)
    assert used <= listed, f"{name}: the Setup section must list {sorted(used - listed)} ('Helpers used here: ...')"
    unknown = listed - set(helpers.__all__)
    assert not unknown, f"{name}: the Setup section lists modules that do not exist: {sorted(unknown)}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_exercises_have_checks_and_solutions(name):
    nb = load(name)
    sources = [c.source for c in code_cells(nb)]
    placeholders = [s for s in sources if re.search(r"(^\w+ = |^\s+)\.\.\.\s+# your code here", s, flags=re.M)]
    checks = [s for s in sources if re.search(r"^(feedback_\d+ = )?check\.\w+\(", s, flags=re.M)]
    assert len(placeholders) >= 2, f"{name}: at least two exercises with a `...  # your code here` placeholder"
    assert len(checks) >= 2 * len(placeholders), f"{name}: each exercise needs a check and a solution check"
    assert "results.save()" in sources[-1] and "exercises_solved" in sources[-1]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_links_to_the_previous_and_next_notebook(name):
    nb = load(name)
    index = nbrun.COURSE.index(name)
    text = markdown(nb)
    if index + 1 < len(nbrun.COURSE):
        nxt = nbrun.COURSE[index + 1]
        assert re.search(rf"\*\*Next:\*\* \[{nxt[:2]} · [^\]]+\]\({re.escape(nxt)}\)", text), (
            f"{name}: needs '**Next:** [{nxt[:2]} · Title]({nxt})'")
    if index > 0:
        previous = nbrun.COURSE[index - 1]
        assert f"]({previous})" in nb.cells[0].source, f"{name}: prerequisites must link {previous}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_code_cells_stay_short_and_offline(name):
    for cell in code_cells(load(name))[2:]:
        lines = [ln for ln in cell.source.splitlines() if ln.strip()]
        assert len(lines) <= 20, f"{name}: a {len(lines)}-line cell belongs in helpers: {cell.source[:60]!r}"
        assert "load_data(" not in cell.source and "tfds.load" not in cell.source, f"{name}: no downloads"
        assert "weights=\"imagenet\"" not in cell.source and "weights='imagenet'" not in cell.source


def recording_lines(source: str) -> list[str]:
    return [ln for ln in source.splitlines() if re.match(r"results(\[|\.update\()", ln)]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_results_recording_stays_out_of_the_way(name):
    """At most one results line per section, or a block under '# for the tests' at the section's end."""
    nb = load(name)
    sections, current = [], []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"^#{1,3} ", cell.source, flags=re.M):
            sections.append(current)
            current = []
        elif cell.cell_type == "code":
            current.append(cell.source)
    sections.append(current)
    for cells in sections:
        lines = [ln for src in cells for ln in recording_lines(src)]
        if len(lines) <= 1:
            continue
        block = cells[-1].split("# for the tests", 1)
        assert len(block) == 2 and len(recording_lines(block[1])) == len(lines), (
            f"{name}: {len(lines)} results lines in one section; keep one, or gather them at the section's "
            f"end under '# for the tests': {lines}")


# Words from how the course was written, not for learners: its planning documents and the post it started
# from. A source is named by its title or URL instead ("the blog post 'How GPU can Powerfully Speed Up ...'").
LEFTOVER_WORDS = re.compile(r"\bthe seed\b|\bseed's\b|design brief|\bgrew from\b|\bthe (?:course's )?brief\b",
                            re.IGNORECASE)


def learner_text() -> dict[str, str]:
    """Everything a learner reads: every notebook cell, the helpers (their printed sentences), README, CONTRIBUTING."""
    texts = {name: "\n".join(c.source for c in load(name).cells) for name in NOTEBOOKS}
    for path in [*sorted((nbrun.ROOT / "helpers").rglob("*.py")), nbrun.ROOT / "README.md",
                 nbrun.ROOT / "CONTRIBUTING.md"]:
        texts[str(path.relative_to(nbrun.ROOT))] = path.read_text()
    return texts


def test_no_authoring_leftovers_in_what_a_learner_reads():
    found = [f"{where}: {m.group(0)!r} in {text[max(0, m.start() - 40):m.end() + 40]!r}"
             for where, text in learner_text().items() for m in LEFTOVER_WORDS.finditer(text)]
    assert not found, "name the real source instead:\n" + "\n".join(found)


@pytest.mark.parametrize("leftover", ["the seed's snippet", "The article this course grew from says",
                                      "quoted in the course's design brief", "as the brief says"])
def test_the_leftover_words_pattern_catches_each_phrase(leftover):
    assert LEFTOVER_WORDS.search(leftover)
    assert not LEFTOVER_WORDS.search("SEED = 0  # seeds Python, NumPy and TensorFlow; the same seeds each run")
