"""``ppaux rules`` and ``ppaux explain``: the catalogue in text, JSON and Markdown."""

from __future__ import annotations

import json
import re

import pytest
from helpers import cli

from ppaux.report.catalogue import RULES
from ppaux.report.formats.rules import RULES_SCHEMA, markdown_code, markdown_text

run = cli


@pytest.mark.parametrize("code", sorted(RULES))
def test_every_rule_can_be_explained_in_full(code):
    rule = RULES[code]
    assert rule.summary and rule.explanation and rule.causes and rule.fix and rule.area
    assert rule.example, f"{code} has no example for 'ppaux explain'"
    assert re.fullmatch(r"PP[1-9]\d\d", code) and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    text = run("explain", code.lower(), env={"COLUMNS": "200"}).stdout
    for heading in ("What it means:", "Likely causes:", "Fix:", "Example:"):
        assert f"\n{heading}\n" in text
    assert text.startswith(f"{code} {rule.name} ({rule.severity.value})\n{rule.summary}\n")
    # At 80 columns the example is broken between its words only: its lines, joined, give it.
    narrow = run("explain", code.lower(), env={"COLUMNS": "80"}).stdout
    example = narrow.split("\nExample:\n", 1)[1].splitlines()
    assert example[0].startswith("  ") and all(line.startswith("    ") for line in example[1:])
    assert " ".join(line.strip() for line in example) == " ".join(rule.example.split())


def test_rule_names_are_unique():
    names = [r.name for r in RULES.values()]
    assert len(names) == len(set(names))


def test_rules_text_lists_every_rule_once():
    result = run("rules", env={"COLUMNS": "200"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["code", "severity", "area", "name", "summary"]
    assert [line.split()[0] for line in lines[1:]] == sorted(RULES)
    # Columns are padded to the widest cell of each; the first rows, written out.
    assert lines[:3] == [
        "code   severity  area      name                         summary",
        "PP101  error     payload   aux-non-tensor               "
        "A value under an auxiliary key is not a tensor.",
        "PP102  warning   payload   aux-empty-name               "
        "A key is the bare auxiliary prefix, with an empty name.",
    ]
    for line in lines[1:]:
        code, severity, area, name, summary = line.split(maxsplit=4)
        rule = RULES[code]
        assert (severity, area, name, summary) == (
            rule.severity.value,
            rule.area,
            rule.name,
            rule.summary,
        )


def test_rules_text_wraps_each_summary_under_its_column_or_its_rule():
    """At 100 columns each summary is wrapped beside its rule, under the summary column; at 80
    there is no room for that column, and each goes on the lines under its rule."""
    for columns, indent in ((100, 56), (80, 7)):
        lines = run("rules", env={"COLUMNS": str(columns)}).stdout.splitlines()
        assert all(len(line) <= columns for line in lines)
        summaries: dict[str, list[str]] = {}
        first = next(i for i, line in enumerate(lines) if line.startswith("PP"))
        assert lines[:first] == (
            [lines[0][:indent] + "summary"] if columns == 100 else [lines[0], " " * 7 + "summary"]
        )
        code = ""
        for line in lines[first:]:
            if line.startswith("PP"):
                code = line.split()[0]
                summaries[code] = line[indent:].split() if columns == 100 else []
                continue
            assert line.startswith(" " * indent) and line[indent] != " ", line
            summaries[code] += line.split()
        assert sorted(summaries) == sorted(RULES)
        for code, words in summaries.items():
            assert words == RULES[code].summary.split(), code


def test_rules_json_document():
    result = run("rules", "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["schema"] == RULES_SCHEMA and doc["tool"]["name"] == "ppaux"
    assert [r["code"] for r in doc["rules"]] == sorted(RULES)
    first = doc["rules"][0]
    rule = RULES[first["code"]]
    assert first == {
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity.value,
        "area": rule.area,
        "summary": rule.summary,
        "explanation": rule.explanation,
        "causes": list(rule.causes),
        "fix": rule.fix,
        "example": rule.example or None,
        "sglang_error": rule.sglang_error,
        "inconclusive": rule.inconclusive,
        "always_reported": rule.always_reported,
    }


def test_rules_select_and_its_errors():
    result = run("rules", "--select", "PP2", "-f", "json")
    assert [r["code"] for r in json.loads(result.stdout)["rules"]] == sorted(
        c for c in RULES if c.startswith("PP2")
    )
    result = run("rules", "--select", "XX")
    assert result.exit_code == 2
    assert (
        result.stderr
        == "ppaux: error: --select: 'XX' matches no rule code; 'ppaux rules' lists them\n"
    )


def test_explain_json_markdown_and_unknown_codes(tmp_path):
    doc = json.loads(run("explain", "PP201", "-f", "json").stdout)
    assert doc["code"] == "PP201" and doc["area"] == "security"
    markdown = run("explain", "PP201", "-f", "markdown").stdout
    # No attr_list anchor: the text renders on GitHub as it is.
    assert markdown.startswith("## PP201 unsafe-global\n\n**error** · area security\n")
    target = tmp_path / "pp101.txt"
    result = run("explain", "PP101", "-o", str(target))
    assert result.stdout == "" and target.read_text().startswith("PP101 aux-non-tensor (error)\n")
    result = run("explain", "PP999")
    assert result.exit_code == 2
    assert result.stderr == "ppaux: error: unknown rule code 'PP999'; 'ppaux rules' lists them\n"


def test_markdown_escaping():
    assert markdown_text("'__sampling_observer_output__.' *x* [a](b) <b>") == (
        "'\\_\\_sampling\\_observer\\_output\\_\\_.' \\*x\\* \\[a\\](b) \\<b\\>"
    )
    assert markdown_code("a`b") == "``a`b``"
    assert markdown_code("`x") == "`` `x ``"
