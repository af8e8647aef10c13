"""The shapes a log line comes in, peeled layer by layer: the collector's envelope, a launcher's
prefix, then sglang's own prefix.

The shapes themselves, and sglang's prefix, are a table in :mod:`ppaux.triage.lineshapes`;
the envelope and launcher are told per file from its first lines (:func:`detect`), each names
the process a line comes from (its *stream*), which keeps interleaved tracebacks apart.

Times come in two kinds. A collector's (CRI, Docker's json-file, the ``timestamps`` form)
carries its zone: it is an instant, read as one, and kept as written
(``2026-12-03T14:56:07.000017123Z``). sglang's carries none: it is the wall clock of the host
that wrote it, zone unknown, so it is kept as a naive time, never given a zone, and compared
only with the times of the same log (:attr:`LogLine.zone` tells them apart), unless the user
gives the zone (:func:`in_zone`).
Where a line has both, the collector's is used.

Bytes that are not UTF-8 are kept as ``\\xNN`` escapes; nothing here fails on a line.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from ppaux.triage.appstamps import app_prefix
from ppaux.triage.jsonrecords import cut_record
from ppaux.triage.lineshapes import (
    ANSI,
    ANSI_OPENERS,
    APP_TIME,
    COMPOSE,
    CRI,
    CUT_TOKEN,
    DOCKER_LOG,
    KUBECTL,
    LAUNCHER_PREFIX,
    LEFT_TIME,
    NUMBER_COLUMN,
    POD,
    PREFIX_REACH,
    RAY,
    SGLANG,
    SGLANG_ANY,
    STAMP,
    STERN,
    TORCH_PYTHON_RANK,
    TORCH_RANK,
    VLLM_PROCESS,
    WRAPPER,
    Envelope,
    Launcher,
)
from ppaux.triage.linetimes import WALL_EPOCH, collector_time, sglang_time, wall_time, zone_of
from ppaux.triage.zones import LocalZone

#: One search for any of the openers (a C loop: every line of a log is asked).
_ANY_OPENER = re.compile("|".join(re.escape(opener) for opener in ANSI_OPENERS))

__all__ = [
    "OUTPUT_STREAMS",
    "LogLine",
    "detect",
    "in_zone",
    "parse_line",
    "peel",
    "ranked_stream",
    "torch_rank",
    "unwrap",
]


@dataclass(frozen=True)
class LogLine:
    """One line of a log, its layers peeled off.

    ``text`` is the message as the program wrote it (no envelope, launcher or sglang prefix,
    no ANSI colours); ``time`` is seconds when the line carries a time: since the epoch for a
    time with a zone (``zone``: as written, 'Z' or '+02:00', or as the user gave it), else of
    the writing host's wall clock (sglang's own time, zone unknown: comparable only with the
    times of the same log); ``time_text`` is the time as written;
    ``ranks`` is sglang's rank prefix as written (``PP0 TP1``), ``""`` when the line has an
    sglang prefix without ranks, None when it has none; ``stream`` names the process or
    output stream a launcher or collector gives (``sglang-1``, ``pid=123``,
    ``pod/sglang-0/sglang``, ``stderr``); ``lead`` is the text before sglang's prefix that
    no known layer took off (a launcher or tool ppaux does not know), ``""`` when none;
    ``severe``: a level taken off the line (a row's, a logger's) was ERROR, CRITICAL or FATAL.
    """

    number: int
    text: str
    time: float | None
    time_text: str | None
    ranks: str | None
    stream: str | None
    partial: bool = False
    zone: str | None = None
    lead: str = ""
    severe: bool = False
    #: A level taken off the line reported no failure (DEBUG, INFO, WARNING): its words, a
    #: request's prompt echoed included, are never a failure's.
    mild: bool = False

    @property
    def zoned(self) -> bool:
        """True when :attr:`time` is an instant (its zone is known)."""
        return self.zone is not None

    @property
    def sglang(self) -> bool:
        """True when the line begins with sglang's own ``[time ranks]`` prefix."""
        return self.ranks is not None


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def detect(head: bytes) -> tuple[Envelope, Launcher]:
    """The envelope and launcher prefix of a log, from its first bytes (a few dozen lines)."""
    lines = [line for line in head.split(b"\n")[:60] if line.strip()]
    if lines and not head.endswith(b"\n") and len(lines) > 1:
        lines = lines[:-1]  # the last one may be cut
    if not lines:
        return Envelope.PLAIN, Launcher.NONE
    texts = [ANSI.sub("", _decode(line)) for line in lines]
    envelope = Envelope.PLAIN
    if _share(texts, lambda t: t.startswith("{") and DOCKER_LOG.search(t) is not None):
        envelope = Envelope.DOCKER_JSON
        texts = [_json_text(t)[0] for t in texts]
    elif _share(texts, lambda t: CRI.match(t) is not None):
        envelope = Envelope.CRI
        texts = [m.group("text") or "" if (m := CRI.match(t)) else t for t in texts]
    texts = [ANSI.sub("", t) for t in texts]
    if envelope is Envelope.PLAIN and _numbered(texts):
        # Rising numbers before each line are a paste's line numbers, not compose's service
        # names ('23 | ' reads as both): the launcher is looked for behind them.
        envelope = Envelope.NUMBERED
        texts = [t[m.end() :] if (m := NUMBER_COLUMN.match(t)) else t for t in texts]
    launcher = Launcher.NONE
    if _share(texts, lambda t: RAY.match(t) is not None):
        named = [m.group("who") for t in texts if (m := RAY.match(t)) is not None]
        vllm = all(VLLM_PROCESS.match(who) is not None for who in named)
        launcher = Launcher.VLLM if vllm else Launcher.RAY
    elif _share(texts, lambda t: WRAPPER.match(t) is not None):
        launcher = Launcher.WRAPPER
    elif _share(texts, lambda t: KUBECTL.match(t) is not None):
        launcher = Launcher.KUBECTL
    elif _compose(texts):
        launcher = Launcher.COMPOSE
    else:
        launcher = _pod_launcher(texts)
    if envelope is Envelope.PLAIN:
        inner = [_launched(t, launcher)[1] for t in texts]
        if _share(inner, lambda t: STAMP.match(t) is not None):
            envelope = Envelope.TIMESTAMPS
    return envelope, launcher


