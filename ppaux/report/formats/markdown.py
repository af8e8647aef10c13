"""GitHub-flavoured Markdown, for an issue, a pull request or an incident thread.

:func:`render` gives the whole report, what matters first: the verdict, for several files a
one-line verdict per file, the findings, the inputs that could not be read, and then the detail:
the command's notes and tables (check-skew's matrix with the cells a finding is about in bold).
With ``tables=False`` it is the GitHub job summary
(:func:`ppaux.report.formats.github.step_summary`), which leaves the tables out so that a run over
many dumps stays within the summary's size limit.

Every piece of text from a report is escaped: inside a table cell a ``|`` would end the cell and
a newline the row, ``<`` would open raw HTML, and ``*``, ``_`` or a backquote would start
emphasis or code (``__sampling_observer_output__`` would render in bold).
"""

from __future__ import annotations

from collections.abc import Sequence

from ppaux.report.document import FailOn, Report, Table, count_by_severity, exit_code
from ppaux.report.findings import Finding
from ppaux.text import shown

__all__ = ["cell", "code", "counts", "file_verdicts", "note_blocks", "render", "title", "verdict"]

_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "&#124;"))
# ASCII punctuation that starts emphasis, code, links or strike-through, backslash-escaped.
_ESCAPED = "\\`*_[]~"


def cell(text: str) -> str:
    """``text`` as one line of literal Markdown, safe in a table cell (unprintable characters
    shown as escapes by :func:`ppaux.text.shown`, runs of spaces made one)."""
    text = " ".join(shown(text, None).split())
    for char, entity in _ENTITIES:
        text = text.replace(char, entity)
    return "".join("\\" + c if c in _ESCAPED else c for c in text)


