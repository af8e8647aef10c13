"""``triage``: read sglang server logs and report each incident's root, what followed from
it, what the frames say, and what to run next, as a :class:`~ppaux.report.document.Report`.

Every finding carries a ``location`` on the log file and line where its record starts, so
that SARIF and GitHub annotations land on the traceback. Everything a log says is kept
as written, cut to a bound (:func:`ppaux.text.cut`); every format shows it escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import BinaryIO, cast

from ppaux.limits import Limits
from ppaux.report import Finding, FindingsBudget, Report, ReportBuilder, TriageExtra, finding
from ppaux.sglang import MessageMatch
from ppaux.suggestions import RaiseLimit, limit_note
from ppaux.text import cut
from ppaux.triage.deaths import death_of
from ppaux.triage.decompressed import decompressed_places, decompressed_table
from ppaux.triage.frames import Build, build_of
from ppaux.triage.hangs import hang_words
from ppaux.triage.incidents import Incident, incidents
from ppaux.triage.inputs import log_findings, oversized_findings, read_all
from ppaux.triage.kinds import MEMORY, kind_of, local_note
from ppaux.triage.lineshapes import Envelope, Launcher
from ppaux.triage.logreading import watchdog_words
from ppaux.triage.longlines import long_line_findings
from ppaux.triage.ncclflight import ib_device
from ppaux.triage.noroots import no_root_finding
from ppaux.triage.programsteps import host_memory
from ppaux.triage.reading import LogReading
from ppaux.triage.records import Event, Failure
from ppaux.triage.rootfacts import first_root, no_failure_note, relayer_pointer
from ppaux.triage.roots import (
    LOCAL_TIME,
    aux_match,
    frame_findings,
    key_of,
    later_than,
    location_of,
    observer_target,
    place_of,
    processes_of,
    root_finding,
    time_fields,
)
from ppaux.triage.runs import log_names, one_run_note, untied_logs
from ppaux.triage.startup import mark_startup
from ppaux.triage.steps import Deployment, Step, next_steps, render
from ppaux.triage.tables import incidents_table, logs_table
from ppaux.triage.warnedcause import setup_named
from ppaux.triage.zones import local_zone as parse_local_zone

__all__ = ["triage_paths"]


#: Cut-off tracebacks of one incident listed one by one; the rest are one finding.
_MAX_CUT = 5
#: Events that say nothing alone: ppaux capture's own lines, a warning of an import that failed
#: that the program went on after (a cut traceback's cause at most).
_QUIET = ("capture", "import-warn", "nccl-note")


def _root_findings(
    number: int, incident: Incident, pp_size: int | None = None
) -> tuple[list[Finding], MessageMatch | None]:
    root, match = root_finding(number, incident, pp_size)
    findings = [root, *frame_findings(number, incident)]
    members = incident.members
    ended = [member for member in members if member.cut]
    for member in ended[:_MAX_CUT]:
        findings.append(
            finding(
                "PP810/traceback-cut",
                member.source,
                f"the traceback of {cut(member.who)} at {place_of(member)} ends before its "
                "exception line",
                key_of(member.who),
                extra={"incident": number},
                location=location_of(member),
            )
        )
    if len(ended) > _MAX_CUT:
        rest = ended[_MAX_CUT:]
        findings.append(
            finding(
                "PP810/tracebacks-cut",
                rest[0].source,
                f"{len(rest)} more tracebacks of incident {number} end before their exception "
                f"line (the first: {cut(rest[0].who)} at {place_of(rest[0])})",
                extra={"incident": number, "records": [place_of(m) for m in rest[:50]]},
                location=location_of(rest[0]),
            )
        )
    return findings, match


def _collateral_findings(number: int, incident: Incident, budget: FindingsBudget) -> list[Finding]:
    """The collateral records of incident ``number``: the first ``budget`` lists
    (``max_collateral``) one finding each, one finding for the rest."""
    root = incident.root
    pointer = f"collateral of {cut(root.who)} at {place_of(root)}"
    findings: list[Finding] = []
    for failure in incident.collateral:
        findings.append(
            finding(
                "PP803/failed",
                failure.source,
                f"{cut(failure.who)} failed {later_than(failure, root)} with "
                f"{cut(failure.error)} ({relayer_pointer(failure, root) or pointer})",
                key_of(failure.who),
                extra={"incident": number, "log": failure.source, "line": failure.line},
                location=location_of(failure),
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
                    f"{later_than(first, root)}{times} ({pointer})",
                    None,
                    extra={"incident": number, "lines": [e.line for e in events[:20]]},
                    location=location_of(first),
                )
            )
            continue
        what = "logged a TCPStore error"
        if kind == "watchdog":  # a timeout where one of its lines says one
            said = [watchdog_words(e.text) for e in events]
            what = next((w for w in said if w.endswith("timeout")), said[0])
        if kind == "death":  # as the line says it: a Ray worker's end, a launcher's kill
            what = death_of(first) or "died"
        if kind == "hang":  # sglang's watchdog's record, a py-spy dump
            what = hang_words(first.text) or "hung"
        findings.append(
            finding(
                "PP803/collateral",
                first.source,
                f"{cut(who)} {what} {later_than(first, root)}{times} ({pointer})",
                key_of(who),
                extra={
                    "incident": number,
                    "kind": kind,
                    "lines": [e.line for e in events[:20]],
                    "text": cut(first.text, 300),
                },
                location=location_of(first),
            )
        )
    kept = budget.first(findings, "max_collateral")
    if len(findings) > len(kept):
        most = budget.bound("max_collateral")
        kept.append(
            finding(
                "PP803/omitted",
                root.source,
                f"{len(findings) - most} more collateral records of incident "
                f"{number} are not listed ({pointer}) {limit_note('max_collateral', most)}",
                extra={"incident": number, "omitted": len(findings) - most},
                location=location_of(root),
                suggestions=(RaiseLimit("max_collateral", most),),
            )
        )
        findings = kept
    return findings


def _more_incidents(rest: list[Incident], listed: int) -> Finding:
    """One finding for the incidents past the ``listed`` first (``max_incidents``), of the
    first one's code."""
    first = rest[0].root
    code = "PP801/omitted" if any(aux_match(i.root) for i in rest) else "PP802/omitted"
    return finding(
        code,
        first.source,
        f"{len(rest)} more incidents are not listed (the report lists the first "
        f"{listed} {limit_note('max_incidents', listed)}); the next one: {cut(first.who)} at "
        f"{place_of(first)}: {cut(first.error)}",
        key_of(first.who),
        extra={
            "omitted": len(rest),
            "incidents": [f"{i.root.source}:{i.root.line}" for i in rest[:50]],
        },
        location=location_of(first),
        suggestions=(RaiseLimit("max_incidents", listed),),
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
                f"{cut(a.who)}: {build_a.fits_text()}; {cut(b.who)}: {build_b.fits_text()}"
                if disjoint
                else f"{cut(a.who)} runs sglang from {build_a.where}, "
                f"{cut(b.who)} from {build_b.where}"
            )
            return [
                finding(
                    "PP807",
                    b.source,
                    f"the ranks' tracebacks show different sglang builds: {why}",
                    key_of(b.who),
                    extra={
                        "ranks": [cut(a.who), cut(b.who)],
                        "logs": [f"{a.source}:{a.line}", f"{b.source}:{b.line}"],
                    },
                    location=location_of(b),
                )
            ]
    return []


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


