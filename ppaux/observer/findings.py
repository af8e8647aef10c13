"""The findings of a check (PP701 - PP718), worded from what its child reported.

Pure functions of plain data, for :class:`~ppaux.observer.judge.Judge`: a fault on one of the
paths (an observer method raising, sglang's add or pop refusing, the wire failing), a
difference between the single-stage and PP values, an output a later step changed, values not
compared, the way the child ended, and nothing sent at all. Which of them a report keeps (one
per kind, the rest counted) is the judge's business.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ppaux.observer.compare import TENSOR_RULE, VALUE_RULE, Difference, differences
from ppaux.observer.paths import Fault
from ppaux.observer.phrasing import first_line, first_sentence
from ppaux.report import Finding, Location, finding
from ppaux.sglang import (
    ADD_BAD_NAME,
    match_message,
)
from ppaux.suggestions import RaiseLimit, Setting

__all__ = [
    "Ending",
    "changed_finding",
    "difference_finding",
    "difference_pattern",
    "end_finding",
    "ending_finding",
    "fault_finding",
    "fault_key",
    "left_finding",
    "left_running",
    "nothing_sent_finding",
    "sending_changes",
    "threads_finding",
    "uncompared_finding",
]


def _sglang_rule(fault: Fault) -> str:
    """The rule for a fault whose message is one of sglang's, raised by the function that
    raises it (the last stage's add, or rank 0's pop); PP708 for any other failure."""
    known = match_message(fault.message)
    if known is None or (known.message.side == "add") != (fault.stage == "add"):
        return "PP708"
    return known.message.observer_rule or "PP708"


@dataclass(frozen=True)
class Ending:
    """How the child ended, where that is the target's doing: ``kind`` ('exit', 'signal',
    'timeout', 'fork', 'threads', 'silent', 'garbled', 'flooded', 'outlived', 'timers') and
    what to say."""

    kind: str
    text: str
    #: Where the target was when it ended so (``file``, ``line``, ``function``), where known.
    location: dict[str, Any] | None = None
    #: The limit (a field of :class:`~ppaux.limits.Limits`, its value in the run) it went
    #: past, where that ended it.
    limit: tuple[str, int] | None = None


#: Every kind of :class:`Ending`, and the code of its finding: what the target left running
#: (threads, processes) is PP718, a warning; every other way the run ended is PP715.
END_CODES = {
    **dict.fromkeys(
        ("exit", "signal", "signalled", "timeout", "fork", "silent", "garbled", "flooded"),
        "PP715",
    ),
    "timers": "PP715",
    "threads": "PP718",
    "outlived": "PP718",
}


def end_finding(target: str, ending: Ending) -> Finding:
    """The finding of ``ending``: PP718 (a warning) for what the target left running, else
    PP715 (see :data:`END_CODES`)."""
    if END_CODES.get(ending.kind) == "PP718":
        return left_finding(target, ending.text, ending.kind)
    return ending_finding(target, ending)


def ending_finding(target: str, ending: Ending) -> Finding:
    """PP715: the child ended in a way that is the target's doing."""
    return finding(
        "PP715/ending",
        target,
        ending.text,
        extra={"end": ending.kind},
        location=Location.of(ending.location),
        suggestions=() if ending.limit is None else (RaiseLimit(*ending.limit),),
    )


def left_running(threads: Sequence[str]) -> str:
    """What PP718 says of the non-daemon ``threads`` (their names) the check's child left
    running after its last step."""
    return (
        f"the target left {len(threads)} thread(s) running after the last step "
        f"({', '.join(threads[:5])}); they were stopped with its process, and in sglang they "
        "would run on inside the scheduler"
    )


def threads_finding(target: str, text: str) -> Finding:
    """PP718: non-daemon threads the target left running after the last step (a warning:
    in sglang they run on inside the scheduler, which they do not stop)."""
    return left_finding(target, text, "threads")


def left_finding(target: str, text: str, kind: str) -> Finding:
    """PP718: what the target left running after the last step, ``kind`` 'threads' or
    'outlived' (processes): a warning, since the check stopped them and in sglang they run on
    beside the scheduler without changing what it computes."""
    return finding("PP718", target, text, extra={"end": kind})


def nothing_sent_finding(target: str) -> Finding:
    """PP714: no step sent anything, so nothing was checked."""
    return finding(
        "PP714",
        target,
        "the observer produced no auxiliary output in any step: nothing was sent, "
        "so nothing was checked (is_active, before_grammar or after_sample said no)",
        suggestions=(Setting("outputs", None, "a zero-argument callable returning them"),),
    )


def uncompared_finding(
    target: str, not_compared: dict[str, str], count: int, limits: Sequence[RaiseLimit]
) -> Finding:
    """PP716: values the check could not compare, the first named (the rest are listed in
    the notes and the JSON report's ``observer.not_compared``); the ``limits`` that left them
    uncompared (each with the value it had in the run) are said once, as the fix's
    suggestions."""
    place, why = next(iter(not_compared.items()))
    more = count - 1
    tail = f" (and {more} more)" if more else ""
    return finding(
        "PP716",
        target,
        f"{count} value(s) not compared over the steps, so a difference in "
        f"them is not reported: {place}: {why}{tail}",
        suggestions=tuple(limits),
    )


def changed_finding(
    target: str, item: Difference, batch_size: int, index: int, by_step: object
) -> Finding:
    """PP713: the output of step ``index`` changed by a later step (``by_step``)."""
    return finding(
        "PP713",
        target,
        f"the output of step {index} (batch size {batch_size}) changed by "
        f"step {by_step}: {item.path or 'the output'} was {item.left}, is "
        f"now {item.right}; it shares memory that a later step overwrites, so a "
        "copy made after the next forward reads the next step's values",
        item.path or None,
        extra={"batch_size": batch_size, "step": index, "rule": TENSOR_RULE},
    )


