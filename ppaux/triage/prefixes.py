"""The prefixes launchers and stores put before a line, taken off one layer at a time.

Loki's ``{label="..."}`` set (its pod named), Cloud Logging's ``[key: value]`` groups,
``kubectl logs --prefix``'s ``[pod/<pod>/<container>]``, a wrapper's ``[<time>] [name]: ``,
torchrun's and Open MPI's rank tags, Ray's ``(... pid=N ...)``, a tab column, a serving
framework's own logger (vLLM's ``ERROR 03-12 15:02:44 file.py:N]``, ``[file.py:N]`` since vLLM
0.8), an application logger's before an exception line (DeepSpeed's, glog's, a pod's stamp),
supervisord's relayed output, a test harness's ``stdout: ``/``stderr: `` relay, Slurm
``srun --label``'s ``<task>:``, TorchX's ``<role>/<replica>``, docker compose's
``<service> |`` and a log view's ``[<service>]: ``, a trainer's rank label (ParlAI's
``rank:  3 | ``, also behind any few characters a paste put before it), Python logging's
``- <logger> - <LEVEL> - `` (its level kept), a host fan-out's ``node1:``, a row's time; Ray's,
compose's and a wrapper's also behind a backtick or an indentation that a paste put before
them; the colours around a launcher's prefix (Ray's ``^[[36m(... pid=N)^[[0m``, spelled
``ESC[36m``, or with the escape lost: ``[36m(... pid=N)[0m``).
"""

from __future__ import annotations

import re

from ppaux.patterns import lazy
from ppaux.triage.appstamps import app_prefix
from ppaux.triage.forwarders import (
    host_or_fields,
    mpi_time,
    python_logger,
    supervised,
    tagged_rank,
    wrapper_prefix,
)
from ppaux.triage.lineshapes import ANSI
from ppaux.triage.peeled import LEAD, MILD_LEVELS, SEVERE_LEVELS, Peeled, stamp

__all__ = ["layers"]

