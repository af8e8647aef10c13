"""The fast tier's list of slow functions names only functions that exist."""

from __future__ import annotations

import ast
import re

from conftest import SLOW_TESTS, slow_tests
from helpers import REPO


def test_every_slow_function_exists():
    defined: dict[str, set[str]] = {}
    missing = []
    for entry in sorted(slow_tests()):
        path, _, function = entry.partition("::")
        if path not in defined:
            file = REPO / path
            tree = ast.parse(file.read_text()) if file.is_file() else ast.Module([], [])
            defined[path] = {
                node.name
                for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            }
        if function not in defined[path]:
            missing.append(entry)
    assert missing == [], f"{SLOW_TESTS.name} names functions that do not exist"


def test_the_list_is_sorted_and_names_test_functions():
    entries = [line for line in SLOW_TESTS.read_text().splitlines() if not line.startswith("#")]
    assert entries == sorted(entries)
    assert all(e.startswith("tests/test_") and "::test_" in e for e in entries)


def test_no_test_module_marks_itself_fast():
    # The fast tier is what conftest.py leaves after the slow list and the tiers; a module that
    # marks a test fast itself keeps a slow one in the tier.
    marking = [
        path.name
        for path in sorted((REPO / "tests").glob("test_*.py"))
        if re.search(r"pytest\.mark\.fast\b", path.read_text())
    ]
    assert marking == []


def _slow_tests_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("slow_tests", REPO / "scripts" / "slow_tests.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_reads_wall_time_or_the_cpu_property(tmp_path):
    """Wall time is the case's ``time``; ``cpu`` is its property of that name (as
    tests/conftest.py writes it), the longest case of a function counting, and a case without
    the property is not measured by CPU."""
    junit = tmp_path / "run.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="test_f[1]" time="0.100">'
        '<properties><property name="cpu" value="0.300" /></properties></testcase>'
        '<testcase classname="tests.test_a" name="test_f[2]" time="0.700">'
        '<properties><property name="cpu" value="0.050" /></properties></testcase>'
        '<testcase classname="tests.test_b" name="test_g" time="0.900" />'
        "</testsuite></testsuites>"
    )
    script = _slow_tests_script()
    assert script.measured([str(junit)]) == {
        "tests/test_a.py::test_f": 0.7,
        "tests/test_b.py::test_g": 0.9,
    }
    assert script.measured([str(junit)], cpu=True) == {"tests/test_a.py::test_f": 0.3}
    # Together, the two cases of test_f spent 0.35 s: written by hand from the file above.
    assert script.measured([str(junit)], cpu=True, total=True) == {"tests/test_a.py::test_f": 0.35}
