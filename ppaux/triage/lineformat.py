"""The shapes a log line comes in, peeled layer by layer: the collector's envelope, a launcher's
prefix, then sglang's own prefix.

Envelopes (:class:`Envelope`), detected per file from its first lines:

- ``cri``: Kubernetes/CRI pod logs, ``<RFC3339Nano> stdout|stderr F|P <line>``;
- ``docker-json``: Docker's json-file driver, ``{"log": "<line>\\n", "stream": ..., "time": ...}``;
- ``timestamps``: ``<RFC3339Nano> <line>``, what ``kubectl logs --timestamps`` (the kubelet's
  ``RFC3339NanoFixed`` and a space, ``pkg/kubelet/kuberuntime/logs/logs.go``), ``docker logs
  -t`` (moby's ``api/server/httputils/write_log_stream.go``, the same form) and ``docker
  compose logs -t`` (behind its service prefix, ``cmd/formatter/logs.go``) write; the time is
  found at the start of the line or right behind the launcher's prefix;
- ``plain``: anything else (a file written by sglang itself, or by ``tee``).

Launcher prefixes, also detected per file: docker compose's ``<service>  | `` (often in ANSI
colours), Ray's ``(pid=123, ip=10.0.0.1)`` / ``(SchedulerActor pid=123)``, ``kubectl logs
--prefix``'s ``[pod/<pod>/<container>] `` (``staging/src/k8s.io/kubectl/pkg/cmd/logs/logs.go``),
and a pod's name before each line (k9s' ``<pod> ``, stern's ``<pod> <container> ``).
Each names the process a line comes from (its *stream*), which keeps interleaved tracebacks
apart.

sglang's prefix is what its ``configure_logger`` writes (``sglang/srt/utils/common.py``,
0.5.19 - 0.5.23): ``[%(asctime)s{.%(msecs)03d}{prefix}] %(message)s`` with the date format
``%Y-%m-%d %H:%M:%S``, milliseconds only with ``SGLANG_LOG_MS``, and the prefix built by the
scheduler from the ranks in use, in this order: `` DP{n} PP{n} ATTN_CP{n} MOE_DP{n} TP{n}
EP{n}`` (``scheduler.py``, ``configure_scheduler_process``).

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
import enum
import functools
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from ppaux.triage.envelopes import cut_record
from ppaux.triage.zones import LocalZone

__all__ = [
    "ANSI",
    "OUTPUT_STREAMS",
    "Envelope",
    "Launcher",
    "LogLine",
    "detect",
    "in_zone",
    "parse_line",
    "peel",
    "ranked_stream",
    "sglang_time",
    "torch_rank",
    "unwrap",
]


class Envelope(str, enum.Enum):
    """The collector's wrapping of each line."""

    PLAIN = "plain"
    CRI = "cri"
    DOCKER_JSON = "docker-json"
    #: ``<RFC3339Nano> <line>`` (kubectl --timestamps, docker logs -t, docker compose logs -t),
    #: at the start of the line or behind the launcher's prefix.
    TIMESTAMPS = "timestamps"
    #: A line-number column a paste or a viewer put before each line (``cat -n``'s
    #: ``   23<TAB>``, ``23 | ``, ``[23] ``).
    NUMBERED = "numbered"


class Launcher(str, enum.Enum):
    """A prefix a launcher puts before each line, naming the process."""

    NONE = "none"
    COMPOSE = "compose"
    RAY = "ray"
    #: vLLM's own worker processes, in Ray's shape: ``(VllmWorkerProcess pid=N) ``,
    #: ``(Worker_TP4_EP4 pid=N) ``, ``(EngineCore pid=N) ``.
    VLLM = "vllm"
    KUBECTL = "kubectl"
    #: A wrapper that logs each line of the process it runs with its own time and name:
    #: ``[<time>] [/bin/sh]: <line>``.
    WRAPPER = "wrapper"
    #: A pod's name and a space before each line (k9s' log view, ``kubectl logs`` piped
    #: through a per-pod tagger): ``sglang-pp-0 <line>``.
    POD = "pod"
    #: stern's ``<pod> <container> <line>``.
    STERN = "stern"


