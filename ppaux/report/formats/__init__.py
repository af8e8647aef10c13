"""Formatters: pure functions from a :class:`~ppaux.report.document.Report` to text, one module
each.

Each module is imported only when its format is asked for, so a JSON run never loads rich and a
text run never loads the XML writer (``check-observer`` loads them all before its target runs:
:func:`load_writers`). Every format is given the report with its strings shown by
:func:`ppaux.text.shown` (:mod:`ppaux.report.formats.shown`), so no format writes a raw control
character, bidi mark or lone surrogate, whatever a command put in its report.
"""

from __future__ import annotations

import dataclasses
import enum

from ppaux.limits import Limits
from ppaux.report.document import FailOn, InputProblem, Report
from ppaux.suggestions import Wording, library_words, worded

__all__ = ["Format", "load_writers", "render"]


class Format(str, enum.Enum):
    """Output formats every command accepts with ``--format``."""

    #: The verdict and the findings first, then the tables and notes, wrapped at the terminal's
    #: width, for a person at a terminal.
    TEXT = "text"
    #: The ``ppaux.report/1`` JSON document (docs/report-schema.md).
    JSON = "json"
    #: GitHub Actions workflow commands (``::error file=...::``), one per finding.
    GITHUB = "github"
    #: SARIF 2.1.0, for code scanning (``github/codeql-action/upload-sarif``).
    SARIF = "sarif"
    #: JUnit XML, one test case per file, stage or dump (GitLab ``reports:junit``).
    JUNIT = "junit"
    #: Code Climate JSON as GitLab's code-quality report reads it (``reports:codequality``).
    GITLAB = "gitlab"
    #: GitHub-flavoured Markdown: tables and findings, for an issue or incident thread.
    MARKDOWN = "markdown"
    #: One self-contained HTML page (no network, readable on a phone), matrix cells marked.
    HTML = "html"


def render(
    report: Report,
    fmt: Format,
    *,
    color: bool = False,
    width: int = 100,
    fail_on: FailOn = FailOn.ERROR,
    words: Wording = library_words,
    max_table_rows: int = Limits().max_table_rows,
) -> str:
    """Render ``report`` in ``fmt``.

    ``color`` and ``width`` matter only to the text format; ``fail_on`` to JUnit, where a
    finding at or above it fails its test case and one below it is printed as test output, and
    to Markdown and HTML, which state the verdict. ``words`` says the suggestions of findings and
    problems (a setting to give, a limit to raise) in the words of the front end that shows the
    report (the library's keyword arguments by default); JSON keeps them as data.
    ``max_table_rows`` (``Limits.max_table_rows`` by default) cuts each table of the text
    format, which lays tables out slowly; every other format lists every row.
    """
    from ppaux.report.formats.shown import shown_report

    if fmt != Format.JSON:
        report = _worded(report, words)
    # Every string is shown escaped, whatever the command and wherever it came from.
    report = shown_report(report)
    if fmt == Format.JSON:
        from ppaux.report.formats import json as json_format

        return json_format.render(report)
    if fmt == Format.GITHUB:
        from ppaux.report.formats import github

        return github.render(report)
    if fmt == Format.SARIF:
        from ppaux.report.formats import sarif

        return sarif.render(report)
    if fmt == Format.JUNIT:
        from ppaux.report.formats import junit

        return junit.render(report, fail_on=fail_on)
    if fmt == Format.GITLAB:
        from ppaux.report.formats import gitlab

        return gitlab.render(report)
    if fmt == Format.MARKDOWN:
        from ppaux.report.formats import markdown

        return markdown.render(report, fail_on)
    if fmt == Format.HTML:
        from ppaux.report.formats import html

        return html.render(report, fail_on)
    from ppaux.report.formats import text

    return text.render(report, color=color, width=width, max_table_rows=max_table_rows)


#: What the writers import when a format is asked for, beyond ppaux's own report modules: the
#: text format's rich, the HTML and JUnit writers' escaping and XML, the wrapping.
_WRITERS_IMPORT = (
    "html",
    "html.entities",
    "shlex",
    "textwrap",
    "xml.etree.ElementTree",
    "rich.box",
    "rich.console",
    "rich.table",
    "rich.text",
)


def load_writers() -> None:
    """Import every module that judging and writing a report in any format needs, now: a
    caller about to run code that could write these modules' files (``check-observer``'s
    target, in a child process) loads them first, so that nothing the target writes there is
    imported into the process that writes the report."""
    import importlib
    import pkgutil

    import ppaux.report

    for module in pkgutil.walk_packages(ppaux.report.__path__, "ppaux.report."):
        importlib.import_module(module.name)
    for name in ("ppaux._version", *_WRITERS_IMPORT):
        importlib.import_module(name)


def _worded(report: Report, words: Wording) -> Report:
    """``report`` with each suggestion said by ``words``: after a finding's fix text, after a
    problem's message."""
    return dataclasses.replace(
        report,
        findings=tuple(
            dataclasses.replace(f, hint=f.worded(words), suggestions=()) for f in report.findings
        ),
        problems=tuple(
            InputProblem(p.path, worded(p.message, p.suggestions, words)) for p in report.problems
        ),
    )
