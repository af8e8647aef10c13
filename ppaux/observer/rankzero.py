"""Rank 0's side of the PP path, in the process that plays rank 0.

In sglang, rank 0 is another process than the last stage (another host under multi-node): its
observer is made there, ``from_pp_tensors`` rebuilds the output there from what the wire
delivered, and that output's ``copy_to_host`` and ``consume`` write into rank 0's own requests.
:class:`RankZeroSide` holds all of that: rank 0's observer, its requests and the walk of their
descriptions (:class:`~ppaux.observer.growth.SideWalk`), and answers each question the check
asks as plain data (what the records carry), never an object of the target's.

The check's child runs it in a process of its own (:mod:`.apart`), which imported the target
separately; an object in hand (``assert_pp_safe``), or a system that cannot fork, runs it in
the checking process, the same answers from the same code.

Imports torch when used.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ppaux.observer.drive import HookFailure, message_line, shown_path, where_raised
from ppaux.observer.growth import Redo, SideWalk
from ppaux.observer.paths import Fault, Machinery, pp_host, pp_pop
from ppaux.observer.target import TargetError
from ppaux.observer.walk import MAX_KEY, Same, Skip
from ppaux.observer.watched import described

__all__ = [
    "RankZeroSide",
    "ended_fault",
    "fault_record",
    "location",
    "locations",
    "made_records",
]


def location(obj: object, method: str | None) -> dict[str, Any] | None:
    """Where ``method`` of ``obj``'s class (the class itself when None) is defined: where a
    finding points when no line of the method is known to have made its value (see
    :mod:`ppaux.observer.lines`)."""
    try:
        klass = obj if inspect.isclass(obj) else type(obj)
        code = inspect.getattr_static(klass, method, None) if method is not None else klass
        code = getattr(code, "__func__", code)
        file = inspect.getsourcefile(code)
        _, line = inspect.getsourcelines(code)
        name = f"{klass.__qualname__}.{method}" if method is not None else klass.__qualname__
    except Exception:  # not Python source, or an object that refuses to be looked at
        return None
    if file is None:
        return None
    return {"file": shown_path(file), "line": max(line, 1), "function": name}


_METHODS = {
    "observer": ("is_active", "before_grammar", "after_sample"),
    "rank0": (None, "from_pp_tensors"),
    "output": (None, "to_pp_tensors", "copy_to_host"),
}


def locations(subjects: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Where each subject's methods are defined, by subject."""
    out: dict[str, dict[str, Any]] = {}
    for subject, obj in subjects.items():
        found = {m or "": location(obj, m) for m in _METHODS.get(subject, ())}
        out[subject] = {k: v for k, v in found.items() if v is not None}
    return out


def fault_record(fault: Fault | None) -> dict[str, Any] | None:
    """``fault`` as a record carries it (its message cut at 2000 characters)."""
    if fault is None:
        return None
    data = fault.to_json()
    data["message"] = str(data["message"])[:2000]
    return data


#: Where rank 0's process was in a step when it ended, by the phase it last told
#: (:class:`RankZeroSide`'s ``tell``), as a clause.
_PHASES = {
    "pop": " while it popped what it received (from_pp_tensors)",
    "rebuilt": (
        " after from_pp_tensors returned, while ppaux described the output it rebuilt (where "
        "a thread or a finaliser of the target's runs)"
    ),
    "host": " while the rebuilt output's copy_to_host and consume ran",
    "answered": " after it answered the step before, before this step's pop began",
}


def ended_fault(how: str, phase: str | None = None) -> dict[str, Any]:
    """The fault record of rank 0's process ending (``how``: "exit code 3", "killed by
    signal SIGKILL") at the step it was at, where in it (``phase``, see :data:`_PHASES`)."""
    message = f"rank 0's process ended ({how}){_PHASES.get(phase or '', '')}"
    return Fault("pop", "ProcessEnded", message, "rank 0").to_json()


def undescribable(failure: HookFailure, subject: object) -> dict[str, Any]:
    """What an ``undescribable`` record says of ``failure`` (the target's object raised while
    described): where the target's code raised, else the class of ``subject``."""
    error = failure.error
    return {
        "what": failure.method,
        "error_type": type(error).__name__,
        "message": message_line(error),
        "location": where_raised(error) or location(subject, None),
    }


def made_records(paths: dict[str, list[str]], sent: set[str]) -> list[dict[str, Any]]:
    """Once per method of ``paths`` (not in ``sent``, which it is added to): the line of the
    target's own file that made each value the step's records name, by method (see
    :mod:`ppaux.observer.lines`); ``paths`` are those values' paths, by method."""
    import re

    from ppaux.observer.lines import last_run, made_at

    out: list[dict[str, Any]] = []
    for method, found in paths.items():
        ran = last_run(method)
        if method in sent or ran is None:
            continue
        sent.add(method)
        names = [n for path in found for n in re.findall(r"[A-Za-z_]\w*", path)]
        # A name longer than a shown key is never one a finding names whole.
        names = [n for n in [*ran.keys, *names] if len(n) <= MAX_KEY]
        places = made_at(ran, names)
        out.append(
            {
                "event": "made",
                "method": method,
                "return": None if ran.returned is None else _place(ran.returned),
                "names": {name: _place(place) for name, place in places.items()},
            }
        )
    return out


