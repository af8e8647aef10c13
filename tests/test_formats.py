"""Every output format: golden files, and each document parsed or validated as its reader would.

The golden reports are built in memory with a fixed three-rule catalogue and a fixed version,
so the goldens change only when a formatter does. ``PPAUX_UPDATE_GOLDEN=1`` rewrites
them and fails the run, so that the change is reviewed.
"""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from helpers import check_golden
from hypothesis import given, settings
from hypothesis import strategies as st

import ppaux
import ppaux._version
import ppaux.report.catalogue
from ppaux.report import FailOn, Finding, InputProblem, Location, Report, Rule, Severity, Table
from ppaux.report.formats import Format, github, render

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden" / "formats"
SARIF_SCHEMA = json.loads((HERE / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))

SUFFIX = {
    Format.TEXT: "txt",
    Format.JSON: "json",
    Format.GITHUB: "github.txt",
    Format.SARIF: "sarif.json",
    Format.JUNIT: "junit.xml",
    Format.GITLAB: "gitlab.json",
    Format.MARKDOWN: "md",
    Format.HTML: "html",
}

RULES = {
    "PP101": Rule(
        "PP101",
        "aux-non-tensor",
        Severity.ERROR,
        "A value under an auxiliary key is not a tensor.",
        "Rank 0 refuses non-tensors.",
        ("Out-of-tree code.",),
        "Send tensors.",
        "received a non-tensor auxiliary PP output",
        "'a': [1]",
        "payload",
    ),
    "PP114": Rule(
        "PP114",
        "no-tensor-dict",
        Severity.INFO,
        "No tensor dict.",
        "Nothing to check.",
        ("Not a capture.",),
        "Point ppaux at a dump.",
        None,
        "[1, 2]",
        "payload",
        inconclusive=True,
    ),
    "PP201": Rule(
        "PP201",
        "unsafe-global",
        Severity.ERROR,
        "A global outside the allowlist.",
        "Loading would run it.",
        ("A hostile file.",),
        "Do not load it.",
        None,
        "os.system('x')",
        "security",
    ),
}


@pytest.fixture(autouse=True)
def _fixed_catalogue_and_version(monkeypatch):
    monkeypatch.setattr(ppaux.report.catalogue, "RULES", RULES)
    monkeypatch.setattr(ppaux._version, "__version__", "0.0.0+test")


def _finding(code: str, path: str, message: str, key: str | None = None, **kw) -> Finding:
    rule = RULES.get(code)
    return Finding(
        code,
        kw.pop("severity", rule.severity if rule else Severity.WARNING),
        message,
        path,
        key,
        kw.pop("sglang_error", rule.sglang_error if rule else None),
        rule.fix if rule else "",
        **kw,
    )


def mixed_report() -> Report:
    """Findings of every severity, text that needs escaping in every format, a problem."""
    return Report(
        command="inspect",
        findings=[
            _finding(
                "PP101",
                "dumps/aux list.pt",
                "auxiliary entry 'scores' holds a list of 2 floats, not a tensor",
                "__sampling_observer_output__.scores",
                extra={"type": "list"},
            ),
            _finding(
                "PP201",
                "dumps/aux list.pt",
                "the pickle references os.system",
                "__sampling_observer_output__.scores",
            ),
            _finding(
                "PP104",
                "dumps/odd,name:1.pt",
                '100% odd: a|b <c> & "d"\nsecond line\x07',
                "key\twith\ttabs",
                severity=Severity.WARNING,
            ),
            _finding("PP114", "dumps/list.pt", "no tensor dict found in the file"),
        ],
        problems=[InputProblem("dumps/empty.pt", "empty file")],
        data={
            "files": [
                {"path": "dumps/aux list.pt"},
                {"path": "dumps/clean.pt"},
                {"path": "dumps/odd,name:1.pt"},
                {"path": "dumps/list.pt"},
            ]
        },
        tables=[
            Table("dumps/clean.pt (zip; 1 key)", ("key", "dtype"), (("next_token_ids", "int64"),))
        ],
    )


def clean_report() -> Report:
    """A check-skew-shaped report with nothing wrong: subjects come from its stages."""
    return Report(
        command="check-skew", data={"stages": [{"path": "stage0.json"}, {"path": "stage1.json"}]}
    )


REPORTS = {"mixed": mixed_report, "clean": clean_report}


def _golden(name: str, text: str) -> None:
    check_golden(GOLDEN / name, text)


