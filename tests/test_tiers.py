"""The fast tier's list of slow functions names only functions that exist."""

from __future__ import annotations

import ast

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