def _incident_findings(
    report: ReportBuilder, found: list[Incident], pp_size: int | None, budget: FindingsBudget
) -> tuple[list[MessageMatch | None], list[str]]:
    """Each listed incident's findings onto ``report``; the nine messages each root matched,
    and the observers worth checking."""
    matches: list[MessageMatch | None] = []
    observers: list[str] = []
    for number, incident in enumerate(budget.first(found, "max_incidents"), 1):
        roots, match = _root_findings(number, incident, pp_size)
        report.findings += roots
        report.findings += _collateral_findings(number, incident, budget)
        matches.append(match)
        target = observer_target(incident, match)
        if target is not None and target not in observers:
            observers.append(target)
    if len(found) > (listed := budget.bound("max_incidents")):
        report.findings.append(_more_incidents(found[listed:], listed))
    return matches, observers


def triage_paths(
    paths: Iterable[str],
    streams: Mapping[str, BinaryIO] | None = None,
    *,
    local_zone: str | None = None,
    limits: Limits = Limits(),
) -> Report:
    """Triage the logs at ``paths`` (files, directories of logs, or names in ``streams``,
    such as ``<stdin>``) into one report.

    ``local_zone`` ('UTC', '+09:00', 'Europe/Paris') is the zone of sglang's own times in
    every one of these logs, which they do not say: given, those times are instants, compared
    across logs and with a collector's; otherwise only within their log. An unusable value
    raises :class:`~ppaux.triage.zones.TriageConfigError`. ``limits`` bound what reading the
    logs may cost (the ``max_log_*``, ``max_inflat*``, ``max_failures`` and ``max_events``
    fields of :class:`~ppaux.limits.Limits`).
    """
    zone = None if local_zone is None else parse_local_zone(local_zone)
    report = ReportBuilder("triage")
    readings = read_all(report, list(paths), streams or {}, zone, limits)
    for reading in readings:
        mark_startup(reading.failures)
    failures = [f for r in readings for f in r.failures]
    events = [e for r in readings for e in r.events]
    _tell_apart(readings, failures)
    deployment = _deployment(readings, failures)
    captures = [c for r in readings for c in r.captures]
    found, orphans, orphan_events = incidents(failures, events)
    budget = FindingsBudget(limits)  # the incidents listed, and each one's collateral records
    matches, observers = _incident_findings(report, found, deployment.pp_size, budget)
    report.findings += _skew_findings(failures)
    # NCCL's warnings alone say something only of a log that holds nothing else of sglang's.
    quiet = {*_QUIET, *(("nccl-warn",) if any(r.sglang_seen for r in readings) else ())}
    loose: list[Failure | Event] = [*orphans, *(e for e in orphan_events if e.kind not in quiet)]
    warned = [e for e in orphan_events if e.kind == "nccl-warn" and e.kind in quiet]
    no_root, crash, local, ended, relayed = None, False, False, False, False
    killed_by, setup = None, None
    if loose:
        orphaned = no_root_finding(loose, warned, deployment.ascend)
        facts = cast("TriageExtra", orphaned.extra)  # PP809's data (no_root_finding)
        no_root = facts["no_root"]
        crash = facts["crashed"] is True
        ended = facts["exited"] is True
        relayed = facts["relayed"] is True
        killed_by = str(facts["killer"]) if facts["killer"] else None
        local = facts["host"] is True
        setup = str(facts["nccl_setup"]) if facts["nccl_setup"] else None
        if no_root == "signals-only" and warned:
            no_root = "signals-and-nccl-warnings"  # the steps of a broken connection too
        report.findings.append(orphaned)
    for reading in readings:
        report.findings += log_findings(reading)
        report.findings += oversized_findings(reading)
        report.findings += long_line_findings(reading, limits.max_log_line)
    release = _release(found)
    kinds = [kind_of(i.root) for i in budget.first(found, "max_incidents")]
    host = local or any(
        kind.startswith(("communication", "shape-kernel")) and local_note(i.root.error) is not None
        for kind, i in zip(kinds, found, strict=False)
    )
    plan = next_steps(
        list(zip(kinds, matches, strict=False)),
        deployment,
        captures,
        observers,
        release,
        no_root,
        host,
        crash,
        ended,
        killed_by,
        setup=setup or setup_named([i.root for i in found]),
        host_memory=_host_memory(kinds, found),
        relayed=relayed,
        **(first_root(found[0].root, deployment, release) if found else {}),
    )
    _fill(report, readings, found, deployment, plan)
    _say_one_run(report, readings, found, [*failures, *events], budget.bound("max_incidents"))
    return report.build()