def _place(place: tuple[str, int, str]) -> list[Any]:
    """[file, line, function] of a line the target ran, its file as reports show it."""
    return [shown_path(place[0]), place[1], place[2]]


def _describe_request(view: object, skip: Skip, same: Same) -> dict[str, dict[str, Any]]:
    return described("a request", view, skip, same)


class RankZeroSide:
    """Rank 0's observer (made by ``make_rank0`` once, for every batch size), its requests and
    what it rebuilt at the step under way; ``m`` its machinery (pop, copy to the host,
    consume). Each method answers plain data.

    One observer for the run, as the last stage's: in sglang rank 0 pops with
    ``tp_worker.model_runner.sampling_observer`` (``scheduler_pp_mixin``, 0.5.19 and 0.5.23),
    the one instance its model runner holds for the server's life, which sees every batch
    size the server runs.
    """

    def __init__(self, make_rank0: Callable[[], Any], m: Machinery) -> None:
        self.make_rank0 = make_rank0
        self.m = m
        self.rank0: Any = None
        #: Whether rank 0's observer was made (once, at the first batch size).
        self.made = False
        self.reqs: list[Any] = []
        self.walk = SideWalk(_describe_request)
        self.popped: Any = None
        self.rebuilt: Any = None
        self.token_ids: Any = None
        #: The output rank 0 rebuilt at the last step (what its requests' faults point at).
        self.output: Any = None
        self.made_sent: set[str] = set()
        #: Never set: this side ends with the process that asks it.
        self.lost: str | None = None
        #: Told where the step is (in rank 0's process, :func:`~.apart.serve` sends it on).
        self.tell: Callable[[str], None] = lambda phase: None

    def begin(self, batch_size: int) -> dict[str, Any]:
        """Rank 0's requests for ``batch_size``, its observer made at the first batch size
        (kept for the later ones): ``{"reason"}``, None where they were made, else why its
        observer could not be."""
        if not self.made:
            try:
                self.rank0 = self.make_rank0()
            except TargetError as exc:
                return {"reason": exc.reason}
            self.made = True
        self.reqs = self.m.make_requests(batch_size)
        self.walk = SideWalk(_describe_request)
        return {"reason": None}

    def send(self, received: dict[Any, Any]) -> None:
        """Rank 0's pop of what it ``received`` from the wire, and the rebuilt output
        described as it is rebuilt (before its copy_to_host, which may change it)."""
        self.token_ids = received.get("next_token_ids")
        self.popped = pp_pop(received, self.rank0, self.m)
        self.rebuilt = None
        self.tell("rebuilt")
        if self.popped.fault is None:
            try:
                self.rebuilt = described("the output rank 0 rebuilt", self.popped.output)
            except HookFailure as failure:
                self.rebuilt = failure

    def answer(self) -> dict[str, Any]:
        """The rest of rank 0's step (copy to the host, consume into its requests) and its
        answer: ``{"fault"}``, ``{"undescribable"}`` or ``{"rebuilt_type", "rebuilt"}``."""
        popped, self.popped = self.popped, None
        self.output = popped.output
        if popped.fault is not None:
            return {"fault": fault_record(popped.fault)}
        self.tell("host")
        host = pp_host(popped, self.reqs, self.token_ids, self.m)
        if host.fault is not None:
            return {"fault": fault_record(host.fault)}
        if isinstance(self.rebuilt, HookFailure):
            return {"undescribable": undescribable(self.rebuilt, popped.output)}
        return {"rebuilt_type": type(popped.output).__qualname__, "rebuilt": self.rebuilt}

    def ask(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """Answer ``op`` (``begin``, ``walk``, ``settle``, ``whole``, ``made``,
        ``locations``) with ``args``, as plain data."""
        try:
            if op == "begin":
                return self.begin(int(args["batch_size"]))
            if op == "walk":
                views = [self.m.view_request(r) for r in self.reqs]
                return {"offers": self.walk.first(views)}
            if op == "settle":
                redo: Redo = {int(n): (common, allowed) for n, common, allowed in args["redo"]}
                return {"again": [[n, found] for n, found in self.walk.settle(redo).items()]}
            if op == "whole":
                views = [self.m.view_request(r) for r in self.reqs]
                return {"reqs": [described("a request", view) for view in views]}
            if op == "made":
                return {"events": made_records(args["paths"], self.made_sent)}
            if op == "locations":
                return {"rank0": locations({"rank0": self.rank0}).get("rank0", {})}
        except HookFailure as failure:
            return {"undescribable": undescribable(failure, self.output if op != "whole" else None)}
        raise ValueError(f"no such question: {op}")
