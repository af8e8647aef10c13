"""An incident's root, said as a finding: which of sglang's nine messages it is (PP801, with
the stage that raises it and ppaux's rule) or what kind of failure (PP802), what its frames
say (PP806 the build, PP805 a culprit outside sglang, PP808 ppaux's strict capture), and the
plain statement that the logs hold no root (PP809). Also how a record's place and time are
written in every finding (:func:`place_of`, :func:`when_of`, :func:`time_fields`).
"""

from __future__ import annotations

from ppaux.report import (
    Finding,
    Location,
    RecordPlace,
    TimeFields,
    TriageExtra,
    finding,
    page_for,
)
from ppaux.sglang import ADD, POP, TRANSPORT_FILE, MessageMatch, sglang_raised_in
from ppaux.text import counted, cut
from ppaux.triage.buildsteps import SYMBOL_CAUSE
from ppaux.triage.cutkinds import cut_kind
from ppaux.triage.frames import Build, build_of, out_of_tree, raised_by_capture
from ppaux.triage.incidents import Incident
from ppaux.triage.kinds import cut_in_setup, kind_of, local_note, quoted_relay
from ppaux.triage.mpisteps import mpi_failure
from ppaux.triage.records import Event, Failure
from ppaux.triage.runs import seconds_between
from ppaux.triage.warnedcause import warned_words

__all__ = [
    "KIND_TEXT",
    "LOCAL_TIME",
    "aux_match",
    "frame_findings",
    "key_of",
    "later_than",
    "location_of",
    "observer_target",
    "place_of",
    "processes_of",
    "root_finding",
    "time_fields",
    "when_of",
]

#: Who a record is from when neither sglang's prefix, torch's rank nor a launcher names it.
_NOBODY = "a process"


def key_of(who: str) -> str | None:
    return None if who == _NOBODY else cut(who)


STAGE = {"add": "the last stage's add", "pop": "the first stage's pop"}
#: How a root finding names its kind (:mod:`ppaux.triage.kinds`).
KIND_TEXT = {
    "hardware": "hardware fault (the GPU or its links)",
    "memory": "memory failure",
    "communication-init": "communication failure at set-up (the communicator or process group "
    "could not be created)",
    "communication": "communication failure in flight",
    "shape-kernel": "shape or kernel failure",
    "configuration": "configuration error (the program's own check of its parallel settings)",
    "build": "build failure (a kernel compiled at start-up)",
    "disk": "full disk (no space left on a disk or in shared memory)",
    "weights": "weight-loading failure (the model's files, or the Hub)",
    "driver": "CUDA driver failure (a call it refused, or it and the build do not fit)",
    "other": "failure",
    "auxiliary-output": "auxiliary-output failure",
}


def aux_match(failure: Failure) -> MessageMatch | None:
    """The auxiliary-output message ``failure`` raised (the first of its chain, or its last
    exception), when it is a RuntimeError that begins with one of sglang's nine messages."""
    cause = aux_cause(failure)
    return None if cause is None else cause[0]


def aux_cause(failure: Failure) -> tuple[MessageMatch, str, str, str] | None:
    """(match, exception, message line, the text the match's place is in: the line, or it
    with a JSON string's escapes undone) of the exception of ``failure`` that is one of
    sglang's nine messages: the first the traceback shows, as ``ppaux explain`` names the
    first the text holds (in a chain, the innermost cause, which Python prints first; in an
    exception group, its root sub-exception's, after the group's own cause)."""
    candidates = [*failure.chain, (failure.exception, failure.message)]
    for exception, message in candidates:
        if exception is None:
            continue
        line = message.split("\n", 1)[0]
        raised = sglang_raised_in(exception, line)
        if raised is not None:
            return raised[0], exception, line, raised[1]
        quoted = quoted_relay(message)  # a relay quoting one of the nine: sglang's RuntimeError
        raised = None if quoted is None else sglang_raised_in("RuntimeError", quoted)
        if raised is not None and quoted is not None:
            return raised[0], "RuntimeError", quoted, raised[1]
    return None


def location_of(failure: Failure | Event, earlier: bool = False) -> Location:
    """Where ``failure`` stands: its log, line and the function of its last frame (its
    process's name where the frames are not the exception's named: ``earlier``, an exception
    of its chain, whose frames the failure does not keep)."""
    if isinstance(failure, Failure):
        named = failure.frames and not earlier
        function = failure.frames[-1].function if named else (failure.process or "")
    else:
        function = failure.kind
    return Location(failure.source, failure.line, cut(function or "-"))


