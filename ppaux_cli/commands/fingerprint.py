"""``ppaux fingerprint``: snapshot this host's versions and sglang's transport capability."""

from __future__ import annotations

from typing import Annotated

import typer

from ppaux_cli.exits import fail
from ppaux_cli.options import LimitOption, OutputOption, check_stage_options, limits_from
from ppaux_cli.output import warn, write_text
from ppaux_cli.output_paths import check_output_path
from ppaux_cli.wording import cli_words

__all__ = ["fingerprint"]


def fingerprint(
    output: OutputOption = None,
    pp_rank: Annotated[
        int | None,
        typer.Option("--pp-rank", metavar="N", help="This process's pipeline stage (0 = first)."),
    ] = None,
    pp_size: Annotated[
        int | None, typer.Option("--pp-size", metavar="N", help="Number of pipeline stages.")
    ] = None,
    sglang_path: Annotated[
        str | None,
        typer.Option(
            "--sglang-path",
            metavar="DIR|WHEEL",
            help="Analyse this sglang tree or wheel instead of the installed one.",
        ),
    ] = None,
    limit: LimitOption = None,
) -> None:
    """Write a JSON snapshot of versions, rank and sglang's PP transport, for check-skew."""
    # Imported here, not at module level, so that other commands do not pay for it at start-up.
    from ppaux.sglang_source import ANALYSIS_LIMITS, SglangPathError
    from ppaux.skew import collect

    check_stage_options(pp_rank, pp_size)
    limits = limits_from(limit, used=ANALYSIS_LIMITS, command="fingerprint")
    # Never a file of the tree or wheel it reads (any file in it: the tree is code, not dumps).
    check_output_path(output, [sglang_path] if sglang_path is not None else [])
    try:
        snapshot = collect(sglang_path=sglang_path, pp_rank=pp_rank, pp_size=pp_size, limits=limits)
    except SglangPathError as exc:
        fail(f"--sglang-path {exc}")
    if sglang_path is None and not snapshot.sglang.found:
        _no_sglang()
    # A file a limit kept from being read: the fingerprint says it is unreadable (and why);
    # this says how to read it.
    for file in snapshot.sglang.files:
        if file.suggestions:
            warn(f"{file.path}: {file.reason}; {cli_words(file.suggestions)}")
    write_text(snapshot.dumps(), output, "the fingerprint")


def _no_sglang() -> None:
    """Refuse a fingerprint of a Python without sglang: it would hold no transport facts, and
    check-skew could compare nothing of the transport (exit 2, nothing written)."""
    import shlex
    import sys

    fail(
        f"sglang is not importable from this Python ({shlex.quote(sys.executable)}), so a "
        "fingerprint taken here holds none of sglang's facts; take it with the Python that "
        "runs sglang (PYTHON -m ppaux_cli fingerprint ..., ppaux installed in that "
        "environment), or pass --sglang-path DIR|WHEEL"
    )
