"""``ppaux tensorize DUMP -o FIXED``: rewrite a dump with its non-tensor auxiliary values made
tensors, so that rank 0 pops it cleanly."""

from __future__ import annotations

import sys
import warnings
from typing import Annotated

import typer

from ppaux_cli.exits import fail
from ppaux_cli.options import LimitOption, limits_from

__all__ = ["tensorize"]


def tensorize(
    path: Annotated[
        str,
        typer.Argument(
            metavar="DUMP", help="A dump file (torch.save, pickle or ppaux capture); never changed."
        ),
    ],
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            metavar="FIXED",
            help="Where to write the rewritten dump (never the input itself).",
        ),
    ],
    limit: LimitOption = None,
) -> None:
    """Rewrite DUMP into FIXED with every non-tensor auxiliary value converted to a tensor;
    print each conversion and refusal. Exit 1, writing nothing, when nothing can be converted
    or a value cannot be."""
    # torch warns on import when numpy is absent; tensorize never needs numpy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    from ppaux.errors import PpauxError
    from ppaux.fix.tensorize import tensorize_dump
    from ppaux.torch_probe import require_torch

    limits = limits_from(limit)
    try:
        require_torch("ppaux tensorize")
        result = tensorize_dump(path, output, limits)
    except PpauxError as exc:
        fail(str(exc))
    lines = []
    for item in result.conversions:
        lines.append(f"converted {item.locator}[{item.key!r}]: {item.before} -> {item.after}")
    for refusal in result.refusals:
        where = f"{refusal.locator}[{refusal.key!r}]" if refusal.key is not None else path
        lines.append(f"refused {where}: {refusal.reason}")
    if result.written:
        count = len(result.conversions)
        lines.append(f"wrote {output} ({count} value{'s' if count != 1 else ''} converted)")
    else:
        lines.append(f"nothing written to {output}")
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    raise typer.Exit(0 if result.written else 1)