def sending_changes(target: str, step: dict[str, Any], at: str) -> list[Finding]:
    """PP717: each field of the output that its ``to_pp_tensors`` changed, from a step's
    record: the output as ``after_sample`` returned it (``output``) and as it was once
    ``to_pp_tensors`` returned (``sending``, absent where it is the same record). A field the
    output gained (a cached value filled while sending) is the object growing, not a change."""
    if "sending" not in step:
        return []
    found = differences(step.get("output") or {}, step.get("sending") or {})
    return [
        finding(
            "PP717",
            target,
            f"to_pp_tensors changed {item.path or 'the output'} of the output in place while "
            f"sending it ({item.what}): was {item.left}, is now {item.right} ({at}); sglang's "
            "last stage goes on using the output after sending it, so its copy_to_host and "
            "consume read the changed value where rank 0 reads what was sent",
            item.path or None,
            extra={"what": item.what, "was": item.left, "now": item.right, "rule": _rule(item)},
        )
        for item in found
        if item.what != "extra"
    ]


def _rule(item: Difference) -> str:
    """The rule a difference was found by (named in its finding)."""
    tensor = item.what in ("bits", "dtype", "shape", "device", "layout")
    return TENSOR_RULE if tensor else VALUE_RULE


#: A peer's address and port in a transport's message (gloo's "Connection closed by peer
#: [127.0.0.1]:13718"): the port is the connection's own, a new one for each.
_PEER_PORT = re.compile(r"(\[[0-9A-Fa-f.:]+\]):\d+")


def fault_key(fault: Fault) -> str:
    """What makes two faults of one rule the same (a report words the first of them): a
    peer's port in the message is left out (each connection has its own)."""
    if fault.stage == "hook":
        return f"{fault.method}/{fault.side}"
    message = _PEER_PORT.sub(r"\1:PORT", fault.message)
    return f"{fault.stage}/{message}"


def fault_finding(target: str, transport: str, fault: Fault, at: str) -> Finding:
    """The finding for ``fault`` met ``at`` (a batch size and step in words): PP710 for an
    observer method that raised, PP709 for the wire, else the rule of sglang's message."""
    if fault.stage == "hook":
        side = {"last stage": "the last stage", "rank 0": "rank 0"}.get(fault.side, fault.side)
        short = first_sentence(first_line(fault.message))
        return finding(
            "PP710/fault",
            target,
            f"{fault.method} raised {fault.error_type}: {short} on {side} ({at})",
            fault.name,
            extra={"method": fault.method, "side": fault.side},
            location=Location.of(fault.where),
        )
    entry = ""
    if fault.name is not None and fault.message == ADD_BAD_NAME.template:
        # The name is the bad key's repr: 0 and '' must read as what they are, not as '0'.
        entry = f"; the entry at fault is named {fault.name}"
        if fault.value is not None:
            entry += f", a {fault.value}"
    elif fault.name is not None:
        entry = f"; the entry at fault is {fault.name!r}"
        if fault.value is not None:
            entry += f", a {fault.value}"
    elif fault.value is not None:
        entry = f"; to_pp_tensors returned {fault.value}"
    sglang_error: str | None
    if fault.stage == "wire":
        code = "PP709"
        message = first_sentence(fault.message)
        text = (
            f"the {transport} transport fails on the {fault.side}: "
            f"{fault.error_type}: {message}{entry} ({at})"
        )
        sglang_error = None
    else:
        code = _sglang_rule(fault)
        side = "the last stage's add" if fault.stage == "add" else "rank 0's pop"
        text = f"{side} raises {fault.error_type}: {fault.message}{entry} ({at})"
        sglang_error = fault.message if fault.error_type == "RuntimeError" else None
    return finding(
        code,
        target,
        text,
        fault.name,
        sglang_error=sglang_error,
        extra={"side": fault.side, "stage": fault.stage, "value": fault.value},
    )


def difference_pattern(item: Difference) -> str:
    """What makes two differences of one rule the same: the field (list indexes left out)
    and the kind of difference, whichever request, step or list index."""
    return re.sub(r"\[\d+\]", "[*]", item.path) + "/" + item.what


def _what_follows(code: str, path: str) -> str:
    """What a difference leads to, as far as the check knows: a request's field (PP712) is
    what rank 0 keeps; a field of the rebuilt output (PP711) is handed to rank 0's
    ``consume``, which may never read it (which fields it reads is not recorded)."""
    if code != "PP711":
        return "rank 0's request holds the PP value"
    read = f"whether it reads {path}" if path else "which of its fields it reads"
    return f"rank 0's consume is handed the PP value ({read} is not known)"


def difference_finding(code: str, target: str, subject: str, item: Difference, at: str) -> Finding:
    """PP711 or PP712 (``code``): ``item`` of ``subject`` differs between the paths."""
    rule = _rule(item)
    # ".entropy of the output rank 0 rebuilt", not "the output rank 0 rebuilt.entropy".
    label = f"{item.path} of {subject}" if item.path else subject
    return finding(
        code,
        target,
        f"{label} differs ({item.what}): single stage {item.left}, PP {item.right} "
        f"({at}); sglang raises nothing: {_what_follows(code, item.path)}",
        item.path or None,
        extra={"what": item.what, "single_stage": item.left, "pp": item.right, "rule": rule},
    )
