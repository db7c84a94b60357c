"""Every reading function (a helper that returns the sentence interpreting a result) has property tests.

A reading function is a public function of `helpers` whose name ends in `_reading`, `_note`, `_line` or
`_lines`, or is `closing_note`. Its property tests live in a `tests/test_readings_<module>.py` file that
uses hypothesis and names the function.
"""

import inspect
import pkgutil
import re
from importlib import import_module
from pathlib import Path

import helpers

TESTS = Path(__file__).resolve().parent
READING = re.compile(r"(_reading|_note|_line|_lines)$|^closing_note$")
NOT_READINGS = {"cluster.json_lines"}  # parses a worker's JSON log lines; interprets nothing


def reading_functions() -> list[str]:
    found = []
    for info in pkgutil.iter_modules(helpers.__path__):
        if info.ispkg:
            continue
        module = import_module(f"helpers.{info.name}")
        for name, obj in vars(module).items():
            if READING.search(name) and not name.startswith("_") and inspect.isfunction(obj) \
                    and obj.__module__ == module.__name__:
                found.append(f"{info.name}.{name}")
    return sorted(set(found) - NOT_READINGS)


def test_reading_functions_are_found():
    names = reading_functions()
    assert {"pipelines.bound_reading", "timing.roofline_reading", "precision.speed_reading"} <= set(names)


def test_every_reading_function_has_property_tests():
    files = {p: p.read_text() for p in TESTS.glob("test_readings_*.py") if p.name != Path(__file__).name}
    missing = []
    for qualified in reading_functions():
        module, name = qualified.split(".")
        if not any("hypothesis" in text and re.search(rf"\b{name}\b", text) for text in files.values()):
            missing.append(qualified)
    assert not missing, f"reading functions without property tests in tests/test_readings_*.py: {missing}"
