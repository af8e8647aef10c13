"""The records a check's child sends, as its parent takes them: each record's fields (their
types, ranges and names) and the order the records come in, in one place.

The child's records (written in :mod:`.worker` and :mod:`.runner`) come in one order:
``ready``; ``receiver`` where the transport starts a receiving process (``torch-distributed``,
``sglang``), just before it does; then ``start``, per batch size (in the order the check was
given them) its step records (``driving``, ``no_output``, ``step`` or ``undescribable``, steps
in order; or ``rank0_failed``), its ``requests`` and its ``again`` records, then ``locations``;
or, in place of any of that, one record that stops the check (``target_error``,
``config_error``, ``failed``, ``target_exit``, ``target_raised``); last ``end``. ``made`` and
``wire`` come between the step records. A ``step`` or ``requests`` record describes at most
:data:`REQUESTS_PER_RECORD` requests of each path; ``reqs`` records after it describe the
batch's next ones, in order. A record with a field of a wrong type, a number out of range, a
key the record does not have, or out of this order is not the check's: :func:`Protocol.take`
raises ``ValueError`` saying which, and the parent reads no more (PP715 ``garbled``).

Each record that moves the check on (a new step, the next part of a batch size, the end) is a
new *part* of the run: the parent gives each part the check's timeout on its own clock
(:mod:`.child`), so that records sent within a part, whatever they are, move nothing. A run
has at most two parts a step and a few more, whatever the child sends.

Imports nothing beyond the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["REQUESTS_PER_RECORD", "STOPS", "Bounds", "Protocol", "check_fields"]

#: The most requests of each path one record describes: a larger batch's requests follow
#: their ``step`` or ``requests`` record in ``reqs`` records of this many, so that what the
#: parent reads at once does not grow with the batch (``Limits.max_record_bytes`` bounds a
#: record at any batch size).
REQUESTS_PER_RECORD = 256


@dataclass(frozen=True)
class Bounds:
    """What the parent takes from one run's child: the bytes of one record, the records of one
    part of the run, and the bytes of all its records (each a field of
    :class:`~ppaux.limits.Limits`, by the name given with it), and the run's shape."""

    record_bytes: tuple[str, int]
    #: What one record may cost once read (:func:`~ppaux.observer.framing.read_cost`), in
    #: bytes; raised with ``max_record_bytes`` (the field named with ``record_bytes``).
    record_cost: int
    step_records: tuple[str, int]
    run_bytes: tuple[str, int]
    batch_sizes: tuple[int, ...]
    steps: int
    most_given: int


#: The records that stop the check before its end.
STOPS = frozenset({"target_error", "config_error", "failed", "target_exit", "target_raised"})


def _str(value: object) -> bool:
    return isinstance(value, str)


def _opt_str(value: object) -> bool:
    return value is None or isinstance(value, str)


def _bool(value: object) -> bool:
    return isinstance(value, bool)