#: ANSI colours (SGR, ``ESC [ ... m``, as docker compose writes its prefixes): removed before a
#: line is parsed. Every other escape sequence (a cursor move, a clear screen, a window title)
#: stays in the text, so a finding shows it escaped rather than hiding that the log held it.
ANSI = re.compile(r"\x1b\[[0-9;:]*m")
_CRI = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) "
    r"(?P<stream>stdout|stderr) (?P<tag>[FP])(?: (?P<text>.*))?$"
)
#: The time ``kubectl logs --timestamps``, ``docker logs -t`` and ``docker compose logs -t`` put
#: before each line: RFC 3339 with nanoseconds (Go's ``RFC3339NanoFixed``) and one space.
#: Docker's json-file record holds its line as a string under ``log`` (Elastic Common
#: Schema's ``"log": {...}`` object is another record).
_DOCKER_LOG = re.compile(r'"log"\s*:\s*"')
_STAMP = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))(?: (?P<text>.*))?$"
)
#: ``kubectl logs --prefix``: ``[pod/<pod>/<container>] `` (the container is empty when kubectl
#: cannot name it).
_KUBECTL = re.compile(r"^\[(?P<who>pod/[^/\]\s]+/[^/\]\s]*)\] (?P<text>.*)$")
_COMPOSE = re.compile(r"^(?P<service>[A-Za-z0-9][\w.-]*) *\| ?(?P<text>.*)$")
_RAY = re.compile(r"^\((?P<who>[^()]*\bpid=\d+[^()]*)\) ?(?P<text>.*)$")
#: The processes vLLM names in that shape (its multiprocess executor, its engine core).
_VLLM_PROCESS = re.compile(
    r"^(?:VllmWorker(?:Process)?|Worker(?:_\w+)?|EngineCore(?:_\w+)?|APIServer)\b"
)
_WRAPPER = re.compile(
    r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[^\]]{0,16}\] \[(?P<who>[^\]\s]{1,64})\]: "
    r"(?P<text>.*)$"
)
#: A Kubernetes pod's name as k9s and stern print it before a line: lower case, from a
#: letter, with a dash and a digit (``sglang-pp-0``, ``sglang-7d9f8-x2k4p``); a date is none.
_POD_NAME = r"[a-z][a-z0-9]*(?:[-.][a-z0-9]+)+"
_POD = re.compile(rf"^(?P<who>{_POD_NAME}) (?P<text>.*)$")
_STERN = re.compile(rf"^(?P<who>{_POD_NAME} [a-z][a-z0-9-]{{0,62}}) (?P<text>.*)$")
_SGLANG = re.compile(
    r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(?P<ms>\d{3}))?"
    r"(?P<ranks>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d{1,6})*)\] (?P<text>.*)$"
)
#: sglang's prefix wherever it stands in a line (behind a pasted backtick, a store's columns,
#: or with its first characters lost): the whole ``[time ranks] `` form, or the ranks and the
#: closing bracket behind what is left of the time. Rank numbers are bounded (six digits).
_RANK_TOKENS = r"(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d{1,6}"
_SGLANG_ANY = re.compile(
    r"\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(?P<ms>\d{3}))?"
    rf"(?P<ranks>(?: {_RANK_TOKENS})*)\] "
    rf"|(?:^|(?<=[\s\d:.`'\"|>-]))(?P<cut>(?:{_RANK_TOKENS} )*{_RANK_TOKENS})\] "
)
#: How far into a line sglang's prefix is looked for.
_PREFIX_REACH = 400
_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
_ZONE = re.compile(r"(?:Z|[+-]\d\d:?\d\d)$", re.IGNORECASE)
#: torch's C++ (glog) lines name the global rank: ``[rank1]:[E1203 14:22:01.123 ...]``.
_TORCH_RANK = re.compile(r"^\[rank(?P<rank>\d+)\]:")
#: torch's elastic launcher (torchrun ``--tee``/``--log-dir``, and the Python side of a rank)
#: writes ``[rank2]: `` before each line a rank's Python prints: its traceback among them.
#: A paste may put a stray mark or two before the first (a backtick that opened a code span).
_TORCH_PYTHON_RANK = re.compile(r"^[^\w\s]{0,3}?\[rank(?P<rank>\d{1,6})\]: ")


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
    no known layer took off (a launcher or tool ppaux does not know), ``""`` when none.
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


