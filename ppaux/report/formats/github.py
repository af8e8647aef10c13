"""GitHub Actions: workflow-command annotations, and a Markdown job summary.

:func:`render` gives one ``::error``, ``::warning`` or ``::notice`` line per finding (``file=``
the dump, fingerprint or stage, or, for a finding with a source ``location``, that file with
``line=``; ``title=`` the code and rule name; the message with the key,
the predicted sglang error and the fix) and one ``::error`` per input that could not be read,
then the summary line. GitHub shows only a few annotations per step, so :func:`summary` gives
the whole report as Markdown for ``$GITHUB_STEP_SUMMARY`` (the CLI appends it there).
"""

from __future__ import annotations

from ppaux.report.findings import Finding, Severity
from ppaux.report.document import FailOn, Report, count_by_severity, exit_code

__all__ = ["render", "annotation", "summary"]

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _data(text: str) -> str:
    # The runner reads one command per line: newlines must be escaped, and '%' first of all.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    # Property values end at ',' and the property list ends at '::', so both are escaped too.
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _title(finding: Finding) -> str:
    from ppaux.report.catalogue import RULES

    rule = RULES.get(finding.code)
    return f"{finding.code} {rule.name}" if rule is not None else finding.code


def annotation(finding: Finding) -> str:
    """The workflow command for one finding."""
    lines = [f"[{finding.key}] {finding.message}" if finding.key is not None else finding.message]
    if finding.sglang_error:
        lines.append(f"predicts: {finding.sglang_error}")
    if finding.hint:
        lines.append(f"fix: {finding.hint}")
    if finding.location is not None:
        # Annotate the line of code that caused it; the file it was found in goes in the text.
        lines.append(f"found in: {finding.path}")
        where = (f"file={_property(str(finding.location['file']))},"
                 f"line={int(finding.location['line'])},")
    else:
        where = f"file={_property(finding.path)},"
    return (
        f"::{_LEVEL[finding.severity]} {where}"
        f"title={_property(_title(finding))}::{_data(chr(10).join(lines))}"
    )


def _counts(report: Report) -> str:
    counts = count_by_severity(report.findings)
    return (
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info, "
        f"{len(report.problems)} input(s) not checked"
    )


def render(report: Report) -> str:
    """Annotation lines for every finding and unreadable input, then a plain summary line."""
    lines = [annotation(f) for f in report.findings]
    lines += [
        f"::error file={_property(p.path)},title=ppaux could not read this input::{_data(p.message)}"
        for p in report.problems
    ]
    lines.append(f"ppaux {report.command}: {_counts(report)}")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    # Inside a table cell a '|' ends the cell and a newline ends the row; HTML would render.
    text = " ".join(text.split())
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "&#124;")):
        text = text.replace(char, entity)
    return text


def _code(text: str) -> str:
    return f"<code>{_cell(text)}</code>"


def summary(report: Report, fail_on: FailOn = FailOn.ERROR) -> str:
    """The report as GitHub-flavoured Markdown: the verdict, a findings table, unread inputs."""
    code = exit_code(report, fail_on)
    verdict = {
        0: "passes the gate",
        1: "fails the gate",
        2: "could not check every input",
    }[code]
    lines = [
        f"## ppaux {report.command}",
        "",
        f"**{verdict}** (fail-on {fail_on.value}): {_counts(report)}.",
        "",
    ]
    if report.findings:
        lines += ["| severity | code | where | finding |", "|---|---|---|---|"]
        for f in report.findings:
            where = _code(f.path) + (f" {_code(f.key)}" if f.key is not None else "")
            what = _cell(f.message)
            if f.sglang_error:
                what += f"<br>predicts: {_code(f.sglang_error)}"
            if f.hint:
                what += f"<br>fix: {_cell(f.hint)}"
            lines.append(f"| {f.severity.value} | {_cell(_title(f))} | {where} | {what} |")
        lines.append("")
    if report.problems:
        lines += ["### Inputs not checked", "", "| input | reason |", "|---|---|"]
        lines += [f"| {_code(p.path)} | {_cell(p.message)} |" for p in report.problems]
        lines.append("")
    lines.append("Explain a code with `ppaux explain CODE`.")
    return "\n".join(lines) + "\n"
