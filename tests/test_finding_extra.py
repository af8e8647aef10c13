"""A finding's ``extra`` holds one family's keys (:mod:`ppaux.report.extra`), each value of the
type the family declares: checked on the findings of the golden reports and of triage over the
log fixtures, as the JSON document writes them."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.report import (
    RULES,
    DumpExtra,
    Format,
    Gate,
    ObserverExtra,
    Report,
    Severity,
    SkewExtra,
    TriageExtra,
    finding,
    render,
)
from ppaux.triage import triage_paths

ROOT = Path(__file__).resolve().parent.parent
#: The family of each area's codes (the catalogue's hundreds).
FAMILY = {"PP3": SkewExtra, "PP7": ObserverExtra, "PP8": TriageExtra}


def _family(code: str) -> type:
    return FAMILY.get(code[:3], DumpExtra)


def _fits(value: object, kind: object) -> bool:
    """Whether the JSON ``value`` is of the declared type ``kind``."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, k) for k in typing.get_args(kind))
    if origin is list:
        (item,) = typing.get_args(kind)
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    if kind is type(None):
        return value is None
    if typing.is_typeddict(kind):
        hints = typing.get_type_hints(kind)
        return isinstance(value, dict) and set(value) == set(hints)
    if kind is int:
        return type(value) is int
    return isinstance(value, kind)


def _problems(document: dict[str, typing.Any]) -> list[str]:
    problems = []
    for item in document.get("findings", []):
        family = _family(item["code"])
        hints = typing.get_type_hints(family)
        for key, value in item.get("extra", {}).items():
            if key not in hints:
                problems.append(f"{item['code']}: {key!r} is no key of {family.__name__}")
            elif not _fits(value, hints[key]):
                problems.append(f"{item['code']}: {key}={value!r} is not {hints[key]}")
    return problems


def test_the_families_share_the_common_keys():
    common = {"omitted", "payload", "causes", "strict"}
    for family in (DumpExtra, SkewExtra, ObserverExtra, TriageExtra):
        assert common <= set(typing.get_type_hints(family)), family.__name__
        assert not family.__required_keys__, family.__name__


def test_a_key_of_no_family_or_a_value_of_another_type_is_told():
    # The checks below only mean something if a wrong key or value is caught.
    bad = {"findings": [{"code": "PP801", "extra": {"incident": "1", "nope": 2}}]}
    assert len(_problems(bad)) == 2
    assert not _problems({"findings": [{"code": "PP101", "extra": {"type": "int"}}]})


def test_the_golden_reports_findings_hold_their_familys_keys():
    seen = 0
    for path in sorted((ROOT / "tests" / "golden").rglob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(document, dict) and "findings" in document:
            seen += sum(1 for f in document["findings"] if f.get("extra"))
            assert not _problems(document), (path.name, _problems(document))
    assert seen > 20


#: Logs whose triage gives findings of PP801 to PP806, PP808, PP809 and PP810.
LOGS = [
    "sglang-aux-list-strict.log",
    "sglang-observer-raises.log",
    "real/sglang-10272-backtick-sigquit-tp4-pp1-cut.log",
    "real/determined-8915-bars-death-signal.log",
]


@pytest.mark.parametrize("log", LOGS)
def test_triages_findings_hold_their_familys_keys(log):
    document = json.loads(
        render(triage_paths([str(ROOT / "fixtures" / "logs" / log)]), Format.JSON)
    )
    assert any(f.get("extra") for f in document["findings"])
    assert not _problems(document)


@settings(max_examples=25)
@given(st.sampled_from(sorted(RULES)), st.integers(0, 10**6), st.text(max_size=20))
def test_strict_sets_its_key_and_keeps_the_others_in_order(code, count, payload):
    item = finding(code, "a.pt", "m", severity=Severity.WARNING)
    extra = {"omitted": count, "payload": payload}
    item = dataclasses.replace(item, extra=extra)
    raised = Gate(strict=True).apply(Report("inspect", findings=(item,), data={"files": []}))
    (out,) = raised.findings
    if RULES[code].inconclusive:
        assert list(out.extra.items()) == [
            ("omitted", count),
            ("payload", payload),
            ("strict", True),
        ]
        assert out.severity is Severity.ERROR
    else:
        assert out.extra == extra and out.severity is Severity.WARNING
    assert item.extra == extra  # the finding given is left as it was