_LABELS = lazy(r'^\{(?:[\w.]+\s*=~?\s*"(?:[^"\\]|\\.)*"\s*,?\s*)*\}\s?')
#: The pod and container a Loki label set names (``{namespace="llm", pod="sglang-0"}``).
_LABEL_POD = lazy(r'[{,\s]pod(?:_name)?\s*=\s*"([A-Za-z0-9][\w.-]{0,252})"')
_LABEL_CONTAINER = lazy(r'[{,\s]container(?:_name)?\s*=\s*"([A-Za-z0-9][\w.-]{0,252})"')
_KEY_GROUP = lazy(r"^\[[\w.]+: [^\[\]]*\]\s?")
_KUBECTL = lazy(r"^\[(?P<who>pod/[^/\]\s]+/[^/\]\s]*)\] ")
#: A time alone in brackets that a CI runner or a tool stamped before each line (Buildkite's
#: ``[2025-05-20T05:24:28Z] ``, a zone or microseconds in it, a clock's ``[05:24:28] ``).
_BRACKET_STAMP = lazy(
    r"^\[(?P<time>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|z|[+-]\d\d:?\d\d)?"
    r"|\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)\] "
)
#: sglang's own time, which its prefix holds with no rank after it in its main process: not a
#: stamp to take off from a line alone (:func:`ppaux.triage.survey.stamped_lines` tells the
#: whole log's).
_SGLANG_TIME = lazy(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?")
#: A Python serving framework's own logger (vLLM's): ``ERROR 03-12 15:02:44 file.py:581] ``, and
#: since vLLM 0.8 with the place in brackets, ``ERROR 08-06 22:23:09 [file.py:487] ``, and in
#: later releases with the file's path in the package (``[v1/executor/multiproc_executor.py:597]``).
_FRAMEWORK = lazy(
    r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? "
    r"\[?[\w.-]{1,200}(?:/[\w.-]{1,200}){0,16}:\d{1,9}\] "
)
_COMPOSE = lazy(r"^(?P<who>[A-Za-z0-9][\w.-]*) +\| ?")
#: docker compose's prefix as it pads a service's name: at least two spaces before the bar.
_PADDED_COMPOSE = lazy(r"^(?P<who>[A-Za-z0-9][\w.-]*[-_]\d+) {2,}\| ?")
#: Characters a paste may put before a launcher's prefix (a backtick, an indentation).
_MAX_STRAY = 8
_RAY = lazy(r"^\((?P<who>[^()]{0,200}\bpid=\w+[^()]{0,200})\) ?")
#: Slurm ``srun --label``'s ``<task>: ``, and a launcher's ``<rank> :`` label (the space before
#: the colon, none after it).
_SLURM = lazy(r"^ {0,8}(?P<task>\d{1,7})(?:: | :)")
#: A test harness's or runner's relay of a child's output, each line behind the name of the
#: stream it came on (``stdout: <line>``, ``stderr: <line>``): the stream, not a process.
_RELAY = lazy(r"^(?P<stream>stdout|stderr):(?: |$)")
#: A job launcher's replica (TorchX's and NeMo-Run's ``<role>/<replica> ``) before torchrun's
#: ``[defaultN]:`` or torch's ``[rankN]:``, which name the rank behind it.
#: A service's or container's name in brackets and a colon before a line (a compose or
#: deployment console's log view: ``[vllm]: <line>``); torch's ``[rankN]:`` and torchrun's
#: ``[defaultN]:`` are rank tags, read as such.
_LABEL = lazy(r"^\[(?!(?:rank|default)\d)(?P<who>[A-Za-z][\w.-]{0,63})\]: ")
#: torch's ``[rankN]: `` before a worker's own name in Ray's shape (vLLM's ``(VllmWorker rank=5
#: pid=3073) ``).
_RANKED_WORKER = lazy(r"^\[rank\d{1,6}\]: ?(?=\()")
_REPLICA = lazy(r"^(?P<who>[A-Za-z0-9][\w.-]{0,127}/\d{1,6}) (?=\[(?:default|rank)\d{1,6}\]:)")


#: A trainer's rank label before each line a rank prints (ParlAI's ``rank: {rank:2d} | ``, so
#: ``rank:  3 | ``), then its logger's clock and level where the line is a record
#: (``12:00:05 | ``, ``12:00:05 WARNING | ``): the rank names the line's process.
_RANK_LABEL = lazy(
    r"^rank: {0,8}(?P<rank>\d{1,6}) {0,8}\| ?"
    r"(?:\d\d:\d\d:\d\d(?:[.,]\d{1,6})?(?: (?P<level>[A-Z]{4,8}))? {0,8}\| ?)?"
)

#: The same label behind what a paste put before it (a list's mark, a stray character): found
#: in the first :data:`_LABEL_REACH` characters, in its own shape (spaces around the rank).
_RANK_LABEL_IN = lazy(
    r"rank: {1,8}(?P<rank>\d{1,6}) {1,8}\| ?"
    r"(?:\d\d:\d\d:\d\d(?:[.,]\d{1,6})?(?: (?P<level>[A-Z]{4,8}))? {0,8}\| ?)?"
)
_LABEL_REACH = 16


def layers(rest: str, peeled: Peeled) -> str:
    """``rest`` without the launchers' and stores' layers before it (at most four)."""
    for _ in range(4):
        step = _launcher(rest, peeled)
        if step is None:
            break
        rest = step
    return rest


def _stray_launcher(rest: str, peeled: Peeled) -> str | None:
    """``rest`` without Ray's, docker compose's or a wrapper's prefix behind a few characters a
    paste put before it (a backtick, the whole paste's indentation); None when there is none.
    Only the prefixes that cannot be a traceback's own text: Ray's holds ``pid=``, compose pads
    its service's name before the bar, a wrapper's holds a time and its name in brackets."""
    inner = rest.lstrip(" `")
    if len(rest) - len(inner) > _MAX_STRAY:
        return None
    ray = _RAY.match(inner) if inner[:1] == "(" else None
    if ray is not None:
        peeled.stream = ray.group("who")
        return inner[ray.end() :]
    labelled = _RANK_LABEL.match(inner) if inner[:1] == "r" else None
    if labelled is not None:
        return _rank_label(inner, labelled, peeled)
    compose = _PADDED_COMPOSE.match(inner)
    if compose is not None and compose.group("who") not in ("File", "Traceback"):
        peeled.stream = compose.group("who")
        return inner[compose.end() :]
    wrapper = wrapper_prefix(inner) if inner[:1] == "[" else None
    if wrapper is not None:
        peeled.stream = peeled.stream or wrapper[0]
        return wrapper[1]
    return None


def _rank_label(rest: str, labelled: re.Match[str], peeled: Peeled) -> str:
    """``rest`` without a trainer's rank label (``labelled``), its rank the stream and its
    logger's level kept."""
    peeled.stream = f"rank {int(labelled.group('rank'))}"
    level = labelled.group("level") or ""
    peeled.severe = peeled.severe or level in SEVERE_LEVELS
    peeled.mild = peeled.mild or level in MILD_LEVELS
    return rest[labelled.end() :]


def _labels(rest: str, peeled: Peeled) -> str | None:
    """``rest`` without Loki's label set before it (its pod named as the stream), else None."""
    labels = _LABELS.match(rest)
    if labels is None or labels.end() <= 2:
        return None
    pod = _LABEL_POD.search(labels.group(0))
    if pod is not None and peeled.stream is None:
        container = _LABEL_CONTAINER.search(labels.group(0))
        named = f"/{container.group(1)}" if container is not None else ""
        peeled.stream = f"pod/{pod.group(1)}{named}"
    return rest[labels.end() :]


def _bracketed(rest: str, peeled: Peeled) -> str | None:
    """``rest`` without a layer in brackets before it (Cloud Logging's key group, kubectl's
    pod, a wrapper's time and name, a rank tag), else None."""
    group = _KEY_GROUP.match(rest)
    if group is not None:
        return rest[group.end() :]
    pod = _KUBECTL.match(rest)
    if pod is not None:
        peeled.stream = pod.group("who")
        return rest[pod.end() :]
    wrapper = wrapper_prefix(rest)
    if wrapper is not None:  # a wrapper's time and name: the process's line behind them
        peeled.stream = peeled.stream or wrapper[0]
        return wrapper[1]
    tagged = tagged_rank(rest)
    if tagged is not None:  # a hint only: sglang's own prefix, behind it, names the ranks
        peeled.stream, rest = tagged
        return rest
    stamped = _BRACKET_STAMP.match(rest)
    if stamped is not None and _SGLANG_TIME.fullmatch(stamped.group("time")) is None:
        stamp(peeled, stamped.group("time"))
        return rest[stamped.end() :]
    ranked = _RANKED_WORKER.match(rest)
    ray = _RAY.match(rest[ranked.end() :]) if ranked is not None else None
    if ranked is not None and ray is not None:
        peeled.stream = ray.group("who")  # the worker behind torch's rank tag names itself
        return rest[ranked.end() + ray.end() :]
    label = _LABEL.match(rest)
    if label is not None:
        peeled.stream = peeled.stream or label.group("who")
        return rest[label.end() :]
    return None


def _launcher(rest: str, peeled: Peeled) -> str | None:
    """``rest`` without one more layer (labels, key groups, a launcher's prefix); None when
    it has none."""
    head = rest[:1]
    if head == "[" or head.islower() or head.isdigit() or head in ("I", "W", "E", "F"):
        logged = app_prefix(rest)
        if logged is not None:  # an application logger's prefix before an exception line
            peeled.stream = peeled.stream or logged.pod
            if logged.time is not None:
                stamp(peeled, logged.time)
            return logged.rest
    if head in ("\x1b", "^", "\x9b", "#", "E", "["):
        # a colour before a launcher's prefix or after it (Ray's ``^[[36m(pid=N)^[[0m``, in
        # caret notation, as the escape byte, spelled ``ESC[36m`` or with its escape lost):
        # taken off here, since the prefix is
        coloured = ANSI.match(rest)
        if coloured is not None:
            return rest[coloured.end() :]
        if head not in ("E", "["):
            return None
    if head == "{":
        return _labels(rest, peeled)
    if head == "[":
        return _bracketed(rest, peeled)
    timed = mpi_time(rest) if head in ("M", "T", "W", "F", "S") else None
    if timed is not None:  # Open MPI's time before its rank tag, read in the next layer
        stamp(peeled, timed[0])
        return timed[1]
    if head == "(":
        ray = _RAY.match(rest)
        if ray is not None:
            peeled.stream = ray.group("who")
            return rest[ray.end() :]
        return None
    if head in (" ", "`"):
        stray = _stray_launcher(rest, peeled)
        if stray is not None:
            return stray
    if head == "\t":
        return rest[1:]
    bare = rest.lstrip(" ")
    framework = _FRAMEWORK.match(bare) if len(rest) - len(bare) <= 8 else None
    if framework is not None:
        peeled.mild = bare.startswith(("DEBUG", "INFO", "WARNING"))  # a level of no failure
        return bare[framework.end() :]
    named = _named(rest, peeled)
    if named is not None:
        return named
    lead = LEAD.match(rest)
    if lead is not None and lead.group("time") and lead.end() < len(rest):
        # a row's time, or the application's own time inside a collector's envelope (the
        # collector's time, given first, is the one kept)
        stamp(peeled, lead.group("time"))
        return rest[lead.end() :]
    return None


def _named(rest: str, peeled: Peeled) -> str | None:
    """``rest`` without a prefix that names the line's process or rank (a job launcher's
    replica, supervisord's program, Slurm's task, compose's service, a trainer's rank label, a
    harness's stream, Python logging's logger, a host fan-out's host), else None."""
    replica = _REPLICA.match(rest)
    if replica is not None:
        peeled.stream = replica.group("who")
        return rest[replica.end() :]
    relayed = supervised(rest)
    if relayed is not None:
        peeled.stream = relayed[0]
        return relayed[1]
    slurm = _SLURM.match(rest)
    if slurm is not None:
        peeled.stream = f"task {int(slurm.group('task'))}"
        return rest[slurm.end() :]
    compose = _COMPOSE.match(rest)
    if compose is not None and compose.group("who") not in ("File", "Traceback"):
        peeled.stream = compose.group("who")
        return rest[compose.end() :]
    labelled = _RANK_LABEL.match(rest) if rest[:1] == "r" else None
    if labelled is not None:
        return _rank_label(rest, labelled, peeled)
    relay = _RELAY.match(rest) if rest[:1] == "s" else None
    if relay is not None:
        peeled.stream = peeled.stream or relay.group("stream")
        return rest[relay.end() :]
    logger = python_logger(rest) if rest[:2] == "- " else None
    if logger is not None:  # Python logging's logger and level: the level kept
        peeled.severe = peeled.severe or logger[0] in SEVERE_LEVELS
        peeled.mild = logger[0] in MILD_LEVELS
        return logger[1]
    if rest[:1].islower():
        fanned = host_or_fields(rest)
        if fanned is not None:
            host, rest = fanned
            peeled.stream = host or peeled.stream
            return rest
    labelled = _RANK_LABEL_IN.search(rest, 0, 64) if "rank:" in rest[:_LABEL_REACH] else None
    if labelled is not None and labelled.start() < _LABEL_REACH:
        return _rank_label(rest, labelled, peeled)
    return None