def _ib_device(events: list[Event]) -> str | None:
    """The InfiniBand device the first of NCCL's warnings that names one says failed."""
    named = (ib_device(e.text) for e in events if e.kind == "nccl-warn")
    return next((d for d in named if d is not None), None)


def _host_memory(kinds: list[str], found: list[Incident]) -> bool:
    """Whether a memory root's words say the host's memory ran out, not a GPU's."""
    return any(
        kind == MEMORY and host_memory(i.root.error) for kind, i in zip(kinds, found, strict=False)
    )


def _release(found: list[Incident]) -> str | None:
    """The sglang releases the first root's frames fit, where they fit some."""
    build = build_of(found[0].root.frames) if found else None
    return ", ".join(build.fits) if build is not None and build.fits else None


def _say_one_run(
    report: ReportBuilder,
    readings: list[LogReading],
    found: list[Incident],
    records: list[Failure | Event],
    listed: int,
) -> None:
    """For each incident whose ranks come from logs that nothing ties into one run
    (:func:`~ppaux.triage.runs.untied_logs`), a note that says they were read as one (for the
    ``listed`` first), and the incident's ``one_run`` in the data: 'tied' (one log, or logs tied
    by a name or a setting) or 'assumed'."""
    names = log_names(readings, records) if len(readings) > 1 else {}
    for number, (incident, data) in enumerate(zip(found, report.data["incidents"], strict=True), 1):
        logs = untied_logs(incident.members, names)
        data["one_run"] = "assumed" if logs else "tied"
        if logs and number <= listed:
            note = one_run_note(number, [cut(log) for log in logs], len(incident.members))
            at = report.notes.index("next steps:") if "next steps:" in report.notes else None
            report.notes.insert(len(report.notes) if at is None else at, note)