def _compose(texts: list[str]) -> bool:
    """docker compose's ``<service>  | ``: half the lines in that shape, and each service's bar
    in one column on all its lines (compose pads every name to one width). A pod's name before
    an exception group's margins (k9s' ``<pod> ``, then ``  | Traceback ...``, ``    | ...``)
    puts the bar in as many columns as the group nests: no compose."""
    found = [m for t in texts if (m := COMPOSE.match(t)) is not None and not SGLANG.match(t)]
    if not found or len(found) * 2 < len(texts):
        return False
    bars: dict[str, int] = {}
    for match in found:
        bar = match.string.index("|", match.end("service"))
        if bars.setdefault(match.group("service"), bar) != bar:
            return False
    return True


def _pod_launcher(texts: list[str]) -> Launcher:
    """k9s' ``<pod> `` or stern's ``<pod> <container> `` when nine lines in ten begin with a
    pod's name (one with a digit), stern's when the word after it is the same on all of them;
    else none."""
    pods = [m for t in texts if (m := POD.match(t)) is not None and _digit(m.group("who"))]
    if len(pods) < 3 or len(pods) * 10 < len(texts) * 9:
        return Launcher.NONE
    seconds = {m.group("text").split(" ", 1)[0] for m in pods}
    stern = all(STERN.match(m.group(0)) is not None for m in pods) and len(seconds) == 1
    return Launcher.STERN if stern else Launcher.POD


def _digit(name: str) -> bool:
    return any(c.isdigit() for c in name)


def _numbered(texts: list[str]) -> bool:
    """Whether nearly every line begins with a line number, and the numbers rise (a
    forwarder's constant ``[0] `` is no line number)."""
    numbers = []
    for text in texts:
        match = NUMBER_COLUMN.match(text)
        if match is None:
            continue
        numbers.append(int("".join(c for c in match.group(0) if c.isdigit())))
    rising = all(a < b for a, b in itertools.pairwise(numbers))
    return len(numbers) * 10 >= len(texts) * 9 and len(numbers) >= 3 and rising


def _launched(text: str, launcher: Launcher) -> tuple[str | None, str]:
    """(stream, rest) of ``text`` with the launcher's prefix taken off; (None, text) when the
    line has none."""
    pattern = LAUNCHER_PREFIX.get(launcher)
    match = pattern.match(text) if pattern is not None else None
    if match is None:
        return None, text
    rest = match.group("text")
    nested = rest[:1] == "(" and pattern is not RAY
    inner = RAY.match(rest) if nested else None
    if inner is not None:  # Ray's process inside a container's output: the process named
        return inner.group("who"), inner.group("text")
    return match.group(1), rest


def _share(texts: list[str], test: Callable[[str], bool]) -> bool:
    """True when at least half of ``texts`` pass ``test``."""
    passed = sum(1 for t in texts if test(t))
    return passed * 2 >= len(texts) and passed > 0


