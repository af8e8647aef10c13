"""Modules and functions stay small enough to read whole.

A module of ``ppaux`` or ``ppaux_cli`` holds at most 500 lines; a function at most 80, unless its
docstring says why it is longer in a paragraph that starts ``Long on purpose:``. The few that
are over today are listed below with their reason; a new one fails here, and one that shrank back
must leave the list.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from tests.helpers import REPO

MODULE_LINES = 500
FUNCTION_LINES = 80
REASON = "Long on purpose:"

#: Modules over MODULE_LINES lines, with why they are kept whole.
LONG_MODULES: dict[str, str] = {}
#: Functions over FUNCTION_LINES lines whose docstring does not say why, with the reason.
LONG_FUNCTIONS: dict[str, str] = {}


def _sources() -> list[Path]:
    return sorted(p for root in ("ppaux", "ppaux_cli") for p in (REPO / root).rglob("*.py"))


def long_functions(source: str) -> list[tuple[str, int]]:
    """(name, lines) of each function in ``source`` over FUNCTION_LINES lines, decorators left
    out, whose docstring has no ``Long on purpose:`` paragraph."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            doc = ast.get_docstring(node) or ""
            said = any(p.strip().startswith(REASON) for p in doc.split("\n\n"))
            if length > FUNCTION_LINES and not said:
                found.append((node.name, length))
    return found


def test_modules_stay_under_the_size():
    over = {}
    for path in _sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MODULE_LINES:
            over[path.relative_to(REPO).as_posix()] = lines
    new = sorted(set(over) - set(LONG_MODULES))
    assert not new, f"modules over {MODULE_LINES} lines (split them by job): {over}"
    shrunk = sorted(set(LONG_MODULES) - set(over))
    assert not shrunk, f"no longer over {MODULE_LINES} lines, take them off LONG_MODULES: {shrunk}"


def test_long_functions_say_why():
    over = {}
    for path in _sources():
        name = path.relative_to(REPO).as_posix()
        for function, lines in long_functions(path.read_text(encoding="utf-8")):
            over[f"{name}:{function}"] = lines
    new = sorted(set(over) - set(LONG_FUNCTIONS))
    assert not new, (
        f"functions over {FUNCTION_LINES} lines with no '{REASON}' paragraph in their "
        f"docstring: {[(n, over[n]) for n in new]}"
    )
    shrunk = sorted(set(LONG_FUNCTIONS) - set(over))
    assert not shrunk, f"take them off LONG_FUNCTIONS, they are within the rule now: {shrunk}"


def _function(name: str, body_lines: int, doc: str) -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(body_lines))
    return f'def {name}():\n    """{doc}"""\n{body}'


def test_the_function_rule_counts_lines_and_reads_the_reason():
    # 1 line of def, 1 of docstring, then the body: 78 body lines make 80, 79 make 81.
    source = "\n".join(
        [
            _function("at_the_size", 78, "Fits."),
            _function("one_over", 79, "Does not fit."),
            _function("explained", 200, "Reads a thing.\n\n    Long on purpose: one walk."),
            _function("reason_not_a_paragraph", 100, "Reads a thing. Long on purpose: no."),
        ]
    )
    assert long_functions(textwrap.dedent(source)) == [
        ("one_over", 81),
        ("reason_not_a_paragraph", 102),
    ]
