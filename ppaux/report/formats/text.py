"""The human view: the report's tables, then findings with their codes, then a summary line."""

from __future__ import annotations

import io
from typing import Any

from ppaux.report import catalogue
from ppaux.report.document import Report, Table, count_by_severity
from ppaux.report.findings import Severity

__all__ = ["render"]

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _rich_table(table: Table, width: int, color: bool) -> Any:  # rich is imported lazily
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    # Titles and headers are given as Text, never as strings that rich would read as markup
    # (a '[' from a dump name would be taken for a style, or refused).
    out = RichTable(
        title=Text(table.title),
        title_justify="left",
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
    # The first column (a key, a fact, a dump) keeps up to 48 characters and folds beyond; the
    # others share what is left, each cut with an ellipsis past its share, so that no column
    # is squeezed to nothing however long the values are.
    first = min(longest[0], 48)
    caps = _shares(longest[1:], [len(c) for c in table.columns[1:]], width - first - 3 * count)
    for index, column in enumerate(table.columns):
        if index == 0:
            out.add_column(Text(column), overflow="fold", min_width=first, max_width=first)
        else:
            out.add_column(
                Text(column), overflow="ellipsis", no_wrap=True, max_width=caps[index - 1]
            )
    for r, row in enumerate(rows):
        out.add_row(
            *(
                Text(cell, style="bold red" if (r, c) in table.marked else "")
                for c, cell in enumerate(row)
            )
        )
    return out


def _shares(needs: list[int], floors: list[int], room: int) -> list[int]:
    """Split ``room`` among columns: narrow ones get what they need, wide ones share the rest."""
    caps = [0] * len(needs)
    left = list(range(len(needs)))
    while left:
        fair = max(8, room // len(left))
        fits = [i for i in left if needs[i] <= fair]
        if not fits:
            for i in left:
                caps[i] = max(floors[i], fair)
            break
        for i in fits:
            caps[i] = max(floors[i], needs[i])
            room -= caps[i]
            left.remove(i)
    return caps


def render(report: Report, *, color: bool = False, width: int = 100) -> str:
    """Render the report for a terminal (``color``) or for a pipe or file (plain text)."""
    from rich.console import Console
    from rich.text import Text

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
    for table in report.tables:
        console.print(_rich_table(table, width, color))
        if table.marked and not color:
            console.print(Text("(* marks a cell that a finding is about)"))
        console.print()
    # Finding lines are never wrapped, so that each stays one greppable line.
    for note in report.notes:
        console.print(Text(note), soft_wrap=True)
    for f in report.findings:
        where = f.path + (f" [{f.key}]" if f.key is not None else "")
        line = Text()
        line.append(f"{f.code} {f.severity.value}", style=_STYLE[f.severity])
        line.append(f" {where}: {f.message}")
        console.print(line, soft_wrap=True)
        if f.location is not None:
            at = f"    at: {f.location['file']}:{f.location['line']} in {f.location['function']}"
            console.print(Text(at), soft_wrap=True)
        if f.sglang_error:
            console.print(Text(f"    predicts: {f.sglang_error}"), soft_wrap=True)
        if f.hint:
            console.print(Text(f"    fix: {f.hint}"), soft_wrap=True)
    # The likely causes, once per error code, so the view says why as well as what.
    explained = []
    for f in report.findings:
        rule = catalogue.RULES.get(f.code)  # looked up per call: tests swap the catalogue
        if f.severity is Severity.ERROR and rule is not None and f.code not in explained:
            explained.append(f.code)
            console.print()
            console.print(Text(f"Likely causes of {f.code} ({rule.name}):"), soft_wrap=True)
            for cause in rule.causes:
                console.print(Text(f"  - {cause}"), soft_wrap=True)
    counts = count_by_severity(report.findings)
    summary = (
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info, "
        f"{len(report.problems)} input(s) not checked"
    )
    if report.findings or report.tables:
        console.print()
    console.print(Text(summary))
    # rich pads lines to the console width; trailing blanks only make diffs noisy.
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"