def _json_text(text: str) -> tuple[str, str | None, str | None, bool]:
    """(log, stream, time, complete) of a json-file line; the line itself when it is not one.
    ``complete`` is False for a piece of a line Docker split (its log has no newline)."""
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):  # not JSON; or nested deeper than Python recurses
        cut = cut_record(text) if text[:2] == '{"' and text.rstrip()[-1:] != "}" else None
        if cut is not None and cut.lines:
            # A record cut at max_log_line: its start. Its stream and time, written after
            # the log, are lost: sglang writes its log and tracebacks to stderr.
            return cut.lines[0], "stderr", cut.time_text, True
        return text, None, None, True
    if not isinstance(record, dict) or not isinstance(record.get("log"), str):
        return text, None, None, True
    log: str = record["log"]
    stream = record.get("stream")
    time = record.get("time")
    return (
        log.rstrip("\r\n"),
        stream if isinstance(stream, str) else None,
        time if isinstance(time, str) else None,
        log.endswith("\n"),
    )


#: Characters a paste may put before a line (a backtick, an indentation), and how many.
_STRAY = " `"
#: First characters of an application logger's prefix (DeepSpeed's bracket, glog's severity).
_APP_HEADS = ("[", "I", "W", "E", "F")
_MAX_STRAY = 8


def unwrap(
    raw: bytes, envelope: Envelope
) -> tuple[str, float | None, str | None, str | None, bool]:
    """(text, time, time text, stream, partial) of ``raw`` with the collector's envelope taken
    off; ``partial``: the collector split a long line and this is not its last piece."""
    text = _decode(raw).rstrip("\r")
    time: float | None = None
    time_text: str | None = None
    stream: str | None = None
    partial = False
    if envelope is Envelope.DOCKER_JSON:
        text, stream, time_text, complete = _json_text(text)
        partial = not complete
        runtime = CRI.match(text)
        if runtime is not None:  # the runtime's own line, kept whole in Docker's record
            text, time_text = runtime.group("text") or "", runtime.group("time")
            partial = partial or runtime.group("tag") == "P"
        time = collector_time(time_text) if time_text else None
    elif envelope is Envelope.NUMBERED:
        column = NUMBER_COLUMN.match(text)
        if column is not None:
            text = text[column.end() :]
    elif envelope is Envelope.CRI:
        match = CRI.match(text)
        if match is None and text[:1] in _STRAY:
            # a backtick or spaces a paste put before the line
            bare = text.lstrip(_STRAY)
            match = CRI.match(bare) if len(text) - len(bare) <= _MAX_STRAY else None
        if match is not None:
            time_text = match.group("time")
            time = collector_time(time_text)
            stream = match.group("stream")
            partial = match.group("tag") == "P"
            text = match.group("text") or ""
    return text, time, time_text, stream, partial


def peel(
    number: int,
    text: str,
    time: float | None,
    time_text: str | None,
    stream: str | None,
    launcher: Launcher,
    stamped: bool = False,
    wall: str | None = None,
    severe: bool = False,
    mild: bool = False,
) -> LogLine:
    """The :class:`LogLine` of ``text`` (the envelope already off): colours, the launcher's
    prefix, the collector's time (``stamped``: the ``timestamps`` form, whose time comes after
    the launcher's prefix) and sglang's prefix taken off. ``time`` (with ``time_text``) is the
    collector's, which has a zone; sglang's own time is used only where there is none, and
    ``wall`` (a row's time without a zone, as written) where there is neither; ``severe``: the
    envelope took off a level that reports a failure (:attr:`LogLine.severe`)."""
    if _ANY_OPENER.search(text) is not None:
        text = ANSI.sub("", text)
    if launcher is not Launcher.NONE:
        who, text = _launched(text, launcher)
        stream = who if who is not None else stream
    if stamped:
        match = STAMP.match(text)
        if match is not None:
            stamp = match.group("time")
            moment = collector_time(stamp)
            if moment is not None:
                time, time_text, text = moment, stamp, match.group("text") or ""
    if text[:1] in _APP_HEADS or text[:1].islower() or text[:1].isdigit():
        logged = app_prefix(text)
        if logged is not None:  # a logger's prefix inside the collector's record
            text, stream = logged.rest, stream or logged.pod
            severe = severe or logged.severe
    if text[:1].isdigit() and time is not None:
        own = APP_TIME.match(text)
        if own is not None:  # the application's time after the collector's: the latter kept
            text = text[own.end() :]
    if "[rank" in text[:9]:
        text, stream, severe, mild = _torch_ranked(text, stream, severe, mild)
    zone = zone_of(time_text) if time is not None else None
    ranks: str | None = None
    lead = ""
    match = SGLANG.match(text) if text.startswith("[") else None
    if match is not None:
        ranks = match.group("ranks").strip()
        if zone is None:
            time = sglang_time(match.group("time"), match.group("ms"))
            ms = match.group("ms")
            time_text = match.group("time") + (f".{ms}" if ms else "")
        text = match.group("text")
    elif "] " in text[: PREFIX_REACH + 2]:
        found = SGLANG_ANY.search(text, 0, PREFIX_REACH)
        if found is not None:
            untimed = found.group("cut") or found.group("bare")
            left = LEFT_TIME.search(text, 0, found.start()) if found.group("cut") else None
            if untimed is not None:
                ranks = _cut_ranks(text, found) if found.group("cut") else untimed
                if left is not None and zone is None:  # the bracket lost, the time whole
                    time = sglang_time(left.group("time"), left.group("ms"))
                    time_text = left.group(0).strip()
            else:
                ranks = found.group("ranks").strip()
                if zone is None:
                    time = sglang_time(found.group("time"), found.group("ms"))
                    ms = found.group("ms")
                    time_text = found.group("time") + (f".{ms}" if ms else "")
            lead = text[: found.start()]
            text = text[found.end() :]
    if time is None and wall is not None:
        time = wall_time(wall)
        time_text = None if time is None else wall
    return LogLine(
        number, text, time, time_text, ranks, stream, zone=zone, lead=lead, severe=severe, mild=mild
    )