@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.value)
@pytest.mark.parametrize("report_name", list(REPORTS))
def test_every_format_matches_its_golden_file(fmt, report_name):
    text = render(REPORTS[report_name](), fmt, width=100)
    _golden(f"{report_name}.{SUFFIX[fmt]}", text)
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_every_format_is_covered():
    assert set(SUFFIX) == set(Format)


@pytest.mark.parametrize("report_name", list(REPORTS))
def test_json_parses_and_counts(report_name):
    doc = json.loads(render(REPORTS[report_name](), Format.JSON))
    assert doc["schema"] == "ppaux.report/1"
    expected = {
        "mixed": {"error": 2, "warning": 1, "info": 1, "problems": 1},
        "clean": {"error": 0, "warning": 0, "info": 0, "problems": 0},
    }[report_name]
    assert doc["summary"] == expected


@pytest.mark.parametrize("report_name", list(REPORTS))
def test_sarif_is_valid_sarif_2_1_0(report_name):
    doc = json.loads(render(REPORTS[report_name](), Format.SARIF))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(doc)


def test_sarif_points_at_files_and_keys():
    run = json.loads(render(mixed_report(), Format.SARIF))["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["PP101", "PP114", "PP201"]
    first = run["results"][0]
    assert first["ruleId"] == "PP101" and first["ruleIndex"] == 0 and first["level"] == "error"
    # A whole-file finding is placed on the file's first line: code scanning needs a region.
    assert first["locations"] == [
        {
            "physicalLocation": {
                "artifactLocation": {"uri": "dumps/aux%20list.pt"},
                "region": {"startLine": 1},
            }
        }
    ]
    assert first["properties"]["key"] == "__sampling_observer_output__.scores"
    assert first["message"]["text"] == (
        "auxiliary entry 'scores' holds a list of 2 floats, not a tensor "
        "(key '__sampling_observer_output__.scores'). Predicts the sglang error: "
        "received a non-tensor auxiliary PP output"
    )
    # A code missing from the catalogue still gives a valid result, without a rule index.
    assert "ruleIndex" not in run["results"][2]
    assert [r["level"] for r in run["results"]] == ["error", "error", "warning", "note"]
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"] == (
        "could not read this input: empty file"
    )
    assert run["automationDetails"] == {"id": "ppaux/inspect/"}


def test_sarif_marks_security_rules_for_code_scanning():
    rules = json.loads(render(mixed_report(), Format.SARIF))["runs"][0]["tool"]["driver"]["rules"]
    security = rules[2]["properties"]
    assert security["tags"] == ["ppaux", "security"] and security["security-severity"] == "8.0"
    assert "security-severity" not in rules[0]["properties"]


def test_sarif_with_the_real_catalogue_is_valid(monkeypatch):
    monkeypatch.undo()
    from ppaux.report import RULES as real

    report = mixed_report()
    doc = json.loads(render(report, Format.SARIF))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(doc)
    # Only the rules the results use, each once, in the catalogue's order.
    used = [code for code in real if code in {f.code for f in report.findings}]
    assert len(used) >= 2
    assert [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]] == used
    assert len(render(Report("inspect"), Format.SARIF)) < 2000  # no finding, no rule text


def test_github_annotation_lines_exactly():
    lines = render(mixed_report(), Format.GITHUB).splitlines()
    assert lines == [
        "::error file=dumps/aux list.pt,title=PP101 aux-non-tensor::"
        "[__sampling_observer_output__.scores] auxiliary entry 'scores' holds a list of 2 floats, "
        "not a tensor%0Apredicts: received a non-tensor auxiliary PP output%0Afix: Send tensors.",
        "::error file=dumps/aux list.pt,title=PP201 unsafe-global::"
        "[__sampling_observer_output__.scores] the pickle references os.system%0Afix: Do not load "
        "it.",
        # Tabs, the newline and the bell from the dump are shown as escapes, never written raw.
        "::warning file=dumps/odd%2Cname%3A1.pt,title=PP104::[key\\twith\\ttabs] 100%25 odd: "
        'a|b <c> & "d"\\nsecond line\\x07',
        "::notice file=dumps/list.pt,title=PP114 no-tensor-dict::no tensor dict found in the "
        "file%0Afix: Point ppaux at a dump.",
        "::error file=dumps/empty.pt,title=ppaux could not read this input::empty file",
        "ppaux inspect: 2 error(s), 1 warning(s), 1 info, 1 input(s) not checked",
    ]