def place_of(record: Failure | Event) -> str:
    return f"{record.source}:{record.line}"


#: What a time without a zone (sglang's own) is, said wherever one is shown.
LOCAL_TIME = "local time of the host, zone unknown"


def when_of(record: Failure | Event, short: bool = False) -> str:
    """The record's time as written; one without a zone says so, and one the user gave a zone
    says which (in a table, in short)."""
    if not record.time_text:
        return "an unknown time"
    text = cut(record.time_text)
    if record.zone is None:
        return f"{text} ({'local' if short else LOCAL_TIME})"
    if record.time_text.endswith(record.zone):  # written with its zone
        return text
    zone = record.zone
    return f"{text} ({zone})" if short else f"{text} (local time, in {zone} as given)"


def time_fields(record: Failure | Event) -> TimeFields:
    """``time`` as written and ``time_zone``: the zone as written ('Z', '+02:00') or as the
    user gave it, or None for sglang's own times, the local time of a host in a zone the log
    does not say."""
    if record.time_text is None:
        return {"time": None, "time_zone": None}
    return {"time": cut(record.time_text), "time_zone": record.zone}


def later_than(record: Failure | Event, root: Failure) -> str:
    delay = seconds_between(root, record)
    if delay is None:
        # Times of two hosts' clocks, or of a host's clock and a collector's, do not compare;
        # in the root's own log, its place does (a line without a time, NCCL's warning).
        if record.source == root.source and record.line < root.line:
            if isinstance(record, Failure) and record.summary and root.summary == "root-cause":
                # torchrun's summary lists its other failures before its first observed one
                return "after the root (torchrun's summary lists it before)"
            # a place in the log, not a time: what follows from the root may be written
            # above it (another process's lines interleaved), never said to fail before it
            return "above the root in its log (no time orders them)" + (
                "" if record.time_text is None else f", at {when_of(record)}"
            )
        if record.time_text is None and record.source != root.source:
            return "in another log, which no time orders with the root's"
        return "after the root" if record.time_text is None else f"at {when_of(record)}"
    if delay < 0:
        return f"{-delay:.1f} s before the root"
    if delay == 0 and record.source == root.source and record.line < root.line:
        return "at the root's time, before it in its log"
    return f"{delay:.1f} s after the root"


def _stage_of(ranks: str | None) -> int | None:
    """The pipeline stage a rank prefix names (``PP1 TP0`` -> 1), or None."""
    for token in (ranks or "").split():
        if token.startswith("PP") and token[2:].isdigit() and len(token) <= 8:
            return int(token[2:])
    return None


def cannot_raise(root: Failure, match: MessageMatch, pp_size: int | None) -> str | None:
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


#: A sampling observer's methods that sglang's PP transport calls (``to_pp_tensors`` on the last
#: stage, ``from_pp_tensors`` on the first).
_OBSERVER_METHODS = ("to_pp_tensors", "from_pp_tensors")


def observer_target(incident: Incident, match: MessageMatch | None) -> str | None:
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


def build_text(build: Build) -> str:
    if build.kind == "wheel":
        return f"a wheel in {build.where}"
    if build.kind == "elided":
        return f"at a path the log elides ({build.where})"
    if build.kind == "source checkout":
        return f"a source checkout at {build.where}"
    return f"installed in {build.where}"


def unseen(failure: Failure) -> str:
    """What of ``failure``'s exception group the log does not show ('' when it shows it
    all): sub-exceptions Python left out, or groups nested past ``max_group_depth``."""
    said = []
    if failure.left_out:
        said.append(f"{counted(failure.left_out, 'sub-exception')} not shown")
    if failure.depth_cut:
        said.append(f"the groups nested deeper than {failure.depth_cut} levels not shown")
    return " and ".join(said)


def _headline(root: Failure, cause: tuple[MessageMatch, str, str, str] | None) -> tuple[str, bool]:
    """(what the root finding names as the failure, whether that is an earlier exception of
    the chain than the last one: the one sglang's message, its rule and its kind are read
    from, the last exception being what was raised about it)."""
    headline = cut(root.error)
    if cause is None:
        return headline, False
    _, exception, line, _ = cause
    if (exception, line) == (root.exception, root.message.split("\n", 1)[0]):
        return headline, False
    if root.group is not None and root.subs:
        headline = (
            f"{cut(root.group, 200)}, sub-exception {root.sub_index} of "
            f"{len(root.subs)}: {headline}"
        )
    # a relay that quotes the message (vLLM's ``Worker failed with error '<message>'``)
    relation = "quoted by" if quoted_relay(root.message) == line else "in the chain of"
    return f"{cut(exception)}: {cut(line)} ({relation} {headline})", True


