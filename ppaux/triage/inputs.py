"""The logs given to ``triage``: each read (:func:`read_all`), or refused in one problem (a
file that cannot be opened, an empty one, a directory of empty logs, a file that is no log of
sglang's), and what is said of a log itself (cut compression, lines too long to read).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import BinaryIO

from ppaux.files import stdin_hint
from ppaux.limits import Limits
from ppaux.report import Finding, InputProblem, Location, ReportBuilder, finding
from ppaux.text import counted, cut
from ppaux.triage.reading import LogReading, read_log
from ppaux.triage.sources import (
    LogOpenError,
    LogSource,
    NoLogLines,
    corrupt_stream,
    expand_paths,
)
from ppaux.triage.zones import LocalZone

__all__ = ["log_findings", "oversized_findings", "read_all", "refuse_unshaped"]


#: Why a directory whose logs all hold nothing is refused.
_EMPTY_DIRECTORY = "every log file it holds is empty"


def _empty_reason(source: LogSource) -> str:
    """Why a log named by the user that holds nothing is refused: an empty file, or a
    compressed one that inflates to nothing."""
    if source.stream is None:
        try:
            if os.path.getsize(source.name) > 0:
                return "empty log (the file inflates to nothing)"
        except OSError:
            pass
    return "empty file"


def _under(path: str, directory: str) -> bool:
    """True when ``path`` was found in ``directory`` (the walk joins names onto it)."""
    return path.startswith(os.path.join(directory, ""))


#: Why a file of Python source (torch's, a test's) is no log, though it quotes tracebacks.
_SOURCE_CODE = (
    "not an sglang log: it reads as Python source code (definitions and imports, and no line "
    "of sglang's), whatever tracebacks it quotes"
)

#: Why a file is no log of sglang's.
_NOT_A_LOG = (
    "not an sglang log: no line has the shape of sglang's, of a launcher's or of a traceback"
)


def _unshaped_reason(reading: LogReading) -> str:
    """Why ``reading`` is no log; a compressed stream that ended early is named, since its
    lines may be only the start of a log (a line cut in the middle has no shape)."""
    why = _SOURCE_CODE if reading.source_code else _NOT_A_LOG
    if reading.cut is None:
        return why
    damage = "is corrupt" if corrupt_stream(reading.cut) else "ends early"
    stream = f"its {reading.cut_compression} stream {damage} ({cut(reading.cut)})"
    if not reading.lines:
        return f"{why}: {stream} inside its first line"
    return (
        f"{why} in the {counted(reading.lines, 'line')} read: {stream}, so they may be only the "
        "start of a log"
    )


def refuse_unshaped(
    report: ReportBuilder, readings: list[LogReading], unlogged: list[NoLogLines] | None = None
) -> None:
    """Files that hold no line of sglang's or a launcher's shape (a README, a torch dump, a
    one-line text file), and JSON documents none of whose records is a log line (``unlogged``),
    are taken out of ``readings``: each is an input problem (an error line, exit 2) when no
    other log of the run is one, else a PP811 warning beside them."""
    unshaped = [r for r in readings if not r.shaped and not r.empty]
    refused = [(r.source, _unshaped_reason(r), r.lines) for r in unshaped]
    refused += [(e.path, e.reason, 0) for e in unlogged or []]
    if not refused:
        return
    fine = [r for r in readings if r.shaped and not r.empty]
    for reading in unshaped:
        readings.remove(reading)
    for source, why, lines in refused:
        if not fine:
            report.problems.append(InputProblem(source, why))
            continue
        report.findings.append(
            finding(
                "PP811/left-out",
                source,
                f"{source} is {why}; it was left out, the other logs were triaged",
                extra={"log": source, "lines": lines},
                location=Location(source, 1, "-"),
            )
        )


def oversized_findings(reading: LogReading) -> list[Finding]:
    """PP811 for the lines whose rank, line number, pid or exit code is too long to read."""
    if not reading.oversized:
        return []
    count = len(reading.oversized) + reading.more_oversized
    first = reading.oversized[0]
    return [
        finding(
            "PP811/oversized-numbers",
            reading.source,
            f"{counted(count, 'line')} of {reading.source} hold a rank, line number, pid "
            f"or exit code of more digits than any real one (the first: line {first}); "
            "read without it (the record kept, the number said too long)",
            extra={"log": reading.source, "lines": reading.oversized, "count": count},
            location=Location(reading.source, first, "-"),
        )
    ]


def _distrust(reading: LogReading) -> None:
    """Forget what a corrupt compressed log was read to hold: its text is garbled from a
    point that cannot be told (a CRC is checked only at the stream's end), so none of it is
    read as failures."""
    reading.failures.clear()
    reading.events.clear()
    reading.captures.clear()
    reading.more_failures = reading.more_events = 0


def log_findings(reading: LogReading) -> list[Finding]:
    if reading.cut is None:
        return []
    if corrupt_stream(reading.cut):
        # The gate fails on it as on a log cut short, and nothing of its text is reported.
        return [
            finding(
                "PP812/corrupt",
                reading.source,
                f"the {reading.cut_compression} stream is corrupt ({cut(reading.cut)}): "
                f"its {reading.lines} lines cannot be trusted, and none of them was triaged",
                extra={"log": reading.source, "lines": reading.lines, "corrupt": True},
                location=Location(reading.source, max(1, reading.lines), "-"),
            )
        ]
    if not reading.failures and not reading.more_failures:
        # Nothing failed in the part read: a gate must not read a log cut short as a pass.
        return [
            finding(
                "PP812/cut-no-failure",
                reading.source,
                f"the {reading.cut_compression} stream ends early ({cut(reading.cut)}) and "
                f"the {reading.lines} lines before the cut hold no failure: the rest could not "
                "be read",
                extra={"log": reading.source, "lines": reading.lines},
                location=Location(reading.source, max(1, reading.lines), "-"),
            )
        ]
    return [
        finding(
            "PP810/stream-cut",
            reading.source,
            f"the {reading.cut_compression} stream ends early ({cut(reading.cut)}); the "
            f"{reading.lines} lines before the cut were triaged",
            location=Location(reading.source, max(1, reading.lines), "-"),
        )
    ]


def _once(files: list[str]) -> list[str]:
    """``files`` with each file once: a log given twice, or given and found again in a
    directory also given (or through a link), would count its failures twice."""
    seen: set[tuple[int, int]] = set()
    kept: list[str] = []
    for path in files:
        try:
            status = os.stat(path)
        except OSError:
            kept.append(path)  # reported as a problem when it is opened
            continue
        identity = (status.st_dev, status.st_ino)
        if identity not in seen:
            seen.add(identity)
            kept.append(path)
    return kept


def read_all(
    report: ReportBuilder,
    given: list[str],
    streams: Mapping[str, BinaryIO],
    zone: LocalZone | None,
    limits: Limits = Limits(),
) -> list[LogReading]:
    """Read every log ``given`` (files, directories of logs, names in ``streams``) within
    ``limits``; each that cannot be read, holds nothing or is no log of sglang's is one problem
    on ``report``."""
    files, unusable = expand_paths([p for p in given if p not in streams], limits.max_log_files)
    report.problems += [InputProblem.of(p) for p in unusable]
    sources = [LogSource(p, streams[p], limits) for p in given if p in streams]
    sources += [LogSource(p, None, limits) for p in _once(files)]
    readings: list[LogReading] = []
    unlogged: list[NoLogLines] = []
    order = 0
    for source in sources:
        try:
            reading = read_log(source, order, zone)
        except NoLogLines as exc:
            unlogged.append(exc)
            continue
        except LogOpenError as exc:
            named = exc.path in given  # by the user, not found in a directory
            hint = stdin_hint(exc.path, "ppaux triage - < server.log") if named else ""
            report.problems.append(InputProblem(exc.path, exc.reason + hint, exc.suggestions))
            continue
        order += 1_000_000_000
        if reading.empty and source.name in given:
            # A log named by the user (or stdin) that holds nothing: the wrong file, or one
            # rotated away; a gate must not pass on it.
            why = _empty_reason(source)
            if reading.cut is not None:  # not empty: cut before its first line
                damage = "corrupt" if corrupt_stream(reading.cut) else "cut"
                why = (
                    f"{reading.cut_compression} stream {damage} before its first line "
                    f"({cut(reading.cut)}); nothing could be read"
                )
            report.problems.append(InputProblem(source.name, why))
            continue
        if reading.cut is not None and corrupt_stream(reading.cut):
            _distrust(reading)
        readings.append(reading)
    refuse_unshaped(report, readings, unlogged)
    for path in given:
        # A directory whose every log is empty is refused as an empty file is; one that holds
        # some empty logs beside others lists them (0 lines) and triages the rest.
        if path not in streams and os.path.isdir(path):
            inside = [r for r in readings if _under(r.source, path)]
            if not inside or not all(r.empty for r in inside):
                continue
            if any(_under(problem.path, path) for problem in report.problems):
                # Some of its files were refused for another reason: the folder-wide claim
                # would be untrue, so each empty one is named.
                report.problems += [InputProblem(r.source, "empty file") for r in inside]
            else:
                report.problems.append(InputProblem(path, _EMPTY_DIRECTORY))
    return readings
