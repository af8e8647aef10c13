"""``triage``: read sglang server logs and report each incident's root, what followed from
it, what the frames say, and what to run next, as a :class:`~ppaux.report.document.Report`.

Every finding carries a ``location`` on the log file and line where its record starts, so
that SARIF and GitHub annotations land on the traceback. Everything a log says is shown
escaped and cut (:func:`ppaux.text.shown`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO

from ppaux.files import stdin_hint
from ppaux.report import Finding, InputProblem, Report, Severity, Table, finding, page_for
from ppaux.sglang import MessageMatch, search_message
from ppaux.text import counted, shown
from ppaux.triage.frames import Build, build_of, out_of_tree, raised_by_capture
from ppaux.triage.incidents import Incident, communication, incidents, seconds_between
from ppaux.triage.kinds import kind_of
from ppaux.triage.lineformat import Envelope, Launcher
from ppaux.triage.reading import LogReading, read_log
from ppaux.triage.records import Event, Failure
from ppaux.triage.sources import LogOpenError, LogSource, expand_paths
from ppaux.triage.steps import Deployment, next_steps, render
from ppaux.triage.zones import local_zone as parse_local_zone

__all__ = ["MAX_COLLATERAL", "MAX_INCIDENTS", "RULE_OF_MESSAGE", "aux_match", "triage_paths"]

#: ppaux's rule for each of sglang's nine messages (by the message's id in
#: :mod:`ppaux.sglang.names`): what ``ppaux explain`` says about its causes.
RULE_OF_MESSAGE: Mapping[str, str] = {
    "add-unsupported": "PP115",
    "add-empty": "PP115",
    "add-bad-name": "PP115",
    "add-not-tensor": "PP115",
    "add-duplicate": "PP115",
    "pop-no-observer": "PP401",
    "pop-unsupported": "PP401",
    "pop-non-tensor": "PP101",
    "pop-not-reconstructed": "PP401",
}
#: Collateral findings listed per incident; the rest are counted in one more finding.
MAX_COLLATERAL = 40
#: Incidents listed (a crash loop repeats one); the rest are counted in one more finding.
MAX_INCIDENTS = 20

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


#: Who a record is from when neither sglang's prefix, torch's rank nor a launcher names it.
_NOBODY = "a process"


def _key(who: str) -> str | None:
    return None if who == _NOBODY else shown(who)


_STAGE = {"add": "the last stage's add", "pop": "the first stage's pop"}
#: How a root finding names its kind (:mod:`ppaux.triage.kinds`).
_KIND_TEXT = {
    "memory": "memory failure",
    "communication-init": "communication failure at set-up (the communicator or process group "
    "could not be created)",
    "communication": "communication failure in flight",
    "shape-kernel": "shape or kernel failure",
    "other": "failure",
    "auxiliary-output": "auxiliary-output failure",
}


def aux_match(failure: Failure) -> MessageMatch | None:
    """The auxiliary-output message ``failure`` raised (its last exception, or one of its
    chain), when it is a RuntimeError that begins with one of sglang's nine messages."""
    cause = _aux_cause(failure)
    return None if cause is None else cause[0]


def _aux_cause(failure: Failure) -> tuple[MessageMatch, str, str] | None:
    """(match, exception, message line) of the exception of ``failure`` that is one of
    sglang's nine messages: its last exception, else the latest of its chain."""
    candidates = [(failure.exception, failure.message), *reversed(failure.chain)]
    for exception, message in candidates:
        if exception is None or exception.rsplit(".", 1)[-1] != "RuntimeError":
            continue
        line = message.split("\n", 1)[0]
        found = search_message(line)
        if found is not None and found.start == 0:
            return found, exception, line
    return None


def _location(failure: Failure | Event) -> dict[str, Any]:
    if isinstance(failure, Failure):
        function = failure.frames[-1].function if failure.frames else (failure.process or "")
    else:
        function = failure.kind
    return {"file": failure.source, "line": failure.line, "function": shown(function or "-")}


