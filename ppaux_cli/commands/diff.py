"""``ppaux diff A B``: how two dumps or captures differ, entry by entry (torch-free)."""

from __future__ import annotations

from typing import Annotated

import typer

from ppaux.report.formats import Format
from ppaux_cli.options import (
    ConfigOption,
    FailOnOption,
    FormatOption,
    IgnoreOption,
    LimitOption,
    OutputOption,
    SelectOption,
    StrictOption,
    limits_from,
)
from ppaux_cli.output import emit


def diff(
    a: Annotated[str, typer.Argument(metavar="A", help="The first dump or capture.")],
    b: Annotated[str, typer.Argument(metavar="B", help="The second dump or capture.")],
    limit: LimitOption = None,
    format: FormatOption = Format.TEXT,
    fail_on: FailOnOption = None,
    output: OutputOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    strict: StrictOption = None,
    config: ConfigOption = None,
) -> None:
    """Compare two dumps: keys added and removed, kind, dtype, shape, stride and device
    changes, values (tensor bytes by digest), and which side pop fails on. Exit 1 when an
    auxiliary entry differs."""
    # The reader is imported here, not at module level, so that 'ppaux --help' stays fast.
    from ppaux.dump.diff import diff_paths

    report = diff_paths(a, b, limits_from(limit))
    emit(report, format, fail_on, output, select=select, ignore=ignore, strict=strict,
         config=config)
