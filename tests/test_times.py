"""One source for notebook times: benchmarks/times.json, quoted by the README, the notebooks and RESULTS.md."""

import json
import re
import sys

import nbrun
import pytest

sys.path.insert(0, str(nbrun.ROOT / "benchmarks"))
import notebook_times  # noqa: E402

TIMES = notebook_times.load()


def test_times_json_has_both_cpu_paths_for_every_notebook():
    assert set(TIMES["learner_s"]) == set(nbrun.present())
    for name, seconds in TIMES["learner_s"].items():
        assert set(seconds) == set(notebook_times.PATHS), name
        assert all(s > 0 for s in seconds.values()), name
    assert TIMES["measured"] and "cores" in TIMES["machine"]


@pytest.mark.parametrize("name", nbrun.present())
def test_the_notebook_and_the_readme_quote_times_json(name):
    first = json.loads((nbrun.NOTEBOOKS / name).read_text())["cells"][0]
    bullets = notebook_times.TIME_BULLET.findall("".join(first["source"]))
    assert bullets == [notebook_times.time_line(name, TIMES)], f"{name}: run benchmarks/notebook_times.py --sync"
    row = notebook_times.readme_row(notebook_times.README.read_text(), name[:2])
    assert f"| {notebook_times.readme_cell(name, TIMES)} |" in row, f"README row {name[:2]}: run --sync"


def test_results_md_quotes_times_json():
    assert "\n".join(notebook_times.results_table(TIMES)) in notebook_times.RESULTS.read_text()


def test_sync_rewrites_a_stale_figure(tmp_path, monkeypatch):
    stale = json.loads(json.dumps(TIMES))
    name = nbrun.present()[0]
    stale["learner_s"][name]["eigen"] += 100
    assert notebook_times.time_line(name, stale) != notebook_times.time_line(name, TIMES)
    readme = tmp_path / "README.md"
    readme.write_text(notebook_times.README.read_text())
    results = tmp_path / "RESULTS.md"
    results.write_text(notebook_times.RESULTS.read_text())
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for n in nbrun.present():
        (notebooks / n).write_text((nbrun.NOTEBOOKS / n).read_text())
    monkeypatch.setattr(notebook_times, "README", readme)
    monkeypatch.setattr(notebook_times, "RESULTS", results)
    monkeypatch.setattr(nbrun, "NOTEBOOKS", notebooks)
    assert notebook_times.sync(stale) == [name, "README.md", "benchmarks/RESULTS.md"]
    assert notebook_times.time_line(name, stale) in (notebooks / name).read_text().replace("\\\\", "\\")
    assert notebook_times.sync(stale) == []  # a second sync changes nothing


STRAY_TIME = re.compile(r"\d+(?:-\d+)? s (?:on a|under papermill|when idle|while other)|learner run took|"
                        r"smoke mode (?:about )?\d", re.IGNORECASE)


@pytest.mark.parametrize("name", nbrun.present())
def test_runs_on_gives_no_time_but_the_time_line(name):
    first = "".join(json.loads((nbrun.NOTEBOOKS / name).read_text())["cells"][0]["source"])
    runs_on = first[first.index("## Runs on"):]
    stray = STRAY_TIME.findall(notebook_times.TIME_BULLET.sub("", runs_on))
    assert not stray, f"{name}: a time outside the '- **Time**:' line, which quotes benchmarks/times.json: {stray}"