def _at(record: Failure | Event) -> str:
    return f"{shown(record.source, None)}:{record.line}"


#: What a time without a zone (sglang's own) is, said wherever one is shown.
LOCAL_TIME = "local time of the host, zone unknown"


def _when(record: Failure | Event, short: bool = False) -> str:
    """The record's time as written; one without a zone says so, and one the user gave a zone
    says which (in a table, in short)."""
    if not record.time_text:
        return "an unknown time"
    text = shown(record.time_text)
    if record.zone is None:
        return f"{text} ({'local' if short else LOCAL_TIME})"
    if record.time_text.endswith(record.zone):  # written with its zone
        return text
    zone = shown(record.zone, None)
    return f"{text} ({zone})" if short else f"{text} (local time, in {zone} as given)"


def _time_fields(record: Failure | Event) -> dict[str, Any]:
    """``time`` as written and ``time_zone``: the zone as written ('Z', '+02:00') or as the
    user gave it, or None for sglang's own times, the local time of a host in a zone the log
    does not say."""
    if record.time_text is None:
        return {"time": None, "time_zone": None}
    zone = None if record.zone is None else shown(record.zone, None)
    return {"time": shown(record.time_text), "time_zone": zone}


def _later(record: Failure | Event, root: Failure) -> str:
    delay = seconds_between(root, record)
    if delay is None:
        # Times of two hosts' clocks, or of a host's clock and a collector's, do not compare.
        return "after the root" if record.time_text is None else f"at {_when(record)}"
    if delay < 0:
        return f"{-delay:.1f} s before the root"
    return f"{delay:.1f} s after the root"


#: Cut-off tracebacks of one incident listed one by one; the rest are one finding.
_MAX_CUT = 5


def _stage_of(ranks: str | None) -> int | None:
    """The pipeline stage a rank prefix names (``PP1 TP0`` -> 1), or None."""
    for token in (ranks or "").split():
        if token.startswith("PP") and token[2:].isdigit() and len(token) <= 8:
            return int(token[2:])
    return None


def _cannot_raise(root: Failure, match: MessageMatch, pp_size: int | None) -> str | None:
    """Why the stage that logged ``root`` cannot raise ``match``'s message (pop runs on the
    first stage, add on the last), or None when it can or the log does not say."""
    stage = _stage_of(root.ranks)
    if stage is None:
        return None
    if match.message.function.startswith("pop") and stage != 0:
        return f"PP{stage} is not the first stage, the only one whose pop raises this message"
    last = None if pp_size is None else pp_size - 1
    if match.message.function.startswith("add") and last is not None and stage != last:
        return f"PP{stage} is not the last stage (PP{last}), the only one whose add raises it"
    return None