def _count(value: object) -> bool:
    """A whole number from 0 (not a bool), below 2**31."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 31


def _dict(value: object) -> bool:
    return isinstance(value, dict)


#: A leaf's record (:func:`~ppaux.observer.compare.record`) per kind: its fields (every one
#: required), then those it may have.
_TENSOR_KEYS = frozenset(
    {"kind", "dtype", "shape", "strides", "device", "layout", "quantization", "sha256", "values"}
)
_VALUE_KEYS = frozenset({"kind", "type", "text", "key"})


def _ints(value: object, counts: bool) -> bool:
    """A list of whole numbers (not bools), each a count where ``counts``."""
    return isinstance(value, list) and all(
        isinstance(item, int)
        and not isinstance(item, bool)
        and (_count(item) if counts else -(1 << 63) <= item < 1 << 63)
        for item in value
    )


def _leaf(value: object) -> bool:
    """A leaf's record: a tensor's or an array's (its dtype, shape, strides, device, layout,
    quantization, digest and first values) or a value's (its type, text and key, and the limit
    that left it not compared)."""
    if not isinstance(value, dict):
        return False
    kind = value.get("kind")
    if kind in ("tensor", "array"):
        return (
            value.keys() == _TENSOR_KEYS
            and all(_str(value[key]) for key in ("dtype", "device", "layout", "sha256", "values"))
            and (value["shape"] is None or _ints(value["shape"], True))
            and (value["strides"] is None or _ints(value["strides"], False))
            and _opt_str(value["quantization"])
        )
    if kind == "value":
        keys = value.keys() - {"limit"}
        return (
            keys == _VALUE_KEYS
            and all(_str(value[key]) for key in _VALUE_KEYS)
            and _str(value.get("limit", ""))
        )
    return False


def _described(value: object) -> bool:
    """A description of a value: leaf paths to their records (:func:`_leaf`)."""
    return isinstance(value, dict) and all(_leaf(v) for v in value.values())


def _bad_leaf(value: object) -> str:
    """Where a description (or a list of them) holds a record that is not a leaf's: '' where
    it holds none, else its path (cut), and the request's number in a list."""
    found: list[tuple[int | None, Any]] = [(None, value)] if isinstance(value, dict) else []
    if isinstance(value, list):
        found = [(number, item) for number, item in enumerate(value) if isinstance(item, dict)]
    for number, described in found:
        for path, leaf in described.items():
            if not _leaf(leaf):
                at = "" if number is None else f" of request {number}"
                return f" (its leaf {str(path)[:80]!r}{at})"
    return ""


def _opt_described(value: object) -> bool:
    return value is None or _described(value)


def _requests(value: object) -> bool:
    """Descriptions of the requests, one a request."""
    return isinstance(value, list) and all(_described(item) for item in value)


def _opt_requests(value: object) -> bool:
    return value is None or _requests(value)


def _strs(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _location(value: object) -> bool:
    """None, or ``{"file", "line", "function"}`` of a line of the target's."""
    return value is None or (
        isinstance(value, dict)
        and set(value) == {"file", "line", "function"}
        and isinstance(value["file"], str)
        and _count(value["line"])
        and isinstance(value["function"], str)
    )


_FAULT_KEYS = ("stage", "side", "method", "error_type", "message", "name", "value")


def _fault(value: object) -> bool:
    """None, or a fault on one of the paths (:meth:`~ppaux.observer.paths.Fault.to_json`)."""
    return value is None or (
        isinstance(value, dict)
        and set(value) == {*_FAULT_KEYS, "where"}
        and all(_opt_str(value[key]) for key in _FAULT_KEYS)
        and _location(value["where"])
    )


def _place(value: object) -> bool:
    """``[file, line, function]`` of a line the target ran."""
    return (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], str)
        and _count(value[1])
        and isinstance(value[2], str)
    )


def _opt_place(value: object) -> bool:
    return value is None or _place(value)


def _places(value: object) -> bool:
    return isinstance(value, dict) and all(_place(item) for item in value.values())


def _settings(value: object) -> bool:
    """The settings a setting error suggests: ``[name, value or None, what]`` each."""
    return isinstance(value, list) and all(
        isinstance(item, list)
        and len(item) == 3
        and _str(item[0])
        and _opt_str(item[1])
        and _str(item[2])
        for item in value
    )


def _timers(value: object) -> bool:
    """The interval timers left running: ``[name, seconds left]`` each, the seconds a finite
    number of zero or more."""
    return isinstance(value, list) and all(
        isinstance(item, list)
        and len(item) == 2
        and _str(item[0])
        and isinstance(item[1], (int, float))
        and not isinstance(item[1], bool)
        and math.isfinite(item[1])
        and item[1] >= 0
        for item in value
    )


_Check = Callable[[Any], bool]
_STEP: dict[str, _Check] = {"batch_size": _count, "step": _count}