def _rfc3339(text: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 time (nanoseconds cut to microseconds)."""
    match = re.match(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)$", text)
    if match is None:
        return None
    head, fraction, zone = match.groups()
    zone = "+00:00" if zone == "Z" else zone
    try:
        moment = datetime.fromisoformat(f"{head}{zone}")
    except ValueError:
        return None
    return moment.timestamp() + (float(f"0.{fraction}") if fraction else 0.0)


def sglang_time(text: str, ms: str | None = None) -> float | None:
    """Seconds of the wall clock of sglang's ``%Y-%m-%d %H:%M:%S`` time, counted from
    1970-01-01 00:00:00 of the same clock.

    sglang writes the host's local time without a zone, so this is no instant: it orders the
    times of one log (one host's clock), and is never compared with a time that has a zone
    nor, by triage, with another log's.
    """
    seconds = _seconds(text)
    if seconds is None:
        return None
    return seconds + (int(ms) / 1000 if ms else 0.0)


#: Where :func:`sglang_time` counts from: a naive time, as sglang's are.
_WALL_EPOCH = datetime(1970, 1, 1)


@functools.lru_cache(maxsize=256)
def _seconds(text: str) -> float | None:
    """``%Y-%m-%d %H:%M:%S`` as naive wall-clock seconds, without strptime (the slowest step of
    a line: a log's lines share their seconds, and the format is fixed)."""
    if _TIME.fullmatch(text) is None:
        return None
    try:
        moment = datetime(
            int(text[0:4]),
            int(text[5:7]),
            int(text[8:10]),
            int(text[11:13]),
            int(text[14:16]),
            int(text[17:19]),
        )
    except ValueError:
        return None
    # Naive arithmetic: no zone (least of all the machine's running ppaux) is assumed.
    return (moment - _WALL_EPOCH).total_seconds()


def detect(head: bytes) -> tuple[Envelope, Launcher]:
    """The envelope and launcher prefix of a log, from its first bytes (a few dozen lines)."""
    lines = [line for line in head.split(b"\n")[:60] if line.strip()]
    if lines and not head.endswith(b"\n") and len(lines) > 1:
        lines = lines[:-1]  # the last one may be cut
    if not lines:
        return Envelope.PLAIN, Launcher.NONE
    texts = [ANSI.sub("", _decode(line)) for line in lines]
    envelope = Envelope.PLAIN
    if _share(texts, lambda t: t.startswith("{") and _DOCKER_LOG.search(t) is not None):
        envelope = Envelope.DOCKER_JSON
        texts = [_json_text(t)[0] for t in texts]
    elif _share(texts, lambda t: _CRI.match(t) is not None):
        envelope = Envelope.CRI
        texts = [m.group("text") or "" if (m := _CRI.match(t)) else t for t in texts]
    texts = [ANSI.sub("", t) for t in texts]
    if envelope is Envelope.PLAIN and _numbered(texts):
        # Rising numbers before each line are a paste's line numbers, not compose's service
        # names ('23 | ' reads as both): the launcher is looked for behind them.
        envelope = Envelope.NUMBERED
        texts = [t[m.end() :] if (m := _NUMBER_COLUMN.match(t)) else t for t in texts]
    launcher = Launcher.NONE
    if _share(texts, lambda t: _RAY.match(t) is not None):
        named = [m.group("who") for t in texts if (m := _RAY.match(t)) is not None]
        vllm = all(_VLLM_PROCESS.match(who) is not None for who in named)
        launcher = Launcher.VLLM if vllm else Launcher.RAY
    elif _share(texts, lambda t: _WRAPPER.match(t) is not None):
        launcher = Launcher.WRAPPER
    elif _share(texts, lambda t: _KUBECTL.match(t) is not None):
        launcher = Launcher.KUBECTL
    elif _share(texts, lambda t: _COMPOSE.match(t) is not None and not _SGLANG.match(t)):
        launcher = Launcher.COMPOSE
    else:
        launcher = _pod_launcher(texts)
    if envelope is Envelope.PLAIN:
        inner = [_launched(t, launcher)[1] for t in texts]
        if _share(inner, lambda t: _STAMP.match(t) is not None):
            envelope = Envelope.TIMESTAMPS
    return envelope, launcher


def _pod_launcher(texts: list[str]) -> Launcher:
    """k9s' ``<pod> `` or stern's ``<pod> <container> `` when nine lines in ten begin with a
    pod's name (one with a digit), stern's when the word after it is the same on all of them;
    else none."""
    pods = [m for t in texts if (m := _POD.match(t)) is not None and _digit(m.group("who"))]
    if len(pods) < 3 or len(pods) * 10 < len(texts) * 9:
        return Launcher.NONE
    seconds = {m.group("text").split(" ", 1)[0] for m in pods}
    stern = all(_STERN.match(m.group(0)) is not None for m in pods) and len(seconds) == 1
    return Launcher.STERN if stern else Launcher.POD


def _digit(name: str) -> bool:
    return any(c.isdigit() for c in name)


#: A line-number column: up to 7 digits (bare or in brackets), then a tab, a bar or a colon.
_NUMBER_COLUMN = re.compile(r"^\s{0,8}(?:\d{1,7}(?:\t| ?\| ?|: )|\[\d{1,7}\] )")


def _numbered(texts: list[str]) -> bool:
    """Whether nearly every line begins with a line number, and the numbers rise (a
    forwarder's constant ``[0] `` is no line number)."""
    numbers = []
    for text in texts:
        match = _NUMBER_COLUMN.match(text)
        if match is None:
            continue
        numbers.append(int("".join(c for c in match.group(0) if c.isdigit())))
    rising = all(a < b for a, b in itertools.pairwise(numbers))
    return len(numbers) * 10 >= len(texts) * 9 and len(numbers) >= 3 and rising


def _launched(text: str, launcher: Launcher) -> tuple[str | None, str]:
    """(stream, rest) of ``text`` with the launcher's prefix taken off; (None, text) when the
    line has none."""
    pattern = {
        Launcher.COMPOSE: _COMPOSE,
        Launcher.RAY: _RAY,
        Launcher.VLLM: _RAY,
        Launcher.KUBECTL: _KUBECTL,
        Launcher.WRAPPER: _WRAPPER,
        Launcher.POD: _POD,
        Launcher.STERN: _STERN,
    }.get(launcher)
    match = pattern.match(text) if pattern is not None else None
    if match is None:
        return None, text
    return match.group(1), match.group("text")


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
        time = _rfc3339(time_text) if time_text else None
    elif envelope is Envelope.NUMBERED:
        column = _NUMBER_COLUMN.match(text)
        if column is not None:
            text = text[column.end() :]
    elif envelope is Envelope.CRI:
        match = _CRI.match(text)
        if match is None and text[:1] in _STRAY:
            # a backtick or spaces a paste put before the line
            bare = text.lstrip(_STRAY)
            match = _CRI.match(bare) if len(text) - len(bare) <= _MAX_STRAY else None
        if match is not None:
            time_text = match.group("time")
            time = _rfc3339(time_text)
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
) -> LogLine:
    """The :class:`LogLine` of ``text`` (the envelope already off): colours, the launcher's
    prefix, the collector's time (``stamped``: the ``timestamps`` form, whose time comes after
    the launcher's prefix) and sglang's prefix taken off. ``time`` (with ``time_text``) is the
    collector's, which has a zone; sglang's own time is used only where there is none."""
    if "\x1b" in text:
        text = ANSI.sub("", text)
    if launcher is not Launcher.NONE:
        who, text = _launched(text, launcher)
        stream = who if who is not None else stream
    if stamped:
        match = _STAMP.match(text)
        if match is not None:
            stamp = match.group("time")
            moment = _rfc3339(stamp)
            if moment is not None:
                time, time_text, text = moment, stamp, match.group("text") or ""
    if "[rank" in text[:9]:
        python = _TORCH_PYTHON_RANK.match(text)
        if python is not None:  # the rank is the line's stream; its text is what Python wrote
            stream = ranked_stream(stream, f"rank {python.group('rank')}")
            text = text[python.end() :]
    zone = _zone_of(time_text) if time is not None else None
    ranks: str | None = None
    lead = ""
    match = _SGLANG.match(text) if text.startswith("[") else None
    if match is not None:
        ranks = match.group("ranks").strip()
        if zone is None:
            time = sglang_time(match.group("time"), match.group("ms"))
            ms = match.group("ms")
            time_text = match.group("time") + (f".{ms}" if ms else "")
        text = match.group("text")
    elif "] " in text[: _PREFIX_REACH + 2]:
        found = _SGLANG_ANY.search(text, 0, _PREFIX_REACH)
        if found is not None:
            if found.group("cut") is not None:
                ranks = found.group("cut")
            else:
                ranks = found.group("ranks").strip()
                if zone is None:
                    time = sglang_time(found.group("time"), found.group("ms"))
                    ms = found.group("ms")
                    time_text = found.group("time") + (f".{ms}" if ms else "")
            lead = text[: found.start()]
            text = text[found.end() :]
    return LogLine(number, text, time, time_text, ranks, stream, zone=zone, lead=lead)


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
    )


def in_zone(line: LogLine, zone: LocalZone) -> LogLine:
    """``line`` with its zone-less time (sglang's own) taken to be in ``zone``, as the user
    says: an instant from then on. A line whose time has a zone, or that has none, is kept."""
    if line.time is None or line.zone is not None:
        return line
    wall = _WALL_EPOCH + timedelta(seconds=line.time)
    return dataclasses.replace(line, time=zone.instant(wall), zone=zone.label)


def _zone_of(time_text: str | None) -> str | None:
    """The zone at the end of a collector's time as written ('Z', '+02:00')."""
    match = _ZONE.search(time_text or "")
    return match.group(0) if match else "Z"


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
    match = _TORCH_RANK.match(text)
    return f"rank {match.group('rank')}" if match else None