def _root_findings(
    number: int, incident: Incident, pp_size: int | None = None
) -> tuple[list[Finding], MessageMatch | None]:
    root = incident.root
    members = incident.members
    who = ", ".join(dict.fromkeys(shown(m.who) for m in members))
    cause = _aux_cause(root)
    also = ""
    if incident.ranks:
        also = f" ({len(members)} processes failed with it at the same moment)"
    message = f"{who} failed first at {_when(root)} ({_at(root)}): {shown(root.error)}{also}"
    extra: dict[str, Any] = {
        "incident": number,
        "root": True,
        "kind": kind_of(root),
        "ranks": [shown(m.who) for m in members],
        "exception": None if root.exception is None else shown(root.exception),
        "message": shown(root.message, 2000),
        **_time_fields(root),
        "log": root.source,
        "line": root.line,
        "records": [{"log": m.source, "line": m.line, "ranks": shown(m.who)} for m in members],
    }
    findings: list[Finding] = []
    match: MessageMatch | None = None
    if cause is not None:
        match, exception, line = cause
        if (exception, line) != (root.exception, root.message.split("\n", 1)[0]):
            # The message is in the chain: the last exception is what was raised about it.
            message += f" (in its chain: {shown(exception)}: {shown(line)})"
        rule = RULE_OF_MESSAGE[match.message.id]
        # The causes of this message, raised on this side (explain's page for it), not the
        # causes of every auxiliary-output message: one story per message, in every format.
        causes = list(page_for(match.message.id).causes)
        extra.update(sglang_message=match.message.id, rule=rule, causes=causes)
        impossible = _cannot_raise(root, match, pp_size)
        if impossible is not None:
            message += (
                f"; {impossible}: the log's rank prefixes or its stages are not what they seem"
            )
            extra["stage_fits"] = False
        stage = _STAGE[match.message.function.split("_", 1)[0]]
        if raised_by_capture(root.frames):
            message += f"; raised by ppaux's strict capture, as {stage} would (see {rule})"
        else:
            message += f"; raised by {stage} (see {rule})"
        findings.append(
            finding(
                "PP801",
                root.source,
                message,
                _key(root.who),
                # sglang's message as raised (a message with a key keeps its key), without
                # whatever else the log line held after it.
                sglang_error=shown(line[match.start : match.end]),
                extra=extra,
                location=_location(root),
            )
        )
    else:
        kind = kind_of(root)
        message += (
            "; the log cuts its traceback before the exception line: the cause is not in it"
            if kind == "unknown"
            else f"; a {_KIND_TEXT[kind]}, not an auxiliary-output error"
        )
        findings.append(
            finding(
                "PP802", root.source, message, _key(root.who), extra=extra, location=_location(root)
            )
        )
    build = build_of(root.frames)
    if build is not None:
        findings.append(
            finding(
                "PP806",
                root.source,
                f"sglang of {shown(root.who)} is {_build_text(build)}; {build.fits_text()}",
                _key(root.who),
                extra={
                    "incident": number,
                    "install": build.kind,
                    "where": shown(build.where, None),
                    "fits": None if build.fits is None else list(build.fits),
                    "frames_judged": build.judged,
                },
                location=_location(root),
            )
        )
    # The culprit is looked for in the root's ranks first, then in what followed (the last
    # stage's own traceback when it died waiting).
    for member in [*members, *incident.collateral]:
        strange = out_of_tree(member.frames)
        if not strange:
            continue
        culprit = strange[0]
        findings.append(
            finding(
                "PP805",
                member.source,
                f"the traceback of {shown(member.who)} passes through "
                f"{shown(culprit.file, 300)}:{culprit.line} in {shown(culprit.function)}, "
                "which is neither sglang, a package it requires, torch nor the standard library: "
                "the likely culprit",
                _key(member.who),
                extra={
                    "incident": number,
                    "frames": [
                        {"file": shown(f.file, 300), "line": f.line, "function": shown(f.function)}
                        for f in strange[:10]
                    ],
                },
                location=_location(member),
            )
        )
        break
    if raised_by_capture(root.frames):
        findings.append(
            finding(
                "PP808",
                root.source,
                f"{shown(root.who)} stopped at ppaux's strict capture "
                f"({shown(root.frames[-1].file.rsplit('/', 1)[-1])}): the capture it wrote names "
                "where the value entered",
                _key(root.who),
                extra={"incident": number},
                location=_location(root),
            )
        )
    cut = [member for member in members if member.cut]
    for member in cut[:_MAX_CUT]:
        findings.append(
            finding(
                "PP810",
                member.source,
                f"the traceback of {shown(member.who)} at {_at(member)} ends before its "
                "exception line",
                _key(member.who),
                extra={"incident": number},
                location=_location(member),
            )
        )
    if len(cut) > _MAX_CUT:
        rest = cut[_MAX_CUT:]
        findings.append(
            finding(
                "PP810",
                rest[0].source,
                f"{len(rest)} more tracebacks of incident {number} end before their exception "
                f"line (the first: {shown(rest[0].who)} at {_at(rest[0])})",
                extra={"incident": number, "records": [_at(m) for m in rest[:50]]},
                location=_location(rest[0]),
            )
        )
    return findings, match


