"""Running the target and recording what happened: the child's half of a check.

:func:`run_checks` drives the observer (or sends the outputs given) down both paths and hands
:func:`emit` one record per event: plain data (see :mod:`.judge` for what each means), never a
judgement. Each output's leaves are described when it is produced, its rebuilt copy as rank 0
rebuilds it (both before any ``copy_to_host``, which may change them in place), and the requests
after ``consume`` once the paths ran; the outputs already produced are described again at the end
of their batch size (the aliasing check, :mod:`.watched`), against what their own step left.
Nothing is kept once described but the outputs themselves, which that last description needs.
Anything the target's objects raise while described is recorded as the target's failure, with its
method and line.

Runs in the check's child process (:mod:`.worker`) or, for an object in hand, in-process.
Imports torch when used.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ppaux.observer.compare import records
from ppaux.observer.drive import (
    HookFailure,
    drive_step,
    message_line,
    shown_path,
    where_raised,
)
from ppaux.observer.growth import RequestWalk
from ppaux.observer.lines import at_step
from ppaux.observer.paths import Fault, Machinery, hook_fault, pp_host, pp_send, single_stage_path
from ppaux.observer.protocol import REQUESTS_PER_RECORD
from ppaux.observer.target import LoadedObserver, TargetError
from ppaux.observer.walk import MAX_KEY, shown_name
from ppaux.observer.watched import Watched, described
from ppaux.sglang import OUTPUT_PREFIX

if TYPE_CHECKING:
    from ppaux.observer.apart import RankZero
    from ppaux.observer.options import ObserverOptions

__all__ = ["Emit", "run_checks"]

Emit = Callable[[dict[str, Any]], None]


def _first_line(error: BaseException) -> str:
    return message_line(error)


def _location(obj: object, method: str | None) -> dict[str, Any] | None:
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


def _locations(subjects: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for subject, obj in subjects.items():
        found = {m or "": _location(obj, m) for m in _METHODS.get(subject, ())}
        out[subject] = {k: v for k, v in found.items() if v is not None}
    return out


class _Checks:
    def __init__(
        self,
        loaded: LoadedObserver,
        machinery: Machinery,
        info: Any,
        device: Any,
        options: ObserverOptions,
        emit: Emit,
    ) -> None:
        self.loaded = loaded
        self.m = machinery
        self.info = info
        self.device = device
        self.options = options
        self.emit = emit
        self.subjects: dict[str, Any] = {}
        #: Rank 0 in a process of its own (:mod:`.apart`), where there is one.
        self.apart: RankZero | None = None
        self.made_sent: set[str] = set()
        self.walk = RequestWalk(lambda view, skip, same: described("a request", view, skip, same))
        #: Whether a path stopped at a step of this batch size: its requests then differ by
        #: what the stopped path did not do: they are not compared at its later steps, nor
        #: described whole at its end.
        self.faulted = False

    def rank0(self, batch_size: int) -> Any:
        try:
            return self.loaded.make_rank0()
        except TargetError as exc:
            self.emit({"event": "rank0_failed", "batch_size": batch_size, "reason": exc.reason})
            return None

    def undescribable(
        self, batch_size: int, index: int, failure: HookFailure, subject: object
    ) -> None:
        error = failure.error
        self.emit(
            {
                "event": "undescribable",
                "batch_size": batch_size,
                "step": index,
                "what": failure.method,
                "error_type": type(error).__name__,
                "message": _first_line(error),
                # Where the target's code raised; else (a value too deep to print, raising in
                # C) the class of the object that holds it.
                "location": where_raised(error) or _location(subject, None),
            }
        )

    def batch(self, batch_size: int) -> None:
        rank0 = self.rank0(batch_size)
        if rank0 is None:
            return
        single_reqs, pp_reqs = self.m.make_requests(batch_size), self.m.make_requests(batch_size)
        self.subjects.update(observer=self.loaded.observer, rank0=rank0)
        self.walk = RequestWalk(lambda view, skip, same: described("a request", view, skip, same))
        self.faulted = False
        produced: list[tuple[int, Any]] = []
        for index in range(self.options.steps):
            at_step(batch_size, index)
            try:
                step = drive_step(
                    self.loaded.observer,
                    batch_size,
                    index,
                    vocab_size=self.options.vocab_size,
                    device=self.device,
                    sampling_info=self.info,
                )
            except HookFailure as failure:
                self.emit(
                    {
                        "event": "driving",
                        "batch_size": batch_size,
                        "step": index,
                        "method": failure.method,
                        "text": failure.text[:500],
                        "fault": _fault(hook_fault(failure, "last stage")),
                        "location": where_raised(failure.error),
                    }
                )
                return
            if step.output is None:
                why = (
                    "is_active returned False"
                    if not step.active
                    else "before_grammar returned None"
                )
                if step.active and not step.state_none:
                    why = "after_sample returned None"
                self.emit(
                    {"event": "no_output", "batch_size": batch_size, "step": index, "why": why}
                )
                continue
            seen = self.both_paths(
                step.output, rank0, single_reqs, pp_reqs, step.token_ids, batch_size, index
            )
            if seen is None:
                return
            produced.append((index, Watched(step.output, *seen)))
        if produced and not self.requests_whole(batch_size, produced[-1][0], single_reqs, pp_reqs):
            return
        if len(produced) >= 2:
            last = produced[-1][0]
            for index, watched in produced[:-1]:
                try:
                    now = watched.now()
                except HookFailure as failure:
                    self.undescribable(batch_size, index, failure, watched.strong)
                    return
                self.emit(
                    {
                        "event": "again",
                        "batch_size": batch_size,
                        "step": index,
                        "by_step": last,
                        "output": now,
                    }
                )

    def given(self, outputs: Iterable[Any]) -> None:
        import torch

        rank0 = self.rank0(self.options.batch_sizes[0])
        if rank0 is None:
            return
        self.subjects.update(rank0=rank0)
        batch_size = self.options.batch_sizes[0]
        single_reqs, pp_reqs = self.m.make_requests(batch_size), self.m.make_requests(batch_size)
        self.walk = RequestWalk(lambda view, skip, same: described("a request", view, skip, same))
        self.faulted = False
        last = None
        for index, output in enumerate(outputs):
            if output is None:
                self.emit(
                    {
                        "event": "no_output",
                        "batch_size": batch_size,
                        "step": index,
                        "why": "None given",
                    }
                )
                continue
            token_ids = torch.zeros(batch_size, dtype=torch.int64, device=self.device) + index
            if (
                self.both_paths(output, rank0, single_reqs, pp_reqs, token_ids, batch_size, index)
                is None
            ):
                return
            last = index
        if last is not None:
            self.requests_whole(batch_size, last, single_reqs, pp_reqs)

    def requests_whole(
        self, batch_size: int, last: int, single_reqs: list[Any], pp_reqs: list[Any]
    ) -> bool:
        """Both paths' requests described whole once the batch size's steps ran (see
        :mod:`.growth`), as of step ``last``; False where the target's objects could not be
        described."""
        if self.faulted:
            return True
        try:
            single = [described("a request", self.m.view_request(r)) for r in single_reqs]
            pp = [described("a request", self.m.view_request(r)) for r in pp_reqs]
        except HookFailure as failure:
            self.undescribable(batch_size, last, failure, None)
            return False
        head = {"event": "requests", "batch_size": batch_size, "step": last}
        self.emit_requests(head, single, pp)
        return True

    def emit_requests(self, head: dict[str, Any], single: list[Any], pp: list[Any]) -> None:
        """``head`` with the first :data:`REQUESTS_PER_RECORD` requests' descriptions of
        each path, then a ``reqs`` record for each further such number of them: no record
        describes more requests than that, whatever the batch size, so that what the parent
        reads at once does not grow with the batch."""
        most = REQUESTS_PER_RECORD
        self.emit({**head, "single_reqs": single[:most], "pp_reqs": pp[:most]})
        for first in range(most, max(len(single), len(pp)), most):
            self.emit(
                {
                    "event": "reqs",
                    "batch_size": head["batch_size"],
                    "step": head["step"],
                    "first": first,
                    "single_reqs": single[first : first + most],
                    "pp_reqs": pp[first : first + most],
                }
            )

    def both_paths(
        self,
        output: object,
        rank0: object,
        single_reqs: list[Any],
        pp_reqs: list[Any],
        token_ids: object,
        batch_size: int,
        index: int,
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]] | None:
        """Both paths of one output, recorded; the output's records as it was produced and as
        its own step left it (its copy_to_host may change it in place), or None where the
        target's objects could not be described (the check of this batch size stops there)."""
        self.subjects.update(output=output, rank0=rank0)
        try:
            produced = described("the output", output)
        except HookFailure as failure:
            self.undescribable(batch_size, index, failure, output)
            return None
        # Each path starts from the output as after_sample returned it, as in sglang, where a
        # process runs one of them: the last stage sends it and rank 0 rebuilds it (described
        # as it is rebuilt) before the single stage's copy_to_host, which may change the
        # output's own tensors in place; rank 0's copy_to_host changes only its own.
        pp = pp_send(output, rank0, token_ids, self.m)
        # What rank 0 received crosses to rank 0's own process now, before the single
        # stage's copy_to_host may change the output's tensors in place.
        asked = pp.fault is None and self.ask_apart(batch_size, index, pp.received)
        rebuilt: dict[str, dict[str, Any]] | HookFailure | None = None
        if pp.fault is None:
            try:
                rebuilt = described("the output rank 0 rebuilt", pp.output)
            except HookFailure as failure:
                rebuilt = failure
        single = single_stage_path(output, single_reqs, token_ids, self.m)
        pp = pp_host(pp, pp_reqs, token_ids, self.m)
        sent = _sent_names(pp.sent)
        message: dict[str, Any] = {
            "event": "step",
            "batch_size": batch_size,
            "step": index,
            "sent": sent,
            "single": _fault(single.fault),
            "pp": _fault(pp.fault),
            "output_type": type(output).__qualname__,
            "output": produced,
        }
        if asked:
            self.apart_answer(message)
        self.faulted = self.faulted or single.fault is not None or pp.fault is not None
        seen = None
        try:
            if single.fault is None and pp.fault is None:
                if isinstance(rebuilt, HookFailure):
                    raise rebuilt
                message["rebuilt_type"] = type(pp.output).__qualname__
                message["rebuilt"] = rebuilt
                if not self.faulted:  # else the requests differ by the step a path missed
                    seen = self.walk.step(
                        [self.m.view_request(r) for r in single_reqs],
                        [self.m.view_request(r) for r in pp_reqs],
                    )
        except HookFailure as failure:
            self.undescribable(batch_size, index, failure, pp.output)
            return None
        if seen is not None:
            self.emit_requests(message, *seen)
            message = {**message, "pp_reqs": seen[1]}
        else:
            self.emit(message)
        self.made(message, pp.sent)
        try:
            left = described("the output", output)
        except HookFailure as failure:
            self.undescribable(batch_size, index, failure, output)
            return None
        return produced, left

    def ask_apart(self, batch_size: int, index: int, received: Any) -> bool:
        """Send what rank 0 received to rank 0's own process (:mod:`.apart`); whether it
        was sent (then :meth:`apart_answer` reads the answer)."""
        return self.apart is not None and self.apart.send(batch_size, index, received)

    def apart_answer(self, message: dict[str, Any]) -> None:
        """Rank 0's own process's answer, put in the step's ``message`` (``apart``)."""
        answer = None if self.apart is None else self.apart.answer()
        if answer is not None:
            message["apart"] = answer

    def made(self, message: dict[str, Any], sent: Any) -> None:
        """Once per hook: the line of its own file that made each value the step's records
        name (see :mod:`ppaux.observer.lines`), and the wire's own records of what add sent,
        so that the judge can tell the sender's change from the receiver's."""
        import re

        from ppaux.observer.lines import last_run, made_at

        paths = {
            "to_pp_tensors": list(message.get("sent") or []),  # as the step named them
            "from_pp_tensors": list(message.get("rebuilt") or {}),
            "after_sample": list(message.get("output") or {}),
            "consume": [p for r in message.get("pp_reqs") or [] for p in r],
        }
        for method, found in paths.items():
            ran = last_run(method)
            if method in self.made_sent or ran is None:
                continue
            self.made_sent.add(method)
            names = [n for path in found for n in re.findall(r"[A-Za-z_]\w*", path)]
            # A name longer than a shown key is never one a finding names whole.
            names = [n for n in [*ran.keys, *names] if len(n) <= MAX_KEY]
            places = made_at(ran, names)
            self.emit(
                {
                    "event": "made",
                    "method": method,
                    "return": None if ran.returned is None else _place(ran.returned),
                    "names": {name: _place(place) for name, place in places.items()},
                }
            )
        if sent and "wire" not in self.made_sent:
            self.made_sent.add("wire")
            try:
                wire = {str(k).removeprefix(OUTPUT_PREFIX): v for k, v in dict(sent).items()}
                self.emit({"event": "wire", "records": records(wire)})
            except Exception:  # a value the wire holds that cannot be described: no wire facts
                pass