#: Per event, its fields (every one required) and then the fields it may have.
_FIELDS: dict[str, tuple[dict[str, _Check], dict[str, _Check]]] = {
    "ready": ({}, {"rank0": _count, "rank0_forked": _str}),
    "receiver": ({}, {}),
    "start": (
        {
            "target": _str,
            "kind": _opt_str,
            "origin": _opt_str,
            "device": _str,
            "sglang_parts": _bool,
            "requests": _opt_str,
            "given": _bool,
        },
        {},
    ),
    "rank0_failed": ({"batch_size": _count, "reason": _str}, {}),
    "driving": (
        {**_STEP, "method": _str, "text": _str, "fault": _fault, "location": _location},
        {},
    ),
    "no_output": ({**_STEP, "why": _str}, {}),
    "undescribable": (
        {
            **_STEP,
            "what": _str,
            "error_type": _str,
            "message": _str,
            "location": _location,
        },
        {},
    ),
    "step": (
        {
            **_STEP,
            "sent": _strs,
            "single": _fault,
            "pp": _fault,
            "output_type": _str,
            "output": _described,
        },
        {
            "rebuilt_type": _str,
            "rebuilt": _opt_described,
            "sending": _described,
            "single_reqs": _opt_requests,
            "pp_reqs": _opt_requests,
        },
    ),
    "made": ({"method": _str, "return": _opt_place, "names": _places}, {}),
    "wire": ({"records": _described}, {}),
    "requests": ({**_STEP, "single_reqs": _requests, "pp_reqs": _requests}, {}),
    "reqs": (
        {**_STEP, "first": _count, "single_reqs": _requests, "pp_reqs": _requests},
        {},
    ),
    "again": ({**_STEP, "by_step": _count, "output": _described}, {}),
    "locations": ({"subjects": _dict}, {}),
    "target_error": ({"target": _str, "reason": _str}, {}),
    "config_error": (
        {"option": _str, "value": _str, "reason": _str, "settings": _settings},
        {},
    ),
    "failed": ({"text": _str}, {}),
    "target_exit": ({"code": _opt_str}, {}),
    "target_raised": ({"text": _str, "location": _location}, {}),
    "end": ({"threads": _strs, "timers": _timers}, {"report_module": _str}),
}


def _a(event: str) -> str:
    """``event`` quoted, after its article."""
    return f"{'an' if event[0] in 'aeiou' else 'a'} {event!r}"


def check_fields(message: dict[str, Any]) -> str:
    """The event of ``message``, a record of the child's (``pid`` aside); raises ``ValueError``
    naming the first field that is missing, unknown or not of its type and range."""
    event = message.get("event")
    if not isinstance(event, str) or event not in _FIELDS:
        raise ValueError(f"an event that is not the check's ({str(event)[:40]!r})")
    required, optional = _FIELDS[event]
    for key, value in message.items():
        if key in ("event", "pid"):
            continue
        check = required.get(key) or optional.get(key)
        if check is None:
            raise ValueError(f"a field {str(key)[:40]!r} that {_a(event)} record does not have")
        if not check(value):
            raise ValueError(
                f"{_a(event)} record whose {key!r} is not what the check sends{_bad_leaf(value)}"
            )
    missing = [key for key in required if key not in message]
    if missing:
        raise ValueError(f"{_a(event)} record without its {missing[0]!r}")
    return event


# Where the run is: (stage, batch index, part of the batch, step). Stages in order:
_NEW, _READY, _STARTED, _LOCATED, _STOPPED, _ENDED = range(6)
#: The parts of one batch size, in order.
_STEPS, _REQUESTS, _AGAIN, _DONE = range(4)


