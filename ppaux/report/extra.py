"""What a finding's ``extra`` holds, by the area that writes it: the keys each check may give,
each with the type of its value. :data:`Extra` is their union, the type of
:attr:`ppaux.report.findings.Finding.extra`.

Every family takes the keys any finding may carry: ``omitted`` (the count a finding standing
for those not listed gives), ``payload`` (where in a dump the dict sits), ``causes`` (the
finding's own likely causes) and ``strict`` (``--strict`` raised it to an error).
"""

from __future__ import annotations

from typing import TypedDict

__all__ = [
    "CommonExtra",
    "DumpExtra",
    "Extra",
    "FramePlace",
    "LogPlace",
    "ObserverExtra",
    "RecordPlace",
    "SkewExtra",
    "TimeFields",
    "TriageExtra",
]


class FramePlace(TypedDict):
    """One frame of a traceback: its file, line and function."""

    file: str
    line: int
    function: str


class LogPlace(TypedDict):
    """One line of a log: the log and the line's number."""

    log: str
    line: int


class RecordPlace(TypedDict):
    """One record of a failure: its log, line and the ranks it names."""

    log: str
    line: int
    ranks: str


class TimeFields(TypedDict):
    """A record's time as written and its zone (None where the log does not say)."""

    time: str | None
    time_zone: str | None


class CommonExtra(TypedDict, total=False):
    """The keys any finding may carry."""

    omitted: int
    payload: str
    causes: list[str]
    strict: bool


# ``global`` is a keyword: this family is written in TypedDict's functional form, with the
# common keys spelled out.

#: The inspect, diff, capture and tensorize checks' data (PP1xx to PP6xx).
DumpExtra = TypedDict(
    "DumpExtra",
    {
        "omitted": int,
        "payload": str,
        "causes": list[str],
        "strict": bool,
        "type": str,
        "where": str | None,
        "kind": str,
        "global": str,
        "trail": list[str],
        "culprit": str,
    },
    total=False,
)


class SkewExtra(CommonExtra, total=False):
    """check-skew's data (PP3xx)."""

    missing_keys: list[str]


class ObserverExtra(CommonExtra, total=False):
    """check-observer's and replay's data (PP7xx)."""

    end: str
    batch_size: int
    step: int
    rule: str
    what: str
    was: str
    now: str
    single_stage: str
    pp: str
    method: str | None
    side: str
    stage: str
    value: str | None


class TriageExtra(CommonExtra, total=False):
    """triage's data (PP8xx)."""

    incident: int
    incidents: list[str]
    root: bool
    kind: str
    ranks: list[str]
    exception: str | None
    message: str
    time: str | None
    time_zone: str | None
    log: str
    logs: list[str]
    line: int
    lines: int | list[int]
    records: list[str] | list[RecordPlace]
    launcher_records: list[LogPlace]
    text: str
    no_root: str
    nccl_warnings: int
    crashed: bool
    exited: bool
    relayed: bool
    nccl_setup: str | None
    ib_device: str | None
    killer: str | None
    host: bool
    collectives: str | None
    install: str
    where: str
    fits: list[str] | None
    frames_judged: int
    frames: list[FramePlace]
    sglang_message: str
    rule: str
    stage_fits: bool
    transport_modified: str
    count: int
    corrupt: bool
    long_lines: int
    first: int


#: What a finding's ``extra`` holds: one family's keys.
Extra = DumpExtra | SkewExtra | ObserverExtra | TriageExtra