@pytest.mark.parametrize(
    ("target", "where"),
    [
        ("none.py:NoneObs", "file=none.py,"),
        ("obs/dir/a.py:Outer.Obs", "file=obs/dir/a.py,"),
        ("mypkg.observers:Obs", ""),  # a module: no file named
        ("/abs/obs.py:Obs", ""),  # not a repository's path
        ("../up/obs.py:Obs", ""),
        ("obs.txt:Obs", ""),
    ],
)
def test_a_check_observer_annotation_names_the_targets_file_or_none(target, where):
    report = Report(
        "check-observer", findings=[_finding("PP714", target, "nothing was sent", None)]
    )
    first = render(report, Format.GITHUB).splitlines()[0]
    assert first.startswith(f"::warning {where}title=PP714::")


def test_github_step_summary_golden_and_verdicts():
    _golden("mixed.github-summary.md", github.step_summary(mixed_report(), FailOn.ERROR))
    _golden("clean.github-summary.md", github.step_summary(clean_report(), FailOn.ERROR))
    assert "**could not check every input**" in github.step_summary(mixed_report())
    passing = Report("inspect", findings=[_finding("PP114", "x.pt", "none")])
    assert "**passes the gate** (fail-on error)" in github.step_summary(passing, FailOn.ERROR)
    assert "**fails the gate** (fail-on info)" in github.step_summary(passing, FailOn.INFO)


def test_junit_one_case_per_subject_failing_at_the_threshold():
    root = ET.fromstring(render(mixed_report(), Format.JUNIT).encode())
    suite = root.find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == [
        "dumps/aux list.pt",
        "dumps/clean.pt",
        "dumps/odd,name:1.pt",
        "dumps/list.pt",
        "dumps/empty.pt",
    ]
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "1")
    failure = cases["dumps/aux list.pt"].find("failure")
    assert failure.get("message") == "2 findings: PP101, PP201"
    assert failure.text.splitlines()[0] == (
        "PP101 error [__sampling_observer_output__.scores]: auxiliary entry 'scores' holds a "
        "list of 2 floats, not a tensor"
    )
    assert cases["dumps/clean.pt"].find("failure") is None
    assert cases["dumps/odd,name:1.pt"].find("failure") is None  # a warning, below fail-on error
    assert "\\x07" in cases["dumps/odd,name:1.pt"].find("system-out").text
    assert cases["dumps/empty.pt"].find("error").get("message") == "empty file"
    # At --fail-on warning the warning fails its case too.
    root = ET.fromstring(render(mixed_report(), Format.JUNIT, fail_on=FailOn.WARNING).encode())
    assert root.get("failures") == "2"
    root = ET.fromstring(render(mixed_report(), Format.JUNIT, fail_on=FailOn.NEVER).encode())
    assert root.get("failures") == "0" and root.get("errors") == "1"


def test_junit_stays_well_formed_with_any_key():
    hostile = Report(
        "inspect", findings=[_finding("PP101", "a.pt", "bad", "\x00\x01\x1b]]>&<\ud800\ufffe")]
    )
    root = ET.fromstring(render(hostile, Format.JUNIT).encode("utf-8", "surrogatepass"))
    assert "\\x00\\x01\\x1b]]>&<\\ud800\\ufffe" in root.find("testsuite/testcase/failure").text


def test_gitlab_code_quality_fields():
    issues = json.loads(render(mixed_report(), Format.GITLAB))
    assert [(i["check_name"], i["severity"], i["location"]) for i in issues] == [
        ("PP101", "critical", {"path": "dumps/aux list.pt", "lines": {"begin": 1}}),
        ("PP201", "critical", {"path": "dumps/aux list.pt", "lines": {"begin": 1}}),
        ("PP104", "major", {"path": "dumps/odd,name:1.pt", "lines": {"begin": 1}}),
        ("PP114", "info", {"path": "dumps/list.pt", "lines": {"begin": 1}}),
        ("ppaux/input-not-checked", "blocker", {"path": "dumps/empty.pt", "lines": {"begin": 1}}),
    ]
    assert issues[1]["categories"] == ["Security"]
    fingerprints = [i["fingerprint"] for i in issues]
    assert len(set(fingerprints)) == 5 and all(
        re.fullmatch("[0-9a-f]{64}", f) for f in fingerprints
    )
    for issue in issues:  # what GitLab requires of every entry
        assert {"description", "check_name", "fingerprint", "severity", "location"} <= set(issue)