class Protocol:
    """The order of one run's records (see the module's docstring), for ``batch_sizes`` and
    ``steps`` as the check was asked to run them."""

    def __init__(self, batch_sizes: Sequence[int], steps: int, most_given: int) -> None:
        self.batch_sizes = tuple(batch_sizes)
        self.steps = steps
        #: The most outputs a check of given outputs sends (each is a step).
        self.most_given = most_given
        self.stage = _NEW
        #: (batch index, part, step) of the last record that moved the run on.
        self.at: tuple[int, int, int] = (-1, _DONE, 0)
        self.given = False
        #: Whether the ``receiver`` record came (at most once, before ``start``).
        self.receiver = False
        #: The batch size, step and number of requests described so far of the last record
        #: that described requests (a ``reqs`` record may follow it), or None.
        self.requests_at: tuple[int, int, int] | None = None

    def where(self) -> str:
        """Where the run is (after the last record that moved it on), as a finding says it."""
        if self.stage < _STARTED:
            return "before the check's start"
        if self.stage >= _LOCATED:
            return "after the last step"
        index, part, step = self.at
        if index < 0:
            return "before the first step's record"
        size = self.batch_sizes[index]
        if part == _STEPS:
            return f"after the record of batch size {size}, step {step}"
        if part == _REQUESTS:
            return f"after the requests of batch size {size}"
        return f"after the steps of batch size {size}"

    def take(self, message: dict[str, Any]) -> bool:
        """Check ``message`` (its fields, then its place in the order): whether it moves the
        run on (a new part: see the module's docstring); raises ``ValueError`` saying what is
        wrong."""
        event = check_fields(message)
        if event == "ready":
            self._expect(self.stage == _NEW, event)
            self.stage = _READY
            return True
        self._expect(self.stage != _NEW, event)
        if event == "receiver":
            self._expect(self.stage == _READY and not self.receiver, event)
            self.receiver = True
            return True
        if event in STOPS:
            self._expect(self.stage in (_READY, _STARTED, _LOCATED), event)
            self.stage = _STOPPED
            return True
        if event == "end":
            self._expect(self.stage in (_LOCATED, _STOPPED), event)
            self.stage = _ENDED
            return True
        if event == "start":
            self._expect(self.stage == _READY, event)
            self.stage = _STARTED
            self.given = bool(message["given"])
            if self.given:
                self.steps = self.most_given
            return True
        self._expect(self.stage == _STARTED, event)
        if event == "locations":
            self.stage = _LOCATED
            return True
        if event in ("made", "wire"):
            return False
        if event == "reqs":
            self._more_requests(message)
            return False
        self._step_record(event, message)
        self.requests_at = None
        if event in ("step", "requests") and message.get("single_reqs") is not None:
            count = max(len(message["single_reqs"]), len(message.get("pp_reqs") or []))
            self.requests_at = (message["batch_size"], message["step"], count)
        return True

    def _more_requests(self, message: dict[str, Any]) -> None:
        """A ``reqs`` record: the next requests of the last ``step`` or ``requests`` record,
        of its batch size and step, from where the records before it stopped, within the
        batch."""
        size, step, first = message["batch_size"], message["step"], message["first"]
        count = max(len(message["single_reqs"]), len(message["pp_reqs"]))
        self._expect(
            self.requests_at == (size, step, first) and count > 0 and first + count <= size,
            "reqs",
        )
        self.requests_at = (size, step, first + count)

    def _expect(self, ok: bool, event: str) -> None:
        if not ok:
            raise ValueError(f"{_a(event)} record out of the check's order ({self.where()})")

    def _step_record(self, event: str, message: dict[str, Any]) -> None:
        """A record of a batch size's: it must come after the last one that moved the run."""
        size = message["batch_size"]
        step = message.get("step", -1)
        if event != "rank0_failed":
            self._expect(step < self.steps, event)
        if event in ("driving", "no_output", "step", "rank0_failed"):
            parts = [_STEPS]
        elif event == "requests":
            parts = [_REQUESTS]
            self._expect(self.at[1] == _STEPS and step <= self.at[2], event)
        elif event == "again":
            parts = [_AGAIN]
            self._expect(message["by_step"] < self.steps, event)
        else:  # undescribable: a step's, its requests' or its outputs' again; the batch ends
            parts = [_STEPS, _REQUESTS, _AGAIN]
        for index in range(max(self.at[0], 0), len(self.batch_sizes)):
            if self.batch_sizes[index] != size or (self.given and index > 0):
                continue
            for part in parts:
                place = (index, part, step)
                if place > self.at:
                    if event == "requests" and index != self.at[0]:
                        break
                    self.at = (index, _DONE, 0) if event == "undescribable" else place
                    if event == "rank0_failed":
                        self.at = (index, _DONE, 0)
                    return
        self._expect(False, event)
