"""Each finding says which of its rule's messages it is (``message_id``), apart from the words:
the code itself for a rule's one message, ``code/name`` where the rule has several. The JSON
document carries it on every finding, SARIF in each result's properties (``ruleId`` stays the
code)."""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.report import RULES, Format, Report, cap_per_code, finding, render

_SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docs" / "report.schema.json").read_text("utf-8")
)
_ID = re.compile(r"^PP[0-9]{3}(/[a-z0-9-]+)?$")
_CODES = st.sampled_from(sorted(RULES))
_NAMES = st.from_regex(r"[a-z0-9]+(-[a-z0-9]+)*", fullmatch=True).filter(lambda s: len(s) < 30)


@settings(max_examples=20)
@given(_CODES, st.text(max_size=40), st.text(max_size=40))
def test_a_rules_one_message_is_its_code_whatever_its_words(code, words, other):
    first, second = finding(code, "a.pt", words), finding(code, "a.pt", other)
    assert first.message_id == second.message_id == code
    assert first.to_json()["message_id"] == code
    report = Report("inspect", findings=(first,), data={"files": []})
    sarif = json.loads(render(report, Format.SARIF))
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == code and result["properties"]["message_id"] == code


@settings(max_examples=12)
@given(_CODES, _NAMES, st.text(max_size=40), st.text(max_size=40))
def test_a_named_message_keeps_its_id_whatever_its_words(code, name, words, other):
    first = finding(f"{code}/{name}", "a.pt", words)
    second = finding(f"{code}/{name}", "b.pt", other)
    assert first.message_id == second.message_id == f"{code}/{name}"
    assert first.code == code and first.severity is RULES[code].severity
    assert first.to_json()["message_id"] == f"{code}/{name}"
    report = Report("inspect", findings=(first,), data={"files": []})
    document = json.loads(render(report, Format.JSON))
    assert document["findings"][0]["message_id"] == f"{code}/{name}"
    sarif = json.loads(render(report, Format.SARIF))
    assert sarif["runs"][0]["results"][0]["properties"]["message_id"] == f"{code}/{name}"


def test_the_schema_takes_a_message_id_and_refuses_one_of_another_shape():
    named = finding("PP319/not-found", "stage", "sglang was not found")
    report = Report("inspect", findings=(named,), data={"files": []})
    document = json.loads(render(report, Format.JSON))
    jsonschema.validate(document, _SCHEMA)
    document["findings"][0]["message_id"] = "sglang was not found"
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        jsonschema.validate(document, _SCHEMA)


def test_the_finding_that_counts_those_not_listed_is_named_omitted():
    found = [finding("PP101", "a.pt", f"key {n}") for n in range(5)]
    kept = cap_per_code(found, 2, "max_findings_per_code")
    assert [f.message_id for f in kept] == ["PP101", "PP101", "PP101/omitted"]
    assert kept[-1].extra == {"omitted": 3}


ROOT = Path(__file__).resolve().parent.parent
#: The calls that build a finding from a code given as their first argument.
BUILDERS = {"finding", "at", "Finding"}


@functools.cache
def _build_sites() -> dict[str, list[tuple[str, str, str]]]:
    """Each code's build sites in the library whose message id is a literal: (where, the
    message's source text, the id)."""
    sites: dict[str, list[tuple[str, str, str]]] = {}
    for path in sorted((ROOT / "ppaux").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        # Only a module that names a code as a literal can build a finding of a literal id.
        if "catalogue" in path.parts or not re.search(r'"PP[0-9]{3}[/"]', text):
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Call) or len(node.args) < 3:
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            first = node.args[0]
            if name not in BUILDERS or not isinstance(first, ast.Constant):
                continue
            if not isinstance(first.value, str) or first.value[:5] not in RULES:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            message = ast.unparse(node.args[2])
            sites.setdefault(first.value[:5], []).append((where, message, first.value))
    return sites


def test_the_scan_finds_the_build_sites_it_must():
    # The scan below is only as good as what it sees: these sites are known to build findings.
    sites = _build_sites()
    assert {"PP101", "PP115", "PP319", "PP710", "PP803"} <= set(sites)
    assert [message_id for _, _, message_id in sites["PP115"]] == [
        "PP115/bad-name",
        "PP115/not-tensor",
        "PP115/duplicate",
    ]


def test_each_message_of_a_rule_has_its_own_id():
    # Two build sites of one code that word different messages give them different ids.
    problems = []
    for code, found in _build_sites().items():
        by_id: dict[str, set[str]] = {}
        for where, message, message_id in found:
            by_id.setdefault(message_id, set()).add(message)
            if not _ID.match(message_id) or not message_id.startswith(code):
                problems.append(f"{where}: {message_id!r} is not {code} or {code}/lower-kebab")
        problems += [
            f"{code}: {len(messages)} different messages share the id {message_id}"
            for message_id, messages in by_id.items()
            if len(messages) > 1
        ]
    assert not problems, "\n".join(problems)


def _golden_findings() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for path in sorted((ROOT / "tests" / "golden").rglob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(document, dict):
            out += [f for f in document.get("findings", []) if isinstance(f, dict)]
    return out


def test_every_finding_in_the_golden_reports_carries_its_id():
    findings = _golden_findings()
    assert len(findings) > 50
    for item in findings:
        message_id = item["message_id"]
        assert isinstance(message_id, str) and _ID.match(message_id), item
        assert message_id.split("/")[0] == item["code"], item


def test_the_schema_requires_the_id():
    schema = json.loads((ROOT / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    definition = schema["$defs"]["finding"]
    assert "message_id" in definition["required"]
    assert re.compile(definition["properties"]["message_id"]["pattern"]).pattern == _ID.pattern