def test_gitlab_repeated_identical_findings_keep_distinct_fingerprints():
    same = _finding("PP101", "a.pt", "bad", "k")
    issues = json.loads(render(Report("inspect", findings=[same, same]), Format.GITLAB))
    assert issues[0]["fingerprint"] != issues[1]["fingerprint"]


def test_formatters_are_pure():
    report = mixed_report()
    for fmt in Format:
        assert render(report, fmt) == render(report, fmt)
    assert report.findings == mixed_report().findings and report.problems == mixed_report().problems


def _strict(text: str):
    def refuse(token: str):
        raise ValueError(f"non-JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("fmt", [Format.JSON, Format.SARIF, Format.GITLAB])
def test_non_finite_numbers_are_strings_in_every_json_format(fmt):
    # A value from a file (capture metadata) may be NaN or infinite; Python's json module would
    # write the bare tokens NaN and Infinity, which strict parsers refuse.
    nan, inf = float("nan"), float("inf")
    mixed = mixed_report()
    odd = _finding(
        "PP101", "dumps/aux list.pt", "odd floats", "k", extra={"values": [nan, inf, -inf, 1.5]}
    )
    first, *others = mixed.data["files"]
    capture = {"nan": nan, "inf": inf, "ninf": -inf, "x": 0.25}
    report = dataclasses.replace(
        mixed,
        findings=(odd, *mixed.findings[1:]),
        data={**mixed.data, "files": [{**first, "capture": capture}, *others]},
    )
    document = _strict(render(report, fmt))
    if fmt is Format.JSON:
        assert document["files"][0]["capture"] == {
            "nan": "NaN",
            "inf": "Infinity",
            "ninf": "-Infinity",
            "x": 0.25,
        }
        assert document["findings"][0]["extra"]["values"] == ["NaN", "Infinity", "-Infinity", 1.5]


def test_text_view_shows_the_first_rows_of_a_huge_table():
    from ppaux.limits import Limits

    most = Limits().max_table_rows
    rows = tuple((f"key{n}", str(n)) for n in range(most + 250))
    report = Report("inspect", tables=[Table("big", ("key", "value"), rows, frozenset({(5, 1)}))])
    out = render(report, Format.TEXT)
    assert f"key{most - 1} " in out and f"key{most} " not in out
    assert "(250 more rows; the JSON report lists every row)" in out
    # The other views list every row.
    assert f"key{most + 249}" in render(report, Format.HTML)
    assert f"key{most + 249}" in render(report, Format.MARKDOWN)


def test_the_caller_gives_the_rows_a_text_table_shows():
    rows = tuple((f"key{n}", str(n)) for n in range(12))
    report = Report("inspect", tables=[Table("big", ("key", "value"), rows)])
    out = render(report, Format.TEXT, max_table_rows=5)
    assert "key4 " in out and "key5 " not in out
    assert "(7 more rows; the JSON report lists every row)" in out
    assert "key11" in render(report, Format.MARKDOWN, max_table_rows=5)


@settings(max_examples=30, deadline=None)
@given(shown=st.integers(1, 12), total=st.integers(0, 20))
def test_a_table_may_ask_the_text_view_for_fewer_rows(shown, total):
    rows = tuple((f"key{n}", str(n)) for n in range(total))
    table = Table("steps", ("key", "value"), rows, text_rows=shown)
    out = render(Report("check-observer", tables=[table]), Format.TEXT)
    drawn = [n for n in range(total) if f"key{n} " in out]
    assert drawn == list(range(min(shown, total)))
    hidden = total - shown
    assert (f"({hidden} more row" in out) == (hidden > 0)
    markdown = render(Report("x", tables=[table]), Format.MARKDOWN)
    assert all(f"key{n} " in markdown for n in range(total))


def test_every_format_with_a_place_for_notes_carries_them():
    report = Report(
        "capture list",
        notes=[
            "x.pt: trail: recv dirty > pop dirty",
            "::error::not a command\nsecond line",
            "next steps:",
        ],
    )
    shown_notes = [
        "x.pt: trail: recv dirty > pop dirty",
        "::error::not a command\\nsecond line",
        "next steps:",
    ]
    assert json.loads(render(report, Format.JSON))["notes"] == shown_notes
    sarif = json.loads(render(report, Format.SARIF))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    notifications = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [(n["level"], n["message"]["text"]) for n in notifications] == [
        ("note", note) for note in shown_notes
    ]
    suite = ET.fromstring(render(report, Format.JUNIT).encode()).find("testsuite")
    assert suite.find("system-out").text.splitlines() == shown_notes
    assert render(report, Format.GITHUB).splitlines()[:3] == [
        "note: x.pt: trail: recv dirty > pop dirty",
        "note: ::error::not a command\\nsecond line",
        "note: next steps:",
    ]
    assert "\n- x.pt: trail: recv dirty &gt; pop dirty\n" in render(report, Format.MARKDOWN)
    # A report without notes keeps the document as it was: no empty list.
    assert "notes" not in json.loads(render(Report("inspect"), Format.JSON))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=5))
