"""A report is frozen once built: a command gathers it in a ReportBuilder, and nothing that
reads the report it built (the gate, a format, a test) can change it."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.report import (
    Finding,
    InputProblem,
    Report,
    ReportBuilder,
    ReportData,
    Severity,
    Table,
)

_TEXT = st.text(max_size=20)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=4,
)
_FINDINGS = st.lists(
    st.builds(Finding, st.just("PP101"), st.sampled_from(Severity), _TEXT, _TEXT), max_size=3
)
_PROBLEMS = st.lists(st.builds(InputProblem, _TEXT, _TEXT), max_size=3)
_DATA = st.dictionaries(_TEXT, _JSON, max_size=4)
_NOTES = st.lists(_TEXT, max_size=3)


@settings(max_examples=25)
@given(_FINDINGS, _PROBLEMS, _DATA, _NOTES)
def test_a_built_report_keeps_what_the_builder_held_when_it_was_built(
    findings: list[Finding], problems: list[InputProblem], data: dict[str, object], notes: list[str]
) -> None:
    builder = ReportBuilder("inspect", list(findings), list(problems), dict(data), [], list(notes))
    report = builder.build()
    # The builder goes on; the report does not follow it.
    builder.findings.append(Finding("PP999", Severity.ERROR, "later", "x.pt"))
    builder.problems.append(InputProblem("later.pt", "later"))
    builder.data["later"] = 1
    builder.notes.append("later")
    builder.tables.append(Table("later", ("a",), ()))
    assert report.findings == tuple(findings)
    assert report.problems == tuple(problems)
    assert dict(report.data) == data
    assert report.notes == tuple(notes)
    assert report.tables == ()


@settings(max_examples=25)
@given(_FINDINGS, _DATA, _NOTES)
def test_a_report_is_made_of_tuples_and_read_only_data_whatever_it_is_given(
    findings: list[Finding], data: dict[str, object], notes: list[str]
) -> None:
    report = Report("replay", findings=findings, data=data, notes=notes)  # type: ignore[arg-type]
    assert isinstance(report.findings, tuple) and report.findings == tuple(findings)
    assert isinstance(report.notes, tuple) and report.notes == tuple(notes)
    assert isinstance(report.data, ReportData) and dict(report.data) == data
    data["added after"] = 1
    assert "added after" not in report.data  # a copy of the mapping it was given
    again = dataclasses.replace(report, problems=[InputProblem("a.pt", "unreadable")])
    assert again.problems == (InputProblem("a.pt", "unreadable"),)
    assert again.findings is report.findings


def test_no_field_of_a_report_and_no_entry_of_its_data_can_be_set():
    report = ReportBuilder("diff", data={"diff": {"a": "a.pt"}}).build()
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.findings = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.data = {}  # type: ignore[misc]
    for change in (
        lambda: report.data.__setitem__("diff", None),
        lambda: report.data.update(more=1),
        lambda: report.data.setdefault("more", 1),
        lambda: report.data.pop("diff"),
        lambda: report.data.clear(),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change()
    with pytest.raises(AttributeError):
        report.findings.append  # type: ignore[attr-defined]  # noqa: B018
    assert dict(report.data) == {"diff": {"a": "a.pt"}}


def test_a_report_copies_and_pickles_as_itself():
    report = ReportBuilder(
        "triage",
        findings=[Finding("PP801", Severity.ERROR, "m", "a.log")],
        data={"logs": [{"log": "a.log", "lines": 2}]},
        notes=["next steps:"],
    ).build()
    for same in (copy.deepcopy(report), pickle.loads(pickle.dumps(report))):
        assert same == report
        assert isinstance(same.data, ReportData)
    assert json.loads(json.dumps(report.data)) == {"logs": [{"log": "a.log", "lines": 2}]}
    assert report != dataclasses.replace(report, data={"logs": []})
