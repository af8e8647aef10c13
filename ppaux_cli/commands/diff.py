"""``ppaux diff A B``: how two dumps or captures differ, entry by entry (torch-free)."""

from __future__ import annotations

from typing import Annotated

import typer

from ppaux_cli.exits import fail
from ppaux_cli.options import LimitOption, limits_from
from ppaux_cli.output import STDIO, emit
from ppaux_cli.report_options import ReportOptions, report_options

__all__ = ["diff"]


@report_options
def diff(
    a: Annotated[str, typer.Argument(metavar="A", help="The first dump or capture.")],
    b: Annotated[str, typer.Argument(metavar="B", help="The second dump or capture.")],
    limit: LimitOption = None,
    *,
    options: ReportOptions,
) -> None:
    """Compare two dumps: keys added and removed, kind, dtype, shape, stride and device
    changes, values (tensor bytes by digest), and which side pop fails on. Exit 1 when an
    auxiliary entry differs."""
    # The reader is imported here, not at module level, so that 'ppaux --help' stays fast.
    from ppaux.dump import diff_paths

    limits = limits_from(limit)
    if STDIO in (a, b):
        fail("-: diff reads tensor bytes back from the files, so it cannot read stdin; give paths")
    report = diff_paths(a, b, limits)
    emit(report, options)