def _fill(
    report: ReportBuilder,
    readings: list[LogReading],
    found: list[Incident],
    deployment: Deployment,
    plan: list[Step],
) -> None:
    """The report's tables, notes and data: the logs, the incidents, the next steps (text and
    argument vectors), the pipeline size and where it came from."""
    steps = [render(step) for step in plan]
    report.findings = decompressed_places(report.findings, readings)
    if readings:  # no log read (a missing file): no table of none
        report.tables.append(logs_table(readings))
    if found:
        report.tables.append(decompressed_table(incidents_table(found), readings))
        if any(i.root.time_text and not i.root.zoned for i in found):
            report.notes.append(
                f"local time: sglang's own, the {LOCAL_TIME}; ppaux compares such times only "
                "within their log"
            )
    if readings and not found and not any(f.code == "PP809" for f in report.findings):
        report.notes.append(no_failure_note(len(readings), sum(r.lines for r in readings)))
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
            "root": {"ranks": cut(i.root.who), "log": i.root.source, "line": i.root.line},
            "ranks": processes_of(i.members),
            "error": cut(i.root.error),
            **time_fields(i.root),
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
    # sglang's own records decide (its prefix, its server arguments' record, its frames); a
    # launch command's flags are another program's words as well (vLLM's, Megatron's).
    sglang = any(r.sglang_seen for r in readings) or any(
        f.process is not None or any("sglang" in frame.file for frame in f.frames) for f in failures
    )
    ascend = any(r.ascend for r in readings)
    ib = _ib_device([e for r in readings for e in r.events])
    return Deployment(pp_size, highest, single, runtime, model, pp_size_from, sglang, ascend, ib)
