"""The human view: the verdict and the findings with their codes first, then the tables, then
the notes, and the verdict again; every line wrapped at the terminal's width."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ppaux.limits import Limits
from ppaux.report import catalogue
from ppaux.report.document import Report, Table, count_by_severity
from ppaux.report.findings import Finding, Location, Severity
from ppaux.report.formats.wrapping import MIN_WIDTH, shell_lines, wrap
from ppaux.text import counted
from ppaux.text import shown as text_shown

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["place", "render"]

#: Commands whose report is a listing: its notes are what it lists, so the tally ends them.
_LISTINGS = frozenset({"capture list"})

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}

#: Rows of one table the text view shows unless told (``Limits.max_table_rows``).
_TABLE_ROWS = Limits().max_table_rows


def _rich_table(table: Table, width: int, color: bool) -> tuple[Any, list[str]]:
    """The rich table of ``table`` at ``width``, and the lines that go below it.

    Nothing a reader needs is lost at 80 columns, and nothing is broken in the middle of a word:
    the narrow columns keep their whole width and the widest share what is left; a cell too
    wide for its column is shown cut and numbered (``…[1]``), its whole value listed below the
    table under that number. A table with too many wide columns for ``width`` is given as one
    block per row instead (the table is then None)."""
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    # Titles and headers are given as Text, never as strings that rich would read as markup
    # (a '[' from a dump name would be taken for a style, or refused).
    # The title is printed by render(), wrapped between words only, so that a long dump name
    # is never broken inside.
    out = RichTable(
        show_lines=False,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    # Without colour a differing cell is starred, so that it still stands out.
    rows = [
        [cell if color or (r, c) not in table.marked else f"*{cell}" for c, cell in enumerate(row)]
        for r, row in enumerate(table.rows)
    ]
    count = len(table.columns)
    longest = [
        max([len(column)] + [len(row[i]) for row in rows if i < len(row)])
        for i, column in enumerate(table.columns)
    ]
    # One space at each edge, and three between columns (padding and the blank rule).
    caps = _widths(longest, [len(c) for c in table.columns], width - 3 * count + 1)
    if caps is None:
        return None, _records(table, rows)
    notes: list[str] = []
    shown_rows: list[list[str]] = []
    firsts = [row[0] if row else "" for row in table.rows]
    # A row is named by its first cell (a key, a dump) only where that cell tells it apart.
    named = all(firsts) and len(set(firsts)) == len(firsts) and not any(map(str.isdigit, firsts))
    for row in rows:
        shown = []
        for c, cell in enumerate(row):
            cap = caps[c] if c < len(caps) else len(cell)
            if len(cell) <= cap:
                shown.append(cell)
                continue
            marker = f"[{len(notes) + 1}]"
            keep = max(cap - len(marker) - 1, 0)
            shown.append(cell[:keep] + "…" + marker if keep else marker)
            r = len(shown_rows)
            notes.append(
                f"{marker} {_cell_name(table, r, c, named)}: {text_shown(table.rows[r][c], None)}"
            )
        shown_rows.append(shown)
    for index, column in enumerate(table.columns):
        out.add_column(
            Text(column),
            overflow="ellipsis",
            no_wrap=True,
            min_width=caps[index],
            max_width=caps[index],
        )
    for r, row in enumerate(shown_rows):
        out.add_row(
            *(
                Text(cell, style="bold red" if (r, c) in table.marked else "")
                for c, cell in enumerate(row)
            )
        )
    return out, notes


def _cell_name(table: Table, r: int, c: int, named: bool) -> str:
    """Which cell a footnote gives: 'KEY, column' where the first cells name the rows (keys,
    dumps), else 'row N (first-column VALUE), column', N counted from 1 as the table shows the
    rows; the column is left out when its header is empty or 'value'."""
    first = table.rows[r][0] if table.rows[r] else ""
    if c == 0:
        return f"row {r + 1}, {table.columns[0] or 'value'}"
    if named:
        row = text_shown(first, None)
    else:
        row = f"row {r + 1}"
        if first:
            # 'batch 1'; a bare or '#' header reads without the space ('#2', '2').
            head = table.columns[0]
            gap = " " if head and head != "#" else ""
            row += f" ({head}{gap}{text_shown(first, None)})"
    column = table.columns[c]
    return row if column in ("", "value") else f"{row}, {column}"


#: The narrowest a shared column gets before the table is given row by row instead.
_MIN_SHARED = 12


def _widths(needs: list[int], floors: list[int], room: int) -> list[int] | None:
    """Column widths within ``room``: every column its whole width if all fit; else the widest
    columns but the first (the row's name, a key or a dump, which is never cut) share what the
    rest leave (columns of one width together, cut alike), each at least its header and
    :data:`_MIN_SHARED` wide; None when even that does not fit."""
    if sum(needs) <= room:
        return list(needs)
    order = sorted(range(1, len(needs)), key=lambda i: -needs[i])
    for count in range(1, len(order) + 1):
        if count < len(order) and needs[order[count]] == needs[order[count - 1]]:
            continue  # columns as wide as each other are cut alike, or not at all
        shared = sorted(order[:count], key=lambda i: needs[i])
        left = room - needs[0] - sum(needs[i] for i in order[count:])
        widths = list(needs)
        for position, i in enumerate(shared):
            fair = left // (len(shared) - position) if left > 0 else 0
            widths[i] = min(needs[i], fair)
            left -= widths[i]
        for i in shared:  # and as wide as each other once cut
            widths[i] = min(widths[j] for j in shared if needs[j] == needs[i])
        if all(widths[i] >= min(needs[i], max(_MIN_SHARED, floors[i])) for i in shared):
            return widths
    return None


def _title_lines(title: str, width: int) -> list[str]:
    """``title`` wrapped at ``width`` between words; a word longer than the width (a dump's
    path) stays whole on a line of its own."""
    import textwrap

    return textwrap.wrap(title, width, break_long_words=False, break_on_hyphens=False)


def _records(table: Table, rows: list[list[str]]) -> list[str]:
    """The table as one block per row: its first cell, then each other cell whole."""
    lines = [table.title, ""] if table.title else []
    for row in rows:
        lines.append(row[0] if row else "")
        for column, cell in zip(table.columns[1:], row[1:], strict=False):
            if cell:
                lines.append(f"  {column or 'value'}: {cell}")
    return lines


def place(location: Location) -> str:
    """``FILE:LINE in FUNCTION``; without `` in ...`` where the function is unknown ('-')."""
    inflated = " (decompressed)" if location.decompressed else ""
    at = f"{location.file}{inflated}:{location.line}"
    function = location.function
    return at if function in ("", "-", "?") else f"{at} in {function}"


def _finding_lines(f: Finding, width: int) -> list[str]:
    """One finding: its headline (code, severity, where, message), then its location, the
    sglang error it predicts and its fix, each wrapped under a hanging indent."""
    where = f.path + (f" [{f.key}]" if f.key is not None else "")
    lines = wrap(f"{f.code} {f.severity.value} {where}: {f.message}", width)
    if f.location is not None:
        lines += wrap(f"at: {place(f.location)}", width, "    ", _DETAIL)
    if f.sglang_error:
        lines += wrap(f"predicts: {f.sglang_error}", width, "    ", _DETAIL)
    if f.hint:
        lines += wrap(f"fix: {f.hint}", width, "    ", _DETAIL)
    return lines


#: Where the continuation of a finding's location, prediction or fix begins.
_DETAIL = " " * 8


def _note_lines(notes: Sequence[str], width: int) -> list[str]:
    """The notes wrapped at ``width``: a heading note's block (triage's ``next steps:`` and its
    commands) as shell lines that stay pasteable, every other note as prose under a hanging
    indent four spaces past its own."""
    from ppaux.report.formats.markdown import note_parts

    lines: list[str] = []
    for note, block, held in note_parts(notes):
        lines += _prose(note, width)
        for line in block:
            # A note's own lines (what a target printed) are text; a block after it, commands.
            lines += _prose("  " + line, width) if held else shell_lines(line, width, "  ")
    return lines


def _prose(text: str, width: int) -> list[str]:
    """``text`` wrapped after its own leading spaces, continued four spaces further in."""
    body = text.lstrip(" ")
    return wrap(body, width, text[: len(text) - len(body)])


def _ordered(findings: Sequence[Finding]) -> list[Finding]:
    """The findings, most severe first; in the order the command gave them within a severity
    (a root before its collateral)."""
    return sorted(findings, key=lambda f: -f.severity.rank)


def _say(console: Console, lines: list[str]) -> None:
    from rich.text import Text

    for line in lines:
        console.print(Text(line), soft_wrap=True)


def _print_findings(console: Console, findings: list[Finding], width: int) -> None:
    """Each finding, its code and severity coloured, then the likely causes of each error code
    once, so the view says why as well as what."""
    from rich.text import Text

    for f in findings:
        first, *rest = _finding_lines(f, width)
        label = f"{f.code} {f.severity.value}"
        line = Text()
        line.append(label, style=_STYLE[f.severity])
        line.append(first[len(label) :])
        console.print(line, soft_wrap=True)
        _say(console, rest)
    explained = []
    for f in findings:
        rule = catalogue.RULES.get(f.code)  # looked up per call: tests swap the catalogue
        if f.severity is Severity.ERROR and rule is not None and f.code not in explained:
            explained.append(f.code)
            console.print()
            _say(console, wrap(f"Likely causes of {f.code} ({rule.name}):", width))
            for cause in f.causes(rule):
                _say(console, wrap(cause, width, "  - ", "    "))


def _print_table(
    console: Console, table: Table, width: int, color: bool, max_rows: int = _TABLE_ROWS
) -> None:
    """One table: its first ``max_rows`` rows, or its ``text_rows`` when fewer (every other
    format lists all), the values too long for a cell below it, and the key to its marks."""
    cap = min(max_rows, table.text_rows or max_rows)
    hidden = len(table.rows) - cap
    if hidden > 0:
        table = dataclasses.replace(
            table,
            rows=table.rows[:cap],
            marked=frozenset(m for m in table.marked if m[0] < cap),
        )
    rich_table, cut = _rich_table(table, width, color)
    if rich_table is not None:
        _say(console, _title_lines(table.title, width))
        console.print(rich_table)
    if hidden > 0:
        more = counted(hidden, "more row")
        _say(console, wrap(f"({more}; the JSON report lists every row)", width))
    for note in cut:  # a value to grep for or copy: wrapped between words only
        _say(console, _prose(note, width))
    if cut:
        console.print()
    if table.marked and not color:
        _say(console, wrap("(* marks a cell that a finding is about)", width))
    console.print()


def render(
    report: Report, *, color: bool = False, width: int = 100, max_table_rows: int = _TABLE_ROWS
) -> str:
    """Render the report for a terminal (``color``) or for a pipe or file (plain text), each
    table cut at ``max_table_rows`` rows (``Limits.max_table_rows``, by default).

    What matters first: the verdict (the tally of findings by severity), the findings, most
    severe first, and the likely causes of each error code; then the tables; then the notes
    (triage's next steps among them); and the tally again, last, where a terminal that
    scrolled leaves the eye. Every line is wrapped at ``width`` (:mod:`wrapping`)."""
    from rich.console import Console

    width = max(width, MIN_WIDTH)
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )
    counts = count_by_severity(report.findings)
    summary = (
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info, "
        f"{len(report.problems)} input(s) not checked"
    )
    # The verdict leads wherever there is more than the tally, except in a listing (capture
    # list's notes are what it lists): a gate's notes alone (--findings-only) follow it.
    listing = report.command in _LISTINGS
    lead = bool(report.findings or report.tables or (report.notes and not listing))
    if lead:
        _say(console, wrap(summary, width))
        console.print()
    _print_findings(console, _ordered(report.findings), width)
    if report.findings:
        console.print()
    for table in report.tables:
        _print_table(console, table, width, color, max_table_rows)
    _say(console, _note_lines(report.notes, width))
    # rich pads lines to the console width; trailing blanks only make diffs noisy.
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    # The verdict again, last, one blank line above it where it also led.
    return "\n".join([*lines, *([""] if lead else []), *wrap(summary, width)]) + "\n"