#: A sampling observer's methods that sglang's PP transport calls (``to_pp_tensors`` on the last
#: stage, ``from_pp_tensors`` on the first).
_OBSERVER_METHODS = ("to_pp_tensors", "from_pp_tensors")


def _observer_target(incident: Incident, match: MessageMatch | None) -> str | None:
    """What ``ppaux check-observer`` should be given for ``incident``, when its root is the
    observer's to check: an observer method raised (a frame of the deployment's own called
    ``from_pp_tensors``/``to_pp_tensors``; its file named), or the last stage's add refused
    what the observer returned (sglang's add messages; the module is not in the traceback,
    the observer's method having returned before add ran). None otherwise."""
    for member in [*incident.members, *incident.collateral]:
        for frame in out_of_tree(member.frames):
            if frame.function in _OBSERVER_METHODS:
                return f"{frame.file}:Observer"
    if match is not None and match.message.id.startswith("add-"):
        if not raised_by_capture(incident.root.frames):
            return "MODULE:Observer"
    return None


def _build_text(build: Build) -> str:
    if build.kind == "wheel":
        return f"a wheel in {shown(build.where, None)}"
    if build.kind == "source checkout":
        return f"a source checkout at {shown(build.where, None)}"
    return f"installed in {shown(build.where, None)}"


def _collateral_findings(number: int, incident: Incident) -> list[Finding]:
    root = incident.root
    pointer = f"collateral of {shown(root.who)} at {_at(root)}"
    findings: list[Finding] = []
    for failure in incident.collateral:
        findings.append(
            finding(
                "PP803",
                failure.source,
                f"{shown(failure.who)} failed {_later(failure, root)} with "
                f"{shown(failure.error)} ({pointer})",
                _key(failure.who),
                extra={"incident": number, "log": failure.source, "line": failure.line},
                location=_location(failure),
            )
        )
    grouped: dict[tuple[str, str], list[Event]] = {}
    for event in incident.events:
        grouped.setdefault((event.kind, event.who), []).append(event)
    for (kind, who), events in grouped.items():
        first = events[0]
        times = f" ({len(events)} lines)" if len(events) > 1 else ""
        if kind == "sigquit":
            findings.append(
                finding(
                    "PP804",
                    first.source,
                    f"the parent process received SIGQUIT from a failing child "
                    f"{_later(first, root)}{times} ({pointer})",
                    None,
                    extra={"incident": number, "lines": [e.line for e in events[:20]]},
                    location=_location(first),
                )
            )
            continue
        what = "an NCCL watchdog timeout" if kind == "watchdog" else "a TCPStore error"
        findings.append(
            finding(
                "PP803",
                first.source,
                f"{shown(who)} logged {what} {_later(first, root)}{times} ({pointer})",
                _key(who),
                extra={
                    "incident": number,
                    "kind": kind,
                    "lines": [e.line for e in events[:20]],
                    "text": shown(first.text, 300),
                },
                location=_location(first),
            )
        )
    if len(findings) > MAX_COLLATERAL:
        kept = findings[:MAX_COLLATERAL]
        kept.append(
            finding(
                "PP803",
                root.source,
                f"{len(findings) - MAX_COLLATERAL} more collateral records of incident "
                f"{number} are not listed ({pointer})",
                extra={"incident": number, "omitted": len(findings) - MAX_COLLATERAL},
                location=_location(root),
            )
        )
        findings = kept
    return findings