def test_no_note_reads_as_a_workflow_command(notes):
    # Without findings or problems no line of the GitHub output is a workflow command.
    lines = render(Report("triage", notes=notes), Format.GITHUB).splitlines()
    assert not any(line.lstrip().startswith("::") for line in lines)
    assert len(json.loads(render(Report("triage", notes=notes), Format.JSON)).get("notes", [])) == (
        len(notes)
    )


def test_the_verdict_leads_a_gates_notes_but_ends_a_listing():
    # check-skew --findings-only leaves its note alone; capture list's notes are its listing.
    tally = "0 error(s), 0 warning(s), 0 info, 0 input(s) not checked"
    gate = render(Report("check-skew", notes=["first stage (receives): pp0"]), Format.TEXT)
    assert gate == f"{tally}\n\nfirst stage (receives): pp0\n\n{tally}\n"
    listing = render(Report("capture list", notes=["1 capture(s) in d"]), Format.TEXT)
    assert listing == f"1 capture(s) in d\n{tally}\n"


def test_a_targets_output_in_the_notes_reads_as_lines_each_escaped():
    # What an observer's target printed is one note, a heading and its lines: the text,
    # Markdown and HTML views show each line on its own (control characters still escaped,
    # never a literal \n), JSON keeps the one string, and every other format stays one
    # valid document.
    printed = "the target printed:\nhello \x1b[31mred\nsecond\tline\r\n"
    report = Report("check-observer", notes=[printed, "x.pt: one\ntwo"])
    text = render(report, Format.TEXT).splitlines()
    # a gate's report of notes alone still leads with the verdict (a listing's does not)
    assert text[:2] == ["0 error(s), 0 warning(s), 0 info, 0 input(s) not checked", ""]
    assert text[2:6] == [
        "the target printed:",
        "  hello \\x1b[31mred",
        "  second\\tline\\r",
        "x.pt: one\\ntwo",
    ]
    markdown = render(report, Format.MARKDOWN)
    assert "the target printed:\n\n```\nhello \\x1b[31mred\nsecond\\tline\\r\n```\n" in markdown
    html = render(report, Format.HTML)
    assert "<code>hello \\x1b[31mred\nsecond\\tline\\r</code>" in html
    assert "\\n" not in render(Report("x", notes=[printed]), Format.HTML).split("<main>")[1]
    assert json.loads(render(report, Format.JSON))["notes"] == [
        "the target printed:\nhello \\x1b[31mred\nsecond\\tline\\r\n",
        "x.pt: one\\ntwo",
    ]
    sarif = json.loads(render(report, Format.SARIF))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    suite = ET.fromstring(render(report, Format.JUNIT).encode()).find("testsuite")
    assert suite.find("system-out").text.splitlines()[:3] == [
        "the target printed:",
        "hello \\x1b[31mred",
        "second\\tline\\r",
    ]
    github = render(report, Format.GITHUB).splitlines()
    assert github[:3] == [
        "note: the target printed:",
        "note: hello \\x1b[31mred",
        "note: second\\tline\\r",
    ]
    assert not any(line.startswith("::") for line in github)


def test_a_location_whose_function_is_unknown_says_no_function():
    at = Location("a.log", 3, "run")
    known = _finding("PP802", "a.log", "x", location=at)
    cut = Location("b.log", 4, "-")
    unknown = _finding("PP802", "b.log", "y", location=cut)
    for fmt in (Format.TEXT, Format.JUNIT):
        out = render(Report("triage", findings=[known, unknown]), fmt)
        assert "a.log:3 in run" in out
        assert "b.log:4" in out
        assert "b.log:4 in" not in out