def processes_of(members: list[Failure]) -> list[str]:
    """The processes ``members`` name, each once, in their order: one process's failure
    written more than once (the same ranks on several records) is one process."""
    return list(dict.fromkeys(cut(m.who) for m in members))


def _first_words(incident: Incident, headline: str, earlier: bool) -> str:
    """Who failed first, when and where, with what; which sub-exception of a group it is."""
    root = incident.root
    members = incident.members
    names = processes_of(members)
    # each process's name once, and each rank once: 'pod/sglang-0, rank 7' and 'rank 7' of
    # another log's record say 'rank 7' once
    who = ", ".join(dict.fromkeys(part for name in names for part in name.split(", ")))
    also = ""
    if len(names) > 1:
        also = f" ({len(names)} processes failed with it at the same moment"
        also += f", in {len(members)} records)" if len(members) > len(names) else ")"
    elif incident.ranks:  # one process's failure, written more than once
        also = f" ({len(members)} records of it at the same moment)"
    message = f"{who} failed first at {when_of(root)} ({place_of(root)}): {headline}{also}"
    if root.group is not None and len(root.subs) > 1 and not earlier:
        # The headline and the kind are the root sub-exception's (ppaux.triage.kinds).
        message += (
            f" (sub-exception {root.sub_index} of {len(root.subs)}"
            f"{' shown' if root.shortened else ''}"
            f"{', counting those of the groups nested in it,' if root.nested else ''}"
            f" of {cut(root.group, 200)}: the first of "
            "the kind the others follow from)"
        )
    if root.group is not None and (hidden := unseen(root)):
        message += f" ({hidden})"
    return message


def _root_extra(number: int, incident: Incident) -> TriageExtra:
    """The root finding's data: its incident, kind, ranks, exception, time and records."""
    root, members = incident.root, incident.members
    when = time_fields(root)
    exception, message = root.shown()
    return {
        "incident": number,
        "root": True,
        "kind": kind_of(root),
        "collectives": "mpi" if mpi_failure(root) else None,  # MPI's own fix, never NCCL's
        "ranks": processes_of(members),
        "exception": None if exception is None else cut(exception),
        "message": cut(message, 2000),
        "time": when["time"],
        "time_zone": when["time_zone"],
        "log": root.source,
        "line": root.line,
        "records": [RecordPlace(log=m.source, line=m.line, ranks=cut(m.who)) for m in members],
        # a launcher's records of the root's own exit: the same failure told again
        "launcher_records": [{"log": r.source, "line": r.line} for r in incident.own],
    }


def _aux_root(
    root: Failure,
    cause: tuple[MessageMatch, str, str, str],
    said: tuple[str, bool, TriageExtra],
    pp_size: int | None,
) -> Finding:
    """PP801: ``root`` raised one of sglang's nine messages (``cause``); ``said``: the
    message so far, whether the headline is an earlier exception's, and the finding's data."""
    message, earlier, extra = said
    match, exception, line, searched = cause
    if earlier:
        extra.update({"exception": cut(exception), "message": cut(line, 2000)})
    rule = match.message.rule
    # The causes of this message, raised on this side (explain's page for it), not the
    # causes of every auxiliary-output message: one story per message, in every format.
    causes = list(page_for(match.message.id).causes)
    extra.update({"sglang_message": match.message.id, "rule": rule, "causes": causes})
    impossible = cannot_raise(root, match, pp_size)
    if impossible is not None:
        message += f"; {impossible}: the log's rank prefixes or its stages are not what they seem"
        extra["stage_fits"] = False
    stage = STAGE[match.message.side]
    if raised_by_capture(root.frames):
        message += f"; raised by ppaux's strict capture, as {stage} would (see {rule})"
    else:
        message += f"; raised by {stage} (see {rule})"
    return finding(
        "PP801",
        root.source,
        message,
        key_of(root.who),
        # sglang's message as raised (a message with a key keeps its key), without
        # whatever else the log line held after it.
        sglang_error=cut(searched[match.start : match.end]),
        extra=extra,
        location=location_of(root, earlier),
    )