def _no_root(loose: list[Failure | Event]) -> Finding:
    """PP809: the logs hold no root. Said plainly, with why: communication failures only (the
    cause is on the network or another node), signals only, or tracebacks cut off."""
    first = loose[0]
    count = len(loose)
    failures = [r for r in loose if isinstance(r, Failure)]
    events = [r for r in loose if isinstance(r, Event)]
    signals = [e for e in events if e.kind == "sigquit"]
    ranks = sorted({shown(f.who) for f in failures if f.ranks})
    where = f"{'' if count == 1 else 'the first: '}{shown(first.who)} at {_at(first)}"
    # The parent's SIGQUIT follows any scheduler's failure, communication ones included: it
    # does not make communication failures anything else.
    if (
        all(communication(f) for f in failures)
        and all(e.kind in ("watchdog", "store", "sigquit") for e in events)
        and (failures or len(signals) < len(events))
    ):
        on = f" on {', '.join(ranks[:12])}{' ...' if len(ranks) > 12 else ''}" if ranks else ""
        cause = "network-or-other-node"
        message = (
            "no root in this log: the cause is on the network or another node; "
            f"{counted(count - len(signals), 'communication failure')}{on} ({where}) and "
            "nothing else"
            + (f" but the parent's SIGQUIT ({len(signals)} lines)" if signals else "")
        )
    elif not failures and len(signals) == count:
        cause = "signals-only"
        message = (
            "no root in this log: it holds only signals (SIGQUIT from a failing child, "
            f"{where}); the failing process's own output is not in it"
        )
    else:
        cause = "not-in-these-logs"
        message = (
            f"no root in these logs: {counted(count, 'record')} of communication failures or "
            f"SIGQUIT ({where}), and no failure that caused "
            f"{'it' if count == 1 else 'them'} in these logs"
        )
    return finding(
        "PP809",
        first.source,
        message,
        # Processes failed: the deployment is down even though its root is elsewhere, and a
        # gate must not read that as a pass.
        severity=Severity.ERROR if failures else None,
        extra={
            "root": False,
            "no_root": cause,
            "ranks": ranks[:50],
            "records": [f"{r.source}:{r.line}" for r in loose[:50]],
        },
        location=_location(first),
    )


def _more_incidents(rest: list[Incident]) -> Finding:
    """One finding for the incidents past :data:`MAX_INCIDENTS`, of the first one's code."""
    first = rest[0].root
    code = "PP801" if any(aux_match(i.root) for i in rest) else "PP802"
    return finding(
        code,
        first.source,
        f"{len(rest)} more incidents are not listed (the report lists the first "
        f"{MAX_INCIDENTS}); the next one: {shown(first.who)} at {_at(first)}: {shown(first.error)}",
        _key(first.who),
        extra={
            "omitted": len(rest),
            "incidents": [f"{i.root.source}:{i.root.line}" for i in rest[:50]],
        },
        location=_location(first),
    )


def _skew_findings(failures: list[Failure]) -> list[Finding]:
    """PP807 when two failing processes' frames show different sglang builds."""
    seen: list[tuple[Failure, Build]] = []
    for failure in failures:
        build = build_of(failure.frames)
        if build is not None:
            seen.append((failure, build))
    for index, (a, build_a) in enumerate(seen):
        for b, build_b in seen[index + 1 :]:
            disjoint = bool(
                build_a.fits and build_b.fits and not set(build_a.fits) & set(build_b.fits)
            )
            if not disjoint and build_a.where == build_b.where:
                continue
            if a.who == b.who:
                continue
            why = (
                f"{shown(a.who)}: {build_a.fits_text()}; {shown(b.who)}: {build_b.fits_text()}"
                if disjoint
                else f"{shown(a.who)} runs sglang from {shown(build_a.where, None)}, "
                f"{shown(b.who)} from {shown(build_b.where, None)}"
            )
            return [
                finding(
                    "PP807",
                    b.source,
                    f"the ranks' tracebacks show different sglang builds: {why}",
                    _key(b.who),
                    extra={
                        "ranks": [shown(a.who), shown(b.who)],
                        "logs": [f"{a.source}:{a.line}", f"{b.source}:{b.line}"],
                    },
                    location=_location(b),
                )
            ]
    return []


