"""Each finding says which of its rule's messages it is (``message_id``), apart from the words:
the code itself for a rule's one message, ``code/name`` where the rule has several; the JSON
formats carry the latter."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.report import RULES, Format, Report, cap_per_code, finding, render

_SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docs" / "report.schema.json").read_text("utf-8")
)
_CODES = st.sampled_from(sorted(RULES))
_NAMES = st.from_regex(r"[a-z0-9]+(-[a-z0-9]+)*", fullmatch=True).filter(lambda s: len(s) < 30)


@settings(max_examples=20)
@given(_CODES, st.text(max_size=40), st.text(max_size=40))
def test_a_rules_one_message_is_its_code_whatever_its_words(code, words, other):
    first, second = finding(code, "a.pt", words), finding(code, "a.pt", other)
    assert first.message_id == second.message_id == code
    assert "message_id" not in first.to_json()


@settings(max_examples=12)
@given(_CODES, _NAMES, st.text(max_size=40), st.text(max_size=40))
def test_a_named_message_keeps_its_id_whatever_its_words(code, name, words, other):
    first = finding(code, "a.pt", words, message_name=name)
    second = finding(code, "b.pt", other, message_name=name)
    assert first.message_id == second.message_id == f"{code}/{name}"
    assert first.to_json()["message_id"] == f"{code}/{name}"
    report = Report("inspect", findings=(first,), data={"files": []})
    document = json.loads(render(report, Format.JSON))
    assert document["findings"][0]["message_id"] == f"{code}/{name}"
    sarif = json.loads(render(report, Format.SARIF))
    assert sarif["runs"][0]["results"][0]["properties"]["message_id"] == f"{code}/{name}"


def test_the_schema_takes_a_message_id_and_refuses_one_of_another_shape():
    named = finding("PP319", "stage", "sglang was not found", message_name="not-found")
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