def _torch_ranked(
    text: str, stream: str | None, severe: bool, mild: bool
) -> tuple[str, str | None, bool, bool]:
    """(text, stream, severe, mild) of a line behind torch's ``[rankN]:`` tag: the rank is the
    line's stream, its text what Python wrote; glog's level behind the tag (torch elastic's
    ``[rank1]:E1208 ...] ``) is read, and taken off where it reports a failure."""
    python = TORCH_PYTHON_RANK.match(text)
    if python is None:
        return text, stream, severe, mild
    stream = ranked_stream(stream, f"rank {python.group('rank')}")
    text = text[python.end() :]
    logged = app_prefix(text) if text[:1] in ("E", "F", "W", "I") else None
    if logged is not None:
        severe, mild = severe or logged.severe, not logged.severe
        text = logged.rest if logged.severe else text
    return text, stream, severe, mild


def _cut_ranks(text: str, found: re.Match[str]) -> str:
    """The ranks of a prefix that lost its opening bracket (``found``'s 'cut' group), with
    what is left of a first token that lost its start said as read and marked cut
    (``...P1 TP4`` for ``P1 TP4] ``: DP1 or PP1, the stage unknown)."""
    part = CUT_TOKEN.match(text, 0, found.start())
    ranks = found.group("cut")
    return ranks if part is None else f"...{part.group('part')} {ranks}"


def parse_line(number: int, raw: bytes, envelope: Envelope, launcher: Launcher) -> LogLine:
    """Peel ``raw`` (one line, without its newline) into a :class:`LogLine`."""
    text, time, time_text, stream, partial = unwrap(raw, envelope)
    line = peel(number, text, time, time_text, stream, launcher, envelope is Envelope.TIMESTAMPS)
    return LogLine(
        line.number,
        line.text,
        line.time,
        line.time_text,
        line.ranks,
        line.stream,
        partial,
        line.zone,
        line.lead,
        line.severe,
        line.mild,
    )


def in_zone(line: LogLine, zone: LocalZone) -> LogLine:
    """``line`` with its zone-less time (sglang's own) taken to be in ``zone``, as the user
    says: an instant from then on. A line whose time has a zone, or that has none, is kept."""
    if line.time is None or line.zone is not None:
        return line
    wall = WALL_EPOCH + timedelta(seconds=line.time)
    return dataclasses.replace(line, time=zone.instant(wall), zone=zone.label)


#: The output streams a collector names (CRI's, Docker's, Open MPI's): they say where a line
#: was written, not which process wrote it.
OUTPUT_STREAMS = frozenset({"stdout", "stderr", "stddiag"})


def ranked_stream(stream: str | None, rank: str) -> str:
    """The stream of a line whose torch prefix names ``rank`` ('rank 3'): the rank, behind the
    process an envelope or a launcher names (``sglang-1, rank 3``), so that each rank of one
    container, pod or task is a stream of its own and keeps the process's name."""
    if stream is None or stream in OUTPUT_STREAMS or stream == rank:
        return rank
    if stream.endswith(f", {rank}"):
        return stream
    return f"{stream}, {rank}"


def torch_rank(text: str) -> str | None:
    """'rank 3' for a torch C++ line that begins with ``[rank3]:``, else None."""
    match = TORCH_RANK.match(text)
    return f"rank {match.group('rank')}" if match else None