#: Why a file of Python source (torch's, a test's) is no log, though it quotes tracebacks.
_SOURCE_CODE = (
    "not an sglang log: it reads as Python source code (definitions and imports, and no line "
    "of sglang's), whatever tracebacks it quotes"
)

#: Why a file is no log of sglang's.
_NOT_A_LOG = (
    "not an sglang log: no line has the shape of sglang's, of a launcher's or of a traceback"
)


def _refuse_unshaped(report: Report, readings: list[LogReading]) -> None:
    """Files that hold no line of sglang's or a launcher's shape (a README, a torch dump, a
    one-line text file) are taken out of ``readings``: each is an input problem (an error line,
    exit 2) when no other log of the run is one, else a PP811 warning beside them."""
    unshaped = [r for r in readings if not r.shaped and not r.empty]
    if not unshaped:
        return
    fine = [r for r in readings if r.shaped and not r.empty]
    for reading in unshaped:
        readings.remove(reading)
        why = _SOURCE_CODE if reading.source_code else _NOT_A_LOG
        if not fine:
            report.problems.append(InputProblem(reading.source, why))
            continue
        report.findings.append(
            finding(
                "PP811",
                reading.source,
                f"{shown(reading.source, None)} is {why}; it was left out, the other "
                "logs were triaged",
                extra={"log": reading.source, "lines": reading.lines},
                location={"file": reading.source, "line": 1, "function": "-"},
            )
        )


def _oversized_findings(reading: LogReading) -> list[Finding]:
    """PP811 for the lines whose rank or line number is too long to read."""
    if not reading.oversized:
        return []
    count = len(reading.oversized) + reading.more_oversized
    first = reading.oversized[0]
    return [
        finding(
            "PP811",
            reading.source,
            f"{counted(count, 'line')} of {shown(reading.source, None)} hold a rank or line "
            f"number of more digits than any real one (the first: line {first}); "
            "read without it",
            extra={"log": reading.source, "lines": reading.oversized, "count": count},
            location={"file": reading.source, "line": first, "function": "-"},
        )
    ]


def _log_findings(reading: LogReading) -> list[Finding]:
    if reading.cut is None:
        return []
    return [
        finding(
            "PP810",
            reading.source,
            f"the {reading.cut_compression} stream ends early ({shown(reading.cut)}); the "
            f"{reading.lines} lines before the cut were triaged",
            location={"file": reading.source, "line": max(1, reading.lines), "function": "-"},
        )
    ]


#: Launchers whose prefix names a process that keeps its name (a pod and its container, a
#: compose service's container), so that the same ranks under two of them are two processes.
_NAMING = (Launcher.KUBECTL, Launcher.COMPOSE)


def _tell_apart(readings: list[LogReading], failures: list[Failure]) -> None:
    """Ranks that two pods (or compose containers) both name, as two replicas of a deployment
    read together do, are told apart by the pod: 'pod/sglang-0/sglang PP0'. Ranks that one pod
    alone names keep their own name."""
    naming = {r.source for r in readings if r.launcher in _NAMING}
    streams: dict[str, set[str]] = {}
    for failure in failures:
        if failure.ranks and failure.stream and failure.source in naming:
            streams.setdefault(failure.ranks, set()).add(failure.stream)
    for failure in failures:
        if failure.ranks and len(streams.get(failure.ranks, ())) > 1:
            failure.ranks = f"{failure.stream} {failure.ranks}"


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