def _sent_names(sent: Any) -> list[str]:
    """The keys ``to_pp_tensors`` sent, as the report shows them: a long key crosses as its
    start and a digest of the whole (:func:`~ppaux.observer.compare.shown_name`), so what
    crosses to the parent does not grow with the target's keys."""
    return [shown_name(str(k).removeprefix(OUTPUT_PREFIX)) for k in (sent or {})]


def _place(place: tuple[str, int, str]) -> list[Any]:
    """[file, line, function] of a line the target ran, its file as reports show it."""
    return [shown_path(place[0]), place[1], place[2]]


def _fault(fault: Fault | None) -> dict[str, Any] | None:
    if fault is None:
        return None
    data = fault.to_json()
    data["message"] = str(data["message"])[:2000]
    return data


def run_checks(
    loaded: LoadedObserver,
    options: ObserverOptions,
    machinery: Machinery,
    info: Any,
    device: Any,
    sglang_parts: bool,
    outputs: Iterable[Any] | None,
    emit: Emit,
    rank0: RankZero | None = None,
) -> None:
    """Drive ``loaded`` (or send ``outputs``) and ``emit`` every record, from 'start' to
    'locations'."""
    emit(
        {
            "event": "start",
            "target": loaded.target,
            "kind": loaded.kind,
            "origin": loaded.origin,
            "device": str(device),
            "sglang_parts": sglang_parts,
            "requests": machinery.requests,
            "given": outputs is not None,
        }
    )
    checks = _Checks(loaded, machinery, info, device, options, emit)
    checks.apart = rank0
    if outputs is not None:
        checks.given(outputs)
    else:
        for batch_size in options.batch_sizes:
            checks.batch(batch_size)
    emit({"event": "locations", "subjects": _locations(checks.subjects)})