def _other_root(root: Failure, message: str, extra: TriageExtra) -> Finding:
    """PP802: ``root`` is a failure of another kind than the nine messages (or cut)."""
    kind = extra["kind"]
    warned = root.warned if root.exception is None else None
    if warned is not None and warned[0] != SYMBOL_CAUSE:
        extra["nccl_setup"] = warned[0]
    message += (
        ""
        if root.said
        else "; the log cuts its traceback before the exception line, and the only error "
        f"above it is its cause: {warned_words(*warned[:2])}, at {warned[2]})"
        if warned is not None
        else "; the log cuts its traceback before the exception line: the cause is not in it"
        + ("" if kind == "unknown" else f" (its last frames: a {KIND_TEXT[kind]})")
        if kind == "unknown" or cut_kind(root, cut_in_setup(root)) is not None
        else f"; a {KIND_TEXT[kind]}, not an auxiliary-output error"
    )
    note = local_note(root.error) if kind.startswith(("communication", "shape-kernel")) else None
    if note is not None:
        message += f"; {note}"
    modified = _raised_by_transport(root)
    if modified is not None:
        message += (
            f"; but raised by a raise statement of sglang's own {modified}, whose raise "
            "statements raise only its auxiliary-output messages in every release (0.5.19 - "
            "0.5.23): that host's transport was modified (PP304 transport-modified: "
            "'ppaux fingerprint' there, then 'ppaux check-skew')"
        )
        extra["transport_modified"] = modified
    return finding(
        "PP802", root.source, message, key_of(root.who), extra=extra, location=location_of(root)
    )


def _raised_by_transport(root: Failure) -> str | None:
    """The name of sglang's add or pop when ``root``'s innermost frame is a ``raise``
    statement in it (in its own file), or None."""
    if not root.frames or root.exception is None:
        return None
    frame = root.frames[-1]
    if frame.function not in (ADD, POP) or not frame.code.lstrip().startswith("raise "):
        return None
    return frame.function if frame.file.replace("\\", "/").endswith(TRANSPORT_FILE) else None


def root_finding(
    number: int, incident: Incident, pp_size: int | None = None
) -> tuple[Finding, MessageMatch | None]:
    """PP801 (one of the nine messages, with its stage and rule) or PP802 (another failure,
    with its kind) for ``incident``'s root, and the message matched."""
    root = incident.root
    cause = aux_cause(root)
    headline, earlier = _headline(root, cause)
    message = _first_words(incident, headline, earlier)
    extra = _root_extra(number, incident)
    if cause is None:
        return _other_root(root, message, extra), None
    return _aux_root(root, cause, (message, earlier, extra), pp_size), cause[0]


def frame_findings(number: int, incident: Incident) -> list[Finding]:
    """What the frames say of ``incident``: sglang's build (PP806), a frame outside sglang
    and its requirements (PP805, the likely culprit), ppaux's strict capture (PP808)."""
    root = incident.root
    members = incident.members
    findings: list[Finding] = []
    build = build_of(root.frames)
    if build is not None:
        findings.append(
            finding(
                "PP806",
                root.source,
                f"sglang of {cut(root.who)} is {build_text(build)}; {build.fits_text()}",
                key_of(root.who),
                extra={
                    "incident": number,
                    "install": build.kind,
                    "where": build.where,
                    "fits": None if build.fits is None else list(build.fits),
                    "frames_judged": build.judged,
                },
                location=location_of(root),
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
                f"the traceback of {cut(member.who)} passes through "
                f"{cut(culprit.file, 300)}:{culprit.line} in {cut(culprit.function)}, "
                "which is neither sglang, a package it requires, torch nor the standard library: "
                "the likely culprit",
                key_of(member.who),
                extra={
                    "incident": number,
                    "frames": [
                        {"file": cut(f.file, 300), "line": f.line, "function": cut(f.function)}
                        for f in strange[:10]
                    ],
                },
                location=location_of(member),
            )
        )
        break
    if raised_by_capture(root.frames):
        findings.append(
            finding(
                "PP808",
                root.source,
                f"{cut(root.who)} stopped at ppaux's strict capture "
                f"({cut(root.frames[-1].file.rsplit('/', 1)[-1])}): the capture it wrote names "
                "where the value entered",
                key_of(root.who),
                extra={"incident": number},
                location=location_of(root),
            )
        )
    return findings
