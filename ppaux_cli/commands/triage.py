"""``ppaux triage LOG...``: find the root pipeline-parallel failure in sglang server logs."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ppaux.report import Format
from ppaux.triage import LOG_SUFFIXES
from ppaux_cli.exits import fail
from ppaux_cli.options import LimitOption, limits_from
from ppaux_cli.output import emit
from ppaux_cli.output_paths import STDIN_NAME, refuse_stdin_copy, stdin_streams
from ppaux_cli.report_options import ReportOptions, report_options_reading
from ppaux_cli.wording import setting_line

__all__ = ["STDIN_NAME", "triage"]


@report_options_reading(LOG_SUFFIXES)
def triage(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="LOG",
            help="sglang server logs (plain, Kubernetes/CRI, Docker json-file, docker compose, "
            "Ray, kubectl logs --prefix, Slurm srun --label, journald, Grafana/Loki, Google "
            "Cloud Logging and CloudWatch exports, pasted tracebacks; with or without "
            "--timestamps/-t; gzip, bzip2, xz, zstd with ppaux[zstd], UTF-16/32 or not) or "
            "directories of them; - reads one log from stdin.",
        ),
    ],
    local_zone: Annotated[
        str | None,
        typer.Option(
            "--local-zone",
            metavar="ZONE",
            help="The zone of sglang's own times in every log given (UTC, +09:00, "
            "Europe/Paris), which the logs do not say; given, those times are compared across "
            "logs and with a collector's. Without it, only within their log.",
        ),
    ] = None,
    limit: LimitOption = None,
    *,
    options: ReportOptions,
) -> None:
    """Name the first failing ranks in sglang logs, their error, what followed, and what to run."""
    from ppaux.triage import TriageConfigError, triage_paths

    limits = limits_from(limit)
    paths, streams, reader = stdin_streams(paths, options.output)
    try:
        report = triage_paths(paths, streams, local_zone=local_zone, limits=limits)
    except TriageConfigError as exc:
        fail(setting_line(exc))
    refuse_stdin_copy(reader, options.output)
    unread = not any(log.get("lines") for log in report.data.get("logs", []))
    if report.problems and unread and options.format is Format.TEXT:
        # No line of any log could be read: one error line each, nothing on stdout. The
        # other formats write their document, holding each input's problem (exit 2 alike).
        from ppaux.text import shown
        from ppaux_cli.wording import cli_words

        for problem in report.problems[:-1]:
            sys.stderr.write(f"ppaux: error: {shown(problem.worded(cli_words), None)}\n")
        fail(report.problems[-1])
    emit(report, options)
