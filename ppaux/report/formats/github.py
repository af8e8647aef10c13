"""GitHub Actions: workflow-command annotations, and a Markdown job summary.

:func:`render` gives one ``::error``, ``::warning`` or ``::notice`` line per finding (``file=``
the dump, fingerprint or stage, check-observer's target's file (none where the target names
no file in the current folder), or, for a finding with a source ``location``, that file with
``line=``; ``title=`` the code and rule name; the message with the key, the predicted sglang
error and the fix) and one ``::error`` per input that could not be read,
then the report's notes as plain log lines (each after ``note: ``, so none reads as a workflow
command), then the summary line. GitHub shows only a few annotations per step, so
:func:`step_summary` gives the whole report as Markdown for ``$GITHUB_STEP_SUMMARY`` (the CLI
appends it there).
"""

from __future__ import annotations

from pathlib import PurePosixPath

from ppaux.report.document import FailOn, Report
from ppaux.report.findings import Finding, Severity
from ppaux.report.formats import markdown
from ppaux.report.formats.markdown import counts as _counts
from ppaux.report.formats.markdown import title as _title

__all__ = ["annotation", "render", "step_summary", "target_file"]

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
#: The commands whose findings' path is a target (``file.py:Name`` or ``module:Name``), not
#: a file: an annotation names the target's file where the target gives it relative to the
#: current folder, else no file.
_TARGET_PATHS = frozenset({"check-observer"})


def _data(text: str) -> str:
    # The runner reads one command per line: newlines must be escaped, and '%' first of all.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    # Property values end at ',' and the property list ends at '::', so both are escaped too.
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def target_file(target: str) -> str | None:
    """The file of a target given as ``file.py:Name`` with a relative path that stays in its
    folder (the path a repository's annotation takes), else None."""
    file, colon, _ = target.rpartition(":")
    parts = PurePosixPath(file).parts
    if not colon or not file.endswith(".py") or file.startswith("/") or ".." in parts:
        return None
    return file


def annotation(finding: Finding, *, target: bool = False) -> str:
    """The workflow command for one finding (``target``: its path is a target, see
    :data:`_TARGET_PATHS`)."""
    lines = [f"[{finding.key}] {finding.message}" if finding.key is not None else finding.message]
    if finding.sglang_error:
        lines.append(f"predicts: {finding.sglang_error}")
    if finding.hint:
        lines.append(f"fix: {finding.hint}")
    if finding.location is not None:
        # Annotate the line of code that caused it; the file it was found in goes in the text.
        lines.append(f"found in: {finding.path}")
        where = f"file={_property(finding.location.file)},line={finding.location.line},"
        if finding.location.decompressed:  # a line of the text, not of the file's bytes
            lines.append(f"at: {finding.location.file} (decompressed):{finding.location.line}")
            where = f"file={_property(finding.location.file)},"
    elif not target:
        where = f"file={_property(finding.path)},"
    else:
        file = target_file(finding.path)
        where = "" if file is None else f"file={_property(file)},"
    return (
        f"::{_LEVEL[finding.severity]} {where}"
        f"title={_property(_title(finding))}::{_data(chr(10).join(lines))}"
    )


def render(report: Report) -> str:
    """Annotation lines for every finding and unreadable input, then a plain summary line."""
    target = report.command in _TARGET_PATHS
    lines = [annotation(f, target=target) for f in report.findings]
    lines += [
        f"::error file={_property(p.path)},title=ppaux could not read this input::"
        f"{_data(p.message)}"
        for p in report.problems
    ]
    lines += [f"note: {line}" for note in report.notes for line in note.splitlines() or [""]]
    lines.append(f"ppaux {report.command}: {_counts(report)}")
    return "\n".join(lines) + "\n"


def step_summary(report: Report, fail_on: FailOn = FailOn.ERROR) -> str:
    """The report as GitHub-flavoured Markdown without its tables: the verdict, a findings
    table, unread inputs (:func:`ppaux.report.formats.markdown.render`), every string shown as
    :func:`ppaux.report.formats.render` shows it."""
    from ppaux.report.formats.shown import shown_report

    return markdown.render(shown_report(report), fail_on, tables=False)
