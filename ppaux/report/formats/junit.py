"""JUnit XML, as GitLab's ``artifacts:reports:junit`` and most CI test views read it.

One test case per subject (a file, stage or dump), in the order the report met them: every
``path`` in the command's data lists (``files``, ``stages``, ``results``), then any other path
a finding or an unreadable input names. A test case fails when it has findings at or above the
gate's threshold; the failure lists them all. Findings below the threshold go to the test
case's ``system-out``. An input that could not be read is a test case with an ``error``. The
report's notes are the test suite's own ``system-out``.

XML 1.0 forbids most control characters even as character references; the report reaches this
module with every string shown by :func:`ppaux.text.shown` (see :mod:`ppaux.report.formats`), so
none is left to write.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable

from ppaux.report.document import FailOn, Report
from ppaux.report.findings import Finding
from ppaux.report.formats.text import place

__all__ = ["render", "subjects"]

#: Keys of ``Report.data`` whose items each describe one checked subject with a ``path``.
_SUBJECT_LISTS = ("files", "stages", "results")


def subjects(report: Report) -> list[str]:
    """Every subject of the report once, in first-seen order."""
    seen: dict[str, None] = {}
    for name in _SUBJECT_LISTS:
        items = report.data.get(name)
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict) and isinstance(item.get("path"), str):
                    seen.setdefault(item["path"], None)
    for f in report.findings:
        seen.setdefault(f.path, None)
    for p in report.problems:
        seen.setdefault(p.path, None)
    return list(seen)


def _line(f: Finding) -> str:
    where = f" [{f.key}]" if f.key is not None else ""
    text = f"{f.code} {f.severity.value}{where}: {f.message}"
    if f.location is not None:
        text += f"\n    at: {place(f.location)}"
    if f.sglang_error:
        text += f"\n    predicts: {f.sglang_error}"
    if f.hint:
        text += f"\n    fix: {f.hint}"
    return text


def _failure_message(failing: list[Finding]) -> str:
    if len(failing) == 1:
        f = failing[0]
        return f"{f.code}: {f.message}"
    codes = ", ".join(dict.fromkeys(f.code for f in failing))
    return f"{len(failing)} findings: {codes}"


def _set(element: ET.Element, **attributes: str) -> None:
    for name, value in attributes.items():
        element.set(name, value)


def _case(
    parent: ET.Element,
    classname: str,
    path: str,
    findings: Iterable[Finding],
    problems: list[str],
    fail_on: FailOn,
) -> tuple[int, int]:
    case = ET.SubElement(parent, "testcase")
    _set(case, classname=classname, name=path)
    findings = list(findings)
    failing = [f for f in findings if fail_on.reached_by(f.severity)]
    passing = [f for f in findings if not fail_on.reached_by(f.severity)]
    if problems:
        error = ET.SubElement(case, "error")
        _set(error, type="input-not-checked", message="; ".join(problems))
        error.text = "\n".join(problems)
    if failing:
        failure = ET.SubElement(case, "failure")
        _set(failure, type=failing[0].code, message=_failure_message(failing))
        failure.text = "\n".join(_line(f) for f in failing)
    if passing:
        out = ET.SubElement(case, "system-out")
        out.text = "\n".join(_line(f) for f in passing)
    return (1 if failing and not problems else 0), (1 if problems else 0)


def render(report: Report, fail_on: FailOn = FailOn.ERROR) -> str:
    """The JUnit XML document, indented, ending in a newline."""
    names = subjects(report)
    by_path: dict[str, list[Finding]] = {name: [] for name in names}
    for f in report.findings:
        by_path[f.path].append(f)
    problems: dict[str, list[str]] = {name: [] for name in names}
    for p in report.problems:
        problems[p.path].append(p.message)
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite")
    failures = errors = 0
    classname = "ppaux." + report.command.replace(" ", "-")
    for name in names:
        failed, errored = _case(suite, classname, name, by_path[name], problems[name], fail_on)
        failures += failed
        errors += errored
    counts = {"tests": str(len(names)), "failures": str(failures), "errors": str(errors)}
    _set(root, name="ppaux", **counts)
    _set(suite, name=f"ppaux {report.command}", **counts, skipped="0")
    if report.notes:
        ET.SubElement(suite, "system-out").text = "\n".join(report.notes)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
