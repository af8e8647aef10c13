"""The function spans triage fits tracebacks to, against the real sglang wheels (0.5.18 - 0.5.23).

``ppaux/data/releases.json``'s ``function_spans`` are re-read here from each wheel's files with
``ast`` (the first and last line of every listed function), so a wrong or missing span fails.
"""

from __future__ import annotations

import ast
import json
import re
import zipfile
from importlib import resources

import pytest
import wheels

from ppaux.sglang.releases import fitting_releases

pytestmark = pytest.mark.wheels

VERSIONS = ["0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"]


def _table() -> dict:
    text = resources.files("ppaux").joinpath("data/releases.json").read_text("utf-8")
    return json.loads(text)["function_spans"]


def _spans(source: str, rule: str) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and (
                rule == "*" or re.match(rule, child.name)
            ):
                found[prefix + child.name] = [child.lineno, child.end_lineno]

    walk(ast.parse(source), "")
    return found


@pytest.mark.parametrize("version", VERSIONS)
def test_function_spans_are_the_wheels(version):
    table = _table()
    with zipfile.ZipFile(wheels.sglang_wheel(version)) as wheel:
        names = set(wheel.namelist())
        expected = {
            file: _spans(wheel.read(f"sglang/{file}").decode("utf-8"), rule)
            for file, rule in table["files"].items()
            if f"sglang/{file}" in names
        }
    assert table["releases"][version] == expected


def test_the_pop_raise_of_each_release_fits_it():
    for version in VERSIONS[1:]:
        with zipfile.ZipFile(wheels.sglang_wheel(version)) as wheel:
            source = wheel.read("sglang/srt/sampling/sampling_observer_pp.py").decode("utf-8")
        line = next(
            n
            for n, text in enumerate(source.splitlines(), 1)
            if 'raise RuntimeError("received a non-tensor auxiliary PP output")' in text
        )
        fits = fitting_releases(
            "srt/sampling/sampling_observer_pp.py", line, "pop_auxiliary_output_from_pp_tensors"
        )
        assert fits is not None and version in fits
