"""Running the target and recording what happened: the child's half of a check.

:func:`run_checks` drives the observer (or sends the outputs given) down both paths and hands
:func:`emit` one record per event: plain data (see :mod:`.judge` for what each means), never a
judgement. Rank 0's side of the PP path (its observer, ``from_pp_tensors``, its output's
``copy_to_host`` and ``consume``, the descriptions of those) runs where rank 0 runs: in a
process of its own (:mod:`.apart`) or, for an object in hand, in this one
(:mod:`.rankzero`); its answers are plain data, put in the records as they are. Each output's
leaves are described when it is produced, its rebuilt copy as rank 0 rebuilds it (both before
any ``copy_to_host``, which may change them in place), and the requests after ``consume`` once
the paths ran; the outputs already produced are described again at the end
of their batch size (the aliasing check, :mod:`.watched`), against what their own step left.
Nothing is kept once described but the outputs themselves, which that last description needs.
Anything the target's objects raise while described is recorded as the target's failure, with its
method and line.

Runs in the check's child process (:mod:`.worker`) or, for an object in hand, in-process.
Imports torch when used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ppaux.observer.compare import records
from ppaux.observer.drive import HookFailure, SamplingInfoFactory, drive_step, where_raised
from ppaux.observer.growth import SideWalk, disagreeing
from ppaux.observer.lines import at_step
from ppaux.observer.paths import Fault, Machinery, hook_fault, pp_deliver, single_stage_path
from ppaux.observer.rankzero import (
    RankZeroSide,
    ended_fault,
    fault_record,
    locations,
    made_records,
    undescribable,
)
from ppaux.observer.record_cuts import request_cuts
from ppaux.observer.target import LoadedObserver
from ppaux.observer.walk import Same, Skip, shown_name
from ppaux.observer.watched import Watched, described
from ppaux.sglang import OUTPUT_PREFIX

if TYPE_CHECKING:
    import torch

    from ppaux.observer.options import ObserverOptions

__all__ = ["Emit", "run_checks"]

Emit = Callable[[dict[str, Any]], None]


class RankZeroAnswers(Protocol):
    """Rank 0's side as the check asks it (:class:`~ppaux.observer.rankzero.RankZeroSide` in
    this process, :class:`~ppaux.observer.apart.RankZero` in a process of its own)."""

    def send(self, received: dict[Any, Any]) -> None: ...

    def answer(self) -> dict[str, Any]: ...

    def ask(self, op: str, args: dict[str, Any]) -> dict[str, Any]: ...

    #: How rank 0's process ended, once it did (it is asked nothing more then).
    lost: str | None


def _describe_request(view: object, skip: Skip, same: Same) -> dict[str, dict[str, Any]]:
    return described("a request", view, skip, same)


class _Checks:
    def __init__(
        self,
        loaded: LoadedObserver,
        machinery: Machinery,
        info: SamplingInfoFactory,
        device: torch.device,
        options: ObserverOptions,
        emit: Emit,
        rank0: RankZeroAnswers,
    ) -> None:
        self.loaded = loaded
        self.m = machinery
        self.info = info
        self.device = device
        self.options = options
        self.emit = emit
        self.subjects: dict[str, Any] = {}
        #: Rank 0's side: in a process of its own (:mod:`.apart`) or in this one.
        self.rank0 = rank0
        #: Whether rank 0's observer was made (its methods' places are then asked for).
        self.rank0_made = False
        self.made_sent: set[str] = set()
        self.walk = SideWalk(_describe_request)
        #: Whether a path stopped at a step of this batch size: its requests then differ by
        #: what the stopped path did not do: they are not compared at its later steps, nor
        #: described whole at its end.
        self.faulted = False

    def begin(self, batch_size: int) -> bool:
        """Rank 0's observer and requests made for ``batch_size``, with this side's requests
        (returned); False where rank 0's observer could not be made (said in a record) or
        rank 0's process ended (said when it did)."""
        if self.rank0.lost is not None:
            return False
        reason = self.rank0.ask("begin", {"batch_size": batch_size}).get("reason")
        if reason is not None:
            self.emit({"event": "rank0_failed", "batch_size": batch_size, "reason": reason})
            return False
        self.rank0_made = True
        self.walk = SideWalk(_describe_request)
        self.faulted = False
        return True

    def undescribable(
        self, batch_size: int, index: int, failure: HookFailure, subject: object
    ) -> None:
        self.said_undescribable(batch_size, index, undescribable(failure, subject))

    def said_undescribable(self, batch_size: int, index: int, said: dict[str, Any]) -> None:
        """An ``undescribable`` record of what ``said`` (where the target's code raised;
        else, a value too deep to print, raising in C, the class of the object that holds
        it)."""
        self.emit({"event": "undescribable", "batch_size": batch_size, "step": index, **said})

    def batch(self, batch_size: int) -> None:
        if not self.begin(batch_size):
            return
        single_reqs = self.m.make_requests(batch_size)
        self.subjects.update(observer=self.loaded.observer)
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
                        "fault": fault_record(hook_fault(failure, "last stage")),
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
            seen = self.both_paths(step.output, single_reqs, step.token_ids, batch_size, index)
            if seen is None:
                return
            if produced:  # the step after it ran: what it reassigned there is seen
                produced[-1][1].settle()
            produced.append((index, Watched(step.output, *seen)))
        if produced and not self.requests_whole(batch_size, produced[-1][0], single_reqs):
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

        batch_size = self.options.batch_sizes[0]
        if not self.begin(batch_size):
            return
        single_reqs = self.m.make_requests(batch_size)
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
            if self.both_paths(output, single_reqs, token_ids, batch_size, index) is None:
                return
            last = index
        if last is not None:
            self.requests_whole(batch_size, last, single_reqs)

    def requests_whole(self, batch_size: int, last: int, single_reqs: list[Any]) -> bool:
        """Both paths' requests described whole once the batch size's steps ran (see
        :mod:`.growth`), as of step ``last``; False where the target's objects could not be
        described."""
        if self.faulted:
            return True
        try:
            single = [described("a request", self.m.view_request(r)) for r in single_reqs]
        except HookFailure as failure:
            self.undescribable(batch_size, last, failure, None)
            return False
        theirs = self.rank0.ask("whole", {})
        if "undescribable" in theirs:
            self.said_undescribable(batch_size, last, theirs["undescribable"])
            return False
        head = {"event": "requests", "batch_size": batch_size, "step": last}
        self.emit_requests(head, single, theirs["reqs"])
        return True

    def emit_requests(self, head: dict[str, Any], single: list[Any], pp: list[Any]) -> None:
        """``head`` with the first requests' descriptions of each path, then a ``reqs`` record
        for each further cut of them (:func:`~.record_cuts.request_cuts`): no record
        describes more than :data:`~.protocol.REQUESTS_PER_RECORD` requests, nor comes near
        the parent's bounds, whatever the batch size and however much ``consume`` wrote."""
        for first, end in request_cuts(head, single, pp):
            record = (
                head
                if first == 0
                else {
                    "event": "reqs",
                    "batch_size": head["batch_size"],
                    "step": head["step"],
                    "first": first,
                }
            )
            self.emit({**record, "single_reqs": single[first:end], "pp_reqs": pp[first:end]})

    def both_paths(
        self,
        output: object,
        single_reqs: list[Any],
        token_ids: torch.Tensor,
        batch_size: int,
        index: int,
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]] | None:
        """Both paths of one output, recorded; the output's records as it was produced and as
        its own step left it (its copy_to_host may change it in place), or None where the
        target's objects could not be described (the check of this batch size stops there)."""
        self.subjects.update(output=output)
        try:
            produced = described("the output", output)
        except HookFailure as failure:
            self.undescribable(batch_size, index, failure, output)
            return None
        # Each path starts from the output as after_sample returned it, as in sglang, where a
        # process runs one of them: the last stage sends it and rank 0 receives it (its own
        # tensors, rebuilt and described by rank 0) before the single stage's copy_to_host,
        # which may change the output's own tensors in place.
        pp = pp_deliver(output, token_ids, self.m)
        sending = self.sending(output, produced, pp.fault, batch_size, index)
        if sending is None:
            return None
        if pp.fault is None:
            self.rank0.send(dict(pp.received or {}))
        single = single_stage_path(output, single_reqs, token_ids, self.m)
        answer: dict[str, Any] = (
            {"fault": fault_record(pp.fault)} if pp.fault is not None else self.rank0.answer()
        )
        message: dict[str, Any] = {
            "event": "step",
            "batch_size": batch_size,
            "step": index,
            "sent": _sent_names(pp.sent),
            "single": fault_record(single.fault),
            "pp": answer.get("fault"),
            "output_type": type(output).__qualname__,
            "output": produced,
        }
        if sending != produced:
            message["sending"] = sending
        self.faulted = self.faulted or single.fault is not None or "fault" in answer
        if self.rank0.lost is not None:  # rank 0's process ended: the check ends at this step
            self.emit(message)
            return None
        if single.fault is None and "fault" not in answer:
            if "undescribable" in answer:
                self.said_undescribable(batch_size, index, answer["undescribable"])
                return None
            message["rebuilt_type"] = answer["rebuilt_type"]
            message["rebuilt"] = answer["rebuilt"]
            if not self.faulted:  # else the requests differ by the step a path missed
                seen = self.walk_requests(output, single_reqs, batch_size, index)
                if seen is None:
                    if self.rank0.lost is not None:  # it ended while describing them
                        message.pop("rebuilt", None)
                        message.pop("rebuilt_type", None)
                        self.emit({**message, "pp": ended_fault(self.rank0.lost)})
                    return None
                self.emit_requests(message, *seen)
                message = {**message, "pp_reqs": seen[1]}
            else:
                self.emit(message)
        else:
            self.emit(message)
        self.made(message, pp.sent)
        try:
            left = described("the output", output)
        except HookFailure as failure:
            self.undescribable(batch_size, index, failure, output)
            return None
        return produced, left

    def sending(
        self,
        output: object,
        produced: dict[str, dict[str, Any]],
        fault: Fault | None,
        batch_size: int,
        index: int,
    ) -> dict[str, dict[str, Any]] | None:
        """The output described again once ``to_pp_tensors`` returned (``produced`` where it
        raised): sglang's last stage goes on using the output after sending it, so a change
        made in sending is a fact, sent where it is not the record ``produced``. None where
        the target's objects could not be described (said in a record)."""
        if fault is not None and fault.stage == "hook":
            return dict(produced)
        try:
            return described("the output", output)
        except HookFailure as failure:
            self.undescribable(batch_size, index, failure, output)
            return None

    def walk_requests(
        self, output: object, single_reqs: list[Any], batch_size: int, index: int
    ) -> tuple[list[Any], list[Any]] | None:
        """Both paths' requests described at this step (:mod:`.growth`): this side's here,
        rank 0's where rank 0 runs, lined up; None where the target's objects could not be
        described (said in a record)."""
        try:
            mine = self.walk.first([self.m.view_request(r) for r in single_reqs])
        except HookFailure as failure:
            self.undescribable(batch_size, index, failure, output)
            return None
        theirs = self.rank0.ask("walk", {})
        if self.rank0.lost is not None:
            return None
        if "undescribable" in theirs:
            self.said_undescribable(batch_size, index, theirs["undescribable"])
            return None
        offers = [(found, starts, kept) for found, starts, kept in theirs["offers"]]
        redo = disagreeing(mine, offers)
        asked = [[n, common, allowed] for n, (common, allowed) in redo.items()]
        settled = self.rank0.ask("settle", {"redo": asked})
        if self.rank0.lost is not None:
            return None
        if "undescribable" in settled:
            self.said_undescribable(batch_size, index, settled["undescribable"])
            return None
        try:
            again = self.walk.settle(redo)
        except HookFailure as failure:
            self.undescribable(batch_size, index, failure, output)
            return None
        their_again = {int(n): found for n, found in settled["again"]}
        count = min(len(mine), len(offers))
        single = [again.get(n, mine[n][0]) for n in range(count)]
        pp = [their_again.get(n, offers[n][0]) for n in range(count)]
        return single, pp

    def made(self, message: dict[str, Any], sent: Mapping[str, object] | None) -> None:
        """Once per hook: the line of its own file that made each value the step's records
        name (see :mod:`ppaux.observer.lines`; rank 0's methods' from where rank 0 runs),
        and the wire's own records of what add sent, so that the judge can tell the sender's
        change from the receiver's."""
        ours = {
            # As the step named them, and the output's fields (a change made in sending).
            "to_pp_tensors": [*(message.get("sent") or []), *(message.get("output") or {})],
            "after_sample": list(message.get("output") or {}),
        }
        theirs = {
            "from_pp_tensors": list(message.get("rebuilt") or {}),
            "consume": [p for r in message.get("pp_reqs") or [] for p in r],
        }
        for event in made_records(ours, self.made_sent):
            self.emit(event)
        if not all(method in self.made_sent for method in theirs):
            answer = self.rank0.ask("made", {"paths": theirs})
            for event in answer["events"]:
                self.made_sent.add(event["method"])
                self.emit(event)
        if sent and "wire" not in self.made_sent:
            self.made_sent.add("wire")
            try:
                wire = {str(k).removeprefix(OUTPUT_PREFIX): v for k, v in dict(sent).items()}
                self.emit({"event": "wire", "records": records(wire)})
            except Exception:  # a value the wire holds that cannot be described: no wire facts
                pass

    def where(self) -> dict[str, dict[str, Any]]:
        """Where each subject's methods are defined (rank 0's asked of rank 0's side)."""
        found = locations(self.subjects)
        if self.rank0_made:
            found["rank0"] = self.rank0.ask("locations", {})["rank0"]
        return found


def _sent_names(sent: Mapping[str, object] | None) -> list[str]:
    """The keys ``to_pp_tensors`` sent, as the report shows them: a long key crosses as its
    start and a digest of the whole (:func:`~ppaux.observer.compare.shown_name`), so what
    crosses to the parent does not grow with the target's keys."""
    return [shown_name(str(k).removeprefix(OUTPUT_PREFIX)) for k in (sent or {})]


def run_checks(
    loaded: LoadedObserver,
    options: ObserverOptions,
    machinery: Machinery,
    info: SamplingInfoFactory,
    device: torch.device,
    sglang_parts: bool,
    outputs: Iterable[Any] | None,
    emit: Emit,
    rank0: RankZeroAnswers | None = None,
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
    side = rank0 if rank0 is not None else RankZeroSide(loaded.make_rank0, machinery)
    checks = _Checks(loaded, machinery, info, device, options, emit, side)
    if outputs is not None:
        checks.given(outputs)
    else:
        for batch_size in options.batch_sizes:
            checks.batch(batch_size)
    emit({"event": "locations", "subjects": checks.where()})
