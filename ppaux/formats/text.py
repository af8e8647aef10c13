"""The human view: the report's tables, then findings with their codes, then a summary line."""

from __future__ import annotations

import io

from ppaux.catalogue import RULES
from ppaux.findings import Severity
from ppaux.report import Report, Table, count_by_severity

__all__ = ["render"]

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _rich_table(table: Table):  # rich is imported lazily: json output never pays for it
    from rich.table import Table as RichTable
    from rich.text import Text

    out = RichTable(title=table.title, title_justify="left", show_lines=False)
    for index, column in enumerate(table.columns):
        # Keys are never wrapped, so that they stay greppable; long values are cut instead.
        if index == 0:
            out.add_column(column, no_wrap=True)
        else:
            out.add_column(column, overflow="ellipsis", no_wrap=True)
    for r, row in enumerate(table.rows):
        cells = [
            Text(cell, style="bold red" if (r, c) in table.marked else "")
            for c, cell in enumerate(row)
        ]
        out.add_row(*cells)
    return out


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
        console.print(_rich_table(table))
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
        if f.sglang_error:
            console.print(Text(f"    predicts: {f.sglang_error}"), soft_wrap=True)
        if f.hint:
            console.print(Text(f"    fix: {f.hint}"), soft_wrap=True)
    # The likely causes, once per error code, so the view says why as well as what.
    explained = []
    for f in report.findings:
        rule = RULES.get(f.code)
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