def triage_paths(
    paths: Iterable[str],
    streams: Mapping[str, BinaryIO] | None = None,
    *,
    local_zone: str | None = None,
) -> Report:
    """Triage the logs at ``paths`` (files, directories of logs, or names in ``streams``,
    such as ``<stdin>``) into one report.

    ``local_zone`` ('UTC', '+09:00', 'Europe/Paris') is the zone of sglang's own times in
    every one of these logs, which they do not say: given, those times are instants, compared
    across logs and with a collector's; otherwise only within their log. An unusable value
    raises :class:`~ppaux.triage.zones.TriageConfigError`.
    """
    zone = None if local_zone is None else parse_local_zone(local_zone)
    streams = streams or {}
    report = Report("triage")
    given = list(paths)
    files, unusable = expand_paths([p for p in given if p not in streams])
    report.problems += [InputProblem.of(p) for p in unusable]
    sources = [LogSource(p, streams[p]) for p in given if p in streams]
    sources += [LogSource(p) for p in _once(files)]
    readings: list[LogReading] = []
    order = 0
    for source in sources:
        try:
            reading = read_log(source, order, zone)
        except LogOpenError as exc:
            named = exc.path in given  # by the user, not found in a directory
            hint = stdin_hint(exc.path, "ppaux triage - < server.log") if named else ""
            report.problems.append(InputProblem(exc.path, exc.reason + hint, exc.suggestions))
            continue
        order += 1_000_000_000
        if reading.empty and source.name in given:
            # A log named by the user (or stdin) that holds nothing: the wrong file, or one
            # rotated away; a gate must not pass on it.
            report.problems.append(InputProblem(source.name, _empty_reason(source)))
            continue
        readings.append(reading)
    _refuse_unshaped(report, readings)
    for path in given:
        # A directory whose every log is empty is refused as an empty file is; one that holds
        # some empty logs beside others lists them (0 lines) and triages the rest.
        if path not in streams and os.path.isdir(path):
            inside = [r for r in readings if _under(r.source, path)]
            if inside and all(r.empty for r in inside):
                report.problems.append(InputProblem(shown(path, None), _EMPTY_DIRECTORY))
    failures = [f for r in readings for f in r.failures]
    events = [e for r in readings for e in r.events]
    _tell_apart(readings, failures)
    deployment = _deployment(readings, failures)
    captures = [c for r in readings for c in r.captures]
    found, orphans, orphan_events = incidents(failures, events)
    matches: list[MessageMatch | None] = []
    observers: list[str] = []
    for number, incident in enumerate(found[:MAX_INCIDENTS], 1):
        roots, match = _root_findings(number, incident, deployment.pp_size)
        report.findings += roots
        report.findings += _collateral_findings(number, incident)
        matches.append(match)
        target = _observer_target(incident, match)
        if target is not None and target not in observers:
            observers.append(target)
    if len(found) > MAX_INCIDENTS:
        report.findings.append(_more_incidents(found[MAX_INCIDENTS:]))
    report.findings += _skew_findings(failures)
    loose: list[Failure | Event] = [*orphans, *(e for e in orphan_events if e.kind != "capture")]
    no_root = None
    if loose:
        orphaned = _no_root(loose)
        no_root = orphaned.extra["no_root"]
        report.findings.append(orphaned)
    for reading in readings:
        report.findings += _log_findings(reading)
        report.findings += _oversized_findings(reading)
    release = None
    if found:
        build = build_of(found[0].root.frames)
        if build is not None and build.fits:
            release = ", ".join(build.fits)
    plan = next_steps(
        [(kind_of(i.root), m) for i, m in zip(found[:MAX_INCIDENTS], matches, strict=False)],
        deployment,
        captures,
        observers,
        release,
        no_root,
    )
    steps = [render(step) for step in plan]
    report.tables.append(_logs_table(readings))
    if found:
        report.tables.append(_incidents_table(found))
        if any(i.root.time_text and not i.root.zoned for i in found):
            report.notes.append(
                f"local time: sglang's own, the {LOCAL_TIME}; ppaux compares such times only "
                "within their log"
            )
    if steps:
        report.notes += ["next steps:", *(f"  {step}" for step in steps)]
    report.data["logs"] = [
        {
            "log": r.source,
            "format": r.envelope.value,
            "launcher": r.launcher.value,
            "lines": r.lines,
            "failures": len(r.failures) + r.more_failures,
            "events": len(r.events) + r.more_events,
            "long_lines": r.long_lines,
        }
        for r in readings
    ]
    report.data["incidents"] = [
        {
            "root": {"ranks": shown(i.root.who), "log": i.root.source, "line": i.root.line},
            "ranks": [shown(m.who) for m in i.members],
            "error": shown(i.root.error),
            **_time_fields(i.root),
            "collateral": len(i.collateral) + len(i.events),
        }
        for i in found
    ]
    report.data["next_steps"] = steps
    report.data["steps"] = [step.as_data() for step in plan]
    report.data["pp_size"] = {
        "value": deployment.pp_size
        if deployment.pp_size is not None
        else (None if deployment.highest_stage is None else deployment.highest_stage + 1),
        "from": deployment.pp_size_from.removeprefix("the ")
        if deployment.pp_size is not None
        else "lower bound",
    }
    return report