def note_blocks(notes: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The notes as (note, block) pairs: a heading note (one that ends with ``:`` and holds no
    other ``: ``, as triage's ``next steps:``) followed by notes indented by two spaces (its
    commands) takes those lines, their two spaces off, as its block, to be shown verbatim
    (commands a reader copies); every other note has an empty block. A note such as capture
    list's ``x.pt: RuntimeError: ...`` and its indented ``trail:`` stays a list. A heading
    note with lines of its own after it (what an observer's target printed: see
    :func:`~ppaux.report.formats.shown.shown_report`) takes them as its block."""
    return [(note, block) for note, block, _ in note_parts(notes)]


def note_parts(notes: Sequence[str]) -> list[tuple[str, list[str], bool]]:
    """:func:`note_blocks`, each pair with whether its block is lines of text the note held
    itself (a target's output: True) rather than the commands of the notes after it."""
    parts: list[tuple[str, list[str], bool]] = []
    for note in notes:
        head, newline, rest = note.partition("\n")
        if newline and _heading(head):
            parts.append((head, rest.removesuffix("\n").split("\n"), True))
            continue
        if note.startswith("  ") and parts and _heading(parts[-1][0]) and not parts[-1][2]:
            parts[-1][1].append(note[2:])
            continue
        parts.append((note, [], False))
    return parts


def _heading(note: str) -> bool:
    return note.endswith(":") and ": " not in note


def _fenced(block: list[str]) -> list[str]:
    """``block`` as a fenced code block, verbatim (unprintable characters shown as escapes),
    its fence longer than any run of backquotes in it."""
    lines = [shown(line, None) for line in block]
    longest = run = 0
    for line in lines:
        for char in line:
            run = run + 1 if char == "`" else 0
            longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return [fence, *lines, fence]


def code(text: str) -> str:
    """``text`` as literal inline code, safe in a table cell (``<code>`` keeps a ``|`` in)."""
    return f"<code>{cell(text)}</code>"


def counts(report: Report) -> str:
    """The one-line tally of findings by severity and unreadable inputs."""
    tally = count_by_severity(report.findings)
    return (
        f"{tally['error']} error(s), {tally['warning']} warning(s), {tally['info']} info, "
        f"{len(report.problems)} input(s) not checked"
    )


def verdict(report: Report, fail_on: FailOn) -> str:
    """What the exit code says, in words."""
    return {
        0: "passes the gate",
        1: "fails the gate",
        2: "could not check every input",
    }[exit_code(report, fail_on)]


def file_verdicts(report: Report, fail_on: FailOn) -> list[tuple[str, str]]:
    """(file, its verdict in a few words) for every file the report is about, in the order the
    report names them: files it describes, then those its findings and problems name."""
    paths: list[str] = []
    described = report.data.get("files")
    for entry in described if isinstance(described, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            paths.append(entry["path"])
    paths += [f.path for f in report.findings] + [p.path for p in report.problems]
    verdicts = []
    for path in dict.fromkeys(paths):
        problems = [p.message for p in report.problems if p.path == path]
        if problems:
            verdicts.append((path, f"not checked: {problems[0]}"))
            continue
        mine = [f for f in report.findings if f.path == path]
        tally = count_by_severity(mine)
        parts = [
            f"{n} {name}{'s' if n != 1 and name != 'info' else ''}"
            for name, n in tally.items()
            if n
        ]
        said = "fails" if any(fail_on.reached_by(f.severity) for f in mine) else "passes"
        verdicts.append((path, said + (f" ({', '.join(parts)})" if parts else "")))
    return verdicts


def title(finding: Finding) -> str:
    """The finding's code and its rule's name (the code alone for a rule not in the catalogue)."""
    from ppaux.report import catalogue

    rule = catalogue.RULES.get(finding.code)  # looked up per call: tests swap the catalogue
    return f"{finding.code} {rule.name}" if rule is not None else finding.code


def _table(table: Table) -> list[str]:
    lines = [f"### {cell(table.title)}", ""]
    lines.append("| " + " | ".join(cell(c) for c in table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    for r, row in enumerate(table.rows):
        cells = [
            f"**{cell(v)}**" if (r, c) in table.marked and v.strip() else cell(v)
            for c, v in enumerate(row)
        ]
        cells += [""] * (len(table.columns) - len(cells))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if table.marked:
        lines += ["Bold marks a cell that a finding is about.", ""]
    return lines


def render(report: Report, fail_on: FailOn = FailOn.ERROR, *, tables: bool = True) -> str:
    """The report as GitHub-flavoured Markdown; ``tables=False`` leaves out tables and notes."""
    lines = [
        f"## ppaux {report.command}",
        "",
        f"**{verdict(report, fail_on)}** (fail-on {fail_on.value}): {counts(report)}.",
        "",
    ]
    verdicts = file_verdicts(report, fail_on)
    if len(verdicts) > 1:
        lines += [f"- {code(path)}: {cell(said)}" for path, said in verdicts]
        lines.append("")
    if report.findings:
        if tables:
            lines += ["### Findings", ""]
        lines += ["| severity | code | where | finding |", "|---|---|---|---|"]
        for f in report.findings:
            where = code(f.path) + (f" {code(f.key)}" if f.key is not None else "")
            what = cell(f.message)
            if f.sglang_error:
                what += f"<br>predicts: {code(f.sglang_error)}"
            if f.hint:
                what += f"<br>fix: {cell(f.hint)}"
            lines.append(f"| {f.severity.value} | {cell(title(f))} | {where} | {what} |")
        lines.append("")
    if report.problems:
        lines += ["### Inputs not checked", "", "| input | reason |", "|---|---|"]
        lines += [f"| {code(p.path)} | {cell(p.message)} |" for p in report.problems]
        lines.append("")
    if tables and (report.notes or report.tables):
        lines += ["### Details", ""]
        for note, block in note_blocks(report.notes):
            if block:  # commands: a paragraph and a code block, copyable as they are
                if lines[-1]:
                    lines.append("")
                lines += [cell(note), "", *_fenced(block), ""]
            else:
                lines.append(f"- {cell(note)}")
        if report.notes and lines[-1]:
            lines.append("")
        for table in report.tables:
            lines += _table(table)
    lines.append("Explain a code with `ppaux explain CODE`.")
    return "\n".join(lines) + "\n"
