"""The two paths an auxiliary output takes to the requests, run side by side.

* **single stage** (PP=1): ``output.copy_to_host(copy_tensor)``, then the host output's
  ``consume(batch, commits)`` after the step's tokens are committed to the requests;
* **pipeline parallel**: on the last stage, ``add`` puts ``output.to_pp_tensors()`` into the
  dict it sends (with ``next_token_ids`` and ``__msg_type__``, as sglang's
  ``_pp_prepare_tensor_dict`` does); the dict crosses a :class:`~ppaux.replay.Wire`; rank 0's
  ``pop`` hands the received tensors to *its own* observer's ``from_pp_tensors``; the rebuilt
  output then takes the single-stage path on rank 0's requests.

Every failure is returned as a :class:`Fault` naming the side that raises and the entry at fault.
Imports torch when used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ppaux.observer.drive import INTERRUPTS, HookFailure, call_hook, message_line, where_raised
from ppaux.sglang import (
    ADD_BAD_NAME,
    ADD_EMPTY,
    ADD_UNSUPPORTED,
    MSG_TYPE_KEY,
    OUTPUT_MSG_TYPE,
    OUTPUT_PREFIX,
    POP_NON_TENSOR,
)

if TYPE_CHECKING:
    import torch

    from ppaux.replay import PipelineParallelAuxiliaryOutput, PipelineParallelSamplingObserver, Wire

__all__ = [
    "Consume",
    "Fault",
    "Machinery",
    "PathOutcome",
    "hook_fault",
    "pp_deliver",
    "pp_host",
    "pp_pop",
    "single_stage_path",
]


@dataclass(frozen=True)
class Fault:
    """Where a path stopped.

    ``stage`` is 'hook' (the target's own ``method`` raised), 'add' (the last stage's add
    raised), 'wire' (the transport failed on ``side``) or 'pop' (rank 0's pop raised);
    ``error_type`` and ``message`` are verbatim; ``name`` the auxiliary tensor name at fault and
    ``value`` a description of its value, where one is known.
    """

    stage: str
    error_type: str
    message: str
    side: str
    method: str | None = None
    name: str | None = None
    value: str | None = None
    #: Where the target's code raised (``{"file", "line", "function"}``), for a 'hook' fault.
    where: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The fault as plain data."""
        return {
            "stage": self.stage,
            "side": self.side,
            "method": self.method,
            "error_type": self.error_type,
            "message": self.message,
            "name": self.name,
            "value": self.value,
            "where": self.where,
        }


#: The result processing: ``consume(batch, host_output, output_starts)``, handed the batch
#: ``make_batch`` made and the target's host output, both opaque to the paths that carry them.
Consume = Callable[[object, object, list[int]], None]


class Request(Protocol):
    """What the paths read and write of a request (sglang's ``Req``, or ppaux's stand-in): the
    tokens it has (``output_ids``) and where it finished (``finished_len``, None before)."""

    output_ids: list[int]
    finished_len: int | None


@dataclass
class Machinery:
    """What runs the paths: ``add``/``pop`` of the implementation, the ``wire``, the sender
    (``validating``), sglang's ``copy_tensor`` and the result processing (``consume(batch,
    host_output, output_starts)``), and the requests: ``make_requests(batch_size)``,
    ``make_batch(reqs)``, ``view_request(req)`` (what of a request is described) and
    ``requests`` (which classes they are: 'sglang 0.5.23 Req/ScheduleBatch', 'ppaux stand-ins')."""

    add: Callable[[dict[str, Any], object], None]
    pop: Callable[[dict[Any, Any], object], object]
    wire: Wire | None  # None in rank 0's own process (:func:`~.parts.rank0_machinery`)
    validating: bool
    copy_tensor: Callable[[torch.Tensor], torch.Tensor]
    consume: Consume
    make_batch: Callable[[list[Request]], object]
    make_requests: Callable[[int], list[Request]]
    view_request: Callable[[object], object]
    requests: str


@dataclass
class PathOutcome:
    """A path's end: the ``output`` that reached copy_to_host (the rebuilt one on the PP path),
    the ``host`` output, the ``sent`` auxiliary tensors (PP path), or the ``fault``."""

    output: Any = None
    host: Any = None
    sent: dict[str, Any] | None = None
    fault: Fault | None = None
    #: What rank 0 received from the wire (PP path, once the wire delivered).
    received: dict[Any, Any] | None = None


def hook_fault(failure: HookFailure, side: str) -> Fault:
    """The fault of one of the target's own methods raising on ``side``: stage 'hook', the
    method, the exception's type and the first line of its message, verbatim."""
    return Fault(
        "hook",
        type(failure.error).__name__,
        message_line(failure.error),
        side,
        method=failure.method,
        where=where_raised(failure.error),
    )


def _message(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return message_line(Exception(exc.args[0]))
    return message_line(exc)


def _commit_and_consume(
    host: object, reqs: list[Request], token_ids: torch.Tensor, m: Machinery
) -> None:
    starts = [
        req.finished_len if req.finished_len is not None else len(req.output_ids) for req in reqs
    ]
    ids = token_ids.reshape(-1).tolist()
    for req, token in zip(reqs, ids, strict=False):
        req.output_ids.append(int(token))
    batch = m.make_batch(reqs)
    call_hook("consume", m.consume, batch, host, starts)


def single_stage_path(
    output: object, reqs: list[Request], token_ids: torch.Tensor, m: Machinery
) -> PathOutcome:
    """PP=1: copy to host, commit the step's tokens, consume."""
    try:
        copy = call_hook("copy_to_host", _method(output, "copy_to_host"), m.copy_tensor)
        _commit_and_consume(copy, reqs, token_ids, m)
    except HookFailure as failure:
        return PathOutcome(output, fault=hook_fault(failure, "single stage"))
    return PathOutcome(output, copy)


def _method(obj: object, name: str) -> Callable[..., Any]:
    found = getattr(obj, name, None)
    if found is None:

        def missing(*args: object) -> Any:
            raise AttributeError(f"{type(obj).__name__} has no {name}")

        return missing
    return found  # type: ignore[no-any-return]


class _SendingOutput:
    """The output as the last stage's add sees it: ``to_pp_tensors`` runs the output's own and
    keeps what it returned, so that a failure names the entry and its value."""

    def __init__(self, output: PipelineParallelAuxiliaryOutput) -> None:
        self.output = output
        self.produced: Any = None

    def to_pp_tensors(self) -> Any:
        self.produced = call_hook("to_pp_tensors", self.output.to_pp_tensors)
        return self.produced


class _ReceivingObserver:
    """Rank 0's observer as pop sees it: ``from_pp_tensors`` runs the observer's own."""

    def __init__(self, observer: PipelineParallelSamplingObserver) -> None:
        self.observer = observer

    def from_pp_tensors(self, tensors: object) -> Any:
        return call_hook("from_pp_tensors", self.observer.from_pp_tensors, tensors)


def _describe(value: object) -> str:
    from ppaux.observer.compare import describe, record

    try:
        return describe(record(value))
    except Exception:  # a value whose own __repr__ raises: named by its type alone
        return type(value).__name__


def _add_fault(exc: BaseException, sending: object) -> Fault:
    import torch

    message = _message(exc)
    produced = getattr(sending, "produced", None)
    name = value = None
    if produced is not None and hasattr(produced, "items"):
        try:
            items = list(produced.items())
        except Exception:  # a mapping whose items() fails: nothing more to name
            items = []
        if message == ADD_BAD_NAME.text:
            bad = next(((k, v) for k, v in items if not isinstance(k, str) or not k), None)
            if bad is not None:
                name, value = repr(bad[0]), _describe(bad[1])
        else:
            bad = next(((k, v) for k, v in items if not torch.is_tensor(v)), None)
            if bad is not None and repr(bad[0]) in message:
                name, value = str(bad[0]), _describe(bad[1])
    elif produced is not None or message == ADD_EMPTY.text:
        value = _describe(produced)
    return Fault("add", type(exc).__name__, message, "last stage", name=name, value=value)


def _legacy_add(tensors: dict[str, Any], output: object) -> None:
    """A last stage that does not validate: the keys written as ``to_pp_tensors`` gives them."""
    if output is None:
        return
    if not hasattr(output, "to_pp_tensors"):
        raise RuntimeError(ADD_UNSUPPORTED.text)
    produced = output.to_pp_tensors()
    if not produced:
        raise RuntimeError(ADD_EMPTY.text)
    for name, value in produced.items():
        tensors[f"{OUTPUT_PREFIX}{name}"] = value


def _refused_tensor(aux: dict[str, Any], side: str) -> str | None:
    """The entry a sender-side failure is about when the wire did not say (sglang's own send
    raises without naming it): the first tensor torch's dispatcher has no send for (sparse,
    quantized), else the first CPU tensor gloo refuses (not contiguous)."""
    import torch

    if side != "sender":
        return None
    tensors = [(k, v) for k, v in aux.items() if isinstance(v, torch.Tensor)]
    for key, value in tensors:
        if value.layout != torch.strided or value.is_quantized:
            return key
    for key, value in tensors:
        if value.is_cpu and value.numel() and not value.is_contiguous():
            return key
    return None


def _rank0_own(received: dict[Any, Any], sent: dict[Any, Any]) -> dict[Any, Any]:
    """What rank 0 received, each tensor its own: a wire that hands over the very tensors the
    last stage sent (no transport) has them copied, as rank 0 of sglang holds a tensor of its
    own, so that what rank 0's copy_to_host writes in place stays on rank 0 (see
    :func:`_copied`, also for a subclass of the target's whose clone raises)."""
    import torch

    sent_ids = {id(v) for v in sent.values()}
    return {
        key: _copied(value) if id(value) in sent_ids and torch.is_tensor(value) else value
        for key, value in received.items()
    }


def _copied(tensor: torch.Tensor) -> torch.Tensor:
    """A tensor of rank 0's own with ``tensor``'s values: its clone, or for the target's own
    subclass whose ``clone`` raises, the plain tensor's clone made that subclass again (its
    attributes kept). One that cannot be copied so either is handed over as it is."""
    import torch

    try:
        return tensor.clone()
    except BaseException as exc:  # the target's own tensor subclass: copied as a plain tensor
        _theirs(exc)
    try:
        own = torch.Tensor.as_subclass(tensor, torch.Tensor).clone().as_subclass(type(tensor))
        own.__dict__.update(tensor.__dict__)
        return own
    except BaseException as exc:  # a subclass that refuses even that: handed over as it is
        _theirs(exc)
        return tensor


def _theirs(exc: BaseException) -> None:
    """Raise ``exc`` again unless it is the target's (anything its code raises, ``SystemExit``
    among them, but a ``KeyboardInterrupt`` outside the check's child: a person's, see
    :func:`~ppaux.observer.drive.interrupts_are_the_targets`)."""
    if isinstance(exc, KeyboardInterrupt) and not INTERRUPTS.theirs:
        raise exc


def pp_deliver(output: object, token_ids: object, m: Machinery) -> PathOutcome:
    """The PP path up to what rank 0 received (``received`` of the outcome): add on the last
    stage, then the wire. Rank 0 holds tensors of its own. Rank 0's side (:func:`pp_pop`,
    :func:`pp_host`) runs where rank 0 does (:mod:`.rankzero`)."""
    from ppaux.replay import PipelineParallelAuxiliaryOutput

    # Python's own Protocol check, as sglang's add makes it: from 3.12 it looks the attribute up
    # statically, so a method that only ``__getattr__`` supplies is not one.
    sending = (
        _SendingOutput(output) if isinstance(output, PipelineParallelAuxiliaryOutput) else output
    )
    sent: dict[str, Any] = {"next_token_ids": token_ids}
    try:
        (m.add if m.validating else _legacy_add)(sent, sending)
    except HookFailure as failure:
        return PathOutcome(fault=hook_fault(failure, "last stage"))
    except Exception as exc:  # sglang's (or Python's) own error inside add
        return PathOutcome(fault=_add_fault(exc, sending))
    sent[MSG_TYPE_KEY] = OUTPUT_MSG_TYPE
    aux = {k: v for k, v in sent.items() if k.startswith(OUTPUT_PREFIX)}
    assert m.wire is not None  # only the sending side sends
    delivery = m.wire.deliver(sent)
    if delivery.failure is not None:
        refused = delivery.failure
        key = refused.key if refused.key else _refused_tensor(aux, refused.side)
        name = key.removeprefix(OUTPUT_PREFIX) if key else None
        value = _describe(aux[key]) if key in aux else None
        return PathOutcome(
            sent=aux,
            fault=Fault(
                "wire", refused.error_type, refused.message, refused.side, name=name, value=value
            ),
        )
    assert delivery.received is not None  # a wire that did not fail delivered
    return PathOutcome(sent=aux, received=_rank0_own(dict(delivery.received), sent))


def pp_pop(received: dict[Any, Any], rank0_observer: object, m: Machinery) -> PathOutcome:
    """Rank 0's pop of what it ``received``, with its observer: the rebuilt output, or the
    fault (rank 0's side of the PP path, after :func:`pp_deliver`)."""
    import torch

    from ppaux.replay import PipelineParallelSamplingObserver

    receiving = (
        _ReceivingObserver(rank0_observer)
        if isinstance(rank0_observer, PipelineParallelSamplingObserver)
        else rank0_observer
    )
    try:
        rebuilt = m.pop(received, receiving)
    except HookFailure as failure:
        return PathOutcome(fault=hook_fault(failure, "rank 0"))
    except Exception as exc:  # sglang's (or Python's) own error inside pop
        message = _message(exc)
        name = value = None
        if message == POP_NON_TENSOR.text:
            for key, got in received.items():
                if (
                    isinstance(key, str)
                    and key.startswith(OUTPUT_PREFIX)
                    and not torch.is_tensor(got)
                ):
                    name, value = key.removeprefix(OUTPUT_PREFIX), _describe(got)
                    break
        return PathOutcome(
            fault=Fault("pop", type(exc).__name__, message, "rank 0", name=name, value=value)
        )
    return PathOutcome(rebuilt)


def pp_host(
    sent: PathOutcome, reqs: list[Request], token_ids: torch.Tensor, m: Machinery
) -> PathOutcome:
    """The rest of the PP path once rank 0 rebuilt the output (``sent``, from
    :func:`pp_pop`): PP=1's way on rank 0. A fault on the way is handed back as it is."""
    if sent.fault is not None:
        return sent
    result = single_stage_path(sent.output, reqs, token_ids, m)
    result.sent = sent.sent
    if result.fault is not None:
        result.fault = Fault(
            result.fault.stage,
            result.fault.error_type,
            result.fault.message,
            "rank 0",
            method=result.fault.method,
            where=result.fault.where,
        )
    return result