#: Digits of a setting read from a log (a longer number is no setting).
_MAX_SETTING_DIGITS = 4


def _deployment(readings: list[LogReading], failures: list[Failure]) -> Deployment:
    """What the logs say of the deployment: the stages (from the server arguments, else the
    highest seen), one launch or several, and how it runs (Kubernetes, Docker, a shell)."""
    settings = [r.server_args for r in readings if r.server_args]
    pp_size = None
    nnodes = None
    model = None
    pp_size_from = "the server arguments"
    for found in settings:
        value = found.get("pp_size", "")
        if value.isdigit() and len(value) <= _MAX_SETTING_DIGITS and int(value) > 0:
            pp_size = int(value)
            pp_size_from = found.get("pp_size_from", "the server arguments")
        nodes = found.get("nnodes", "")
        if nodes.isdigit() and len(nodes) <= _MAX_SETTING_DIGITS:
            nnodes = int(nodes)
        model = model or found.get("model_path")
    ranks = {n for r in readings for n in r.pp_ranks}
    for failure in failures:
        for token in (failure.ranks or "").split():
            if token.startswith("PP") and token[2:].isdigit() and len(token) <= 8:
                ranks.add(int(token[2:]))
    highest = max(ranks) if ranks else None
    kubernetes = any(
        r.envelope is Envelope.CRI or r.launcher is Launcher.KUBECTL or r.kubernetes
        for r in readings
    )
    docker = any(
        r.envelope is Envelope.DOCKER_JSON or r.launcher is Launcher.COMPOSE for r in readings
    )
    runtime = "kubernetes" if kubernetes else "docker" if docker else "shell"
    single = nnodes == 1 and (pp_size or 0) > 1
    return Deployment(pp_size, highest, single, runtime, model, pp_size_from)


def _logs_table(readings: list[LogReading]) -> Table:
    rows = tuple(
        (
            shown(r.source, None),
            r.envelope.value + ("" if r.launcher.value == "none" else f" + {r.launcher.value}"),
            str(r.lines),
            str(len(r.failures) + r.more_failures),
            str(len(r.events) + r.more_events),
        )
        for r in readings
    )
    return Table("logs", ("log", "format", "lines", "tracebacks", "other records"), rows)


def _incidents_table(found: list[Incident]) -> Table:
    """One row per incident. The time column is 'local time' when every root's time is
    sglang's own (no zone); where zoned and local times mix, each local one says so."""
    local = [i.root.time_text is not None and not i.root.zoned for i in found]
    timed = [i.root.time_text is not None for i in found]
    all_local = any(local) and local == timed

    def when(root: Failure) -> str:
        if all_local and root.time_text is not None:
            return shown(root.time_text)
        return _when(root, short=True)

    rows = tuple(
        (
            str(number),
            ", ".join(dict.fromkeys(shown(m.who) for m in incident.members)),
            when(incident.root),
            _at(incident.root),
            str(len(incident.collateral) + len(incident.events)),
        )
        for number, incident in enumerate(found, 1)
    )
    columns = ("#", "first failing ranks", "local time" if all_local else "time", "log")
    return Table("incidents", (*columns, "collateral"), rows)
