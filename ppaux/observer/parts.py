"""The parts a check sends the target's outputs through: the implementation's ``add`` and
``pop``, the wire, and sglang's own result processing, copy and ``SamplingBatchInfo`` with the
``sglang`` transport (ppaux's stand-ins otherwise), with the requests ``consume`` sees.

Used where the target runs (the check's child, or this process for an object in hand).
Imports torch, and sglang with the ``sglang`` transport, when used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from ppaux.errors import PpauxError
from ppaux.observer.drive import SamplingInfoFactory
from ppaux.observer.options import ObserverConfigError, ObserverOptions
from ppaux.observer.paths import Consume, Machinery
from ppaux.observer.standins import (
    CommittedTokens,
    StandInBatch,
    StandInSamplingInfo,
    build_commits,
    copy_tensor,
    sampling_info_fields,
)
from ppaux.replay import Sender, Transport
from ppaux.suggestions import Setting

if TYPE_CHECKING:
    import torch

    from ppaux.replay import Wire

__all__ = ["machinery", "rank0_machinery"]


@runtime_checkable
class _Joined(Protocol):
    """A two-process wire (:class:`~ppaux.replay.DistributedWire` and sglang's): besides a
    :class:`~ppaux.replay.Wire`'s calls, an exchange of bare tensors, which joins its
    receiver."""

    def raw(self, tensors: list[Any]) -> float: ...


class _Implementation(Protocol):
    """What a check uses of an implementation's module (ppaux's reference transport, or
    sglang's own ``sampling_observer_pp``): its add and pop, read once per check."""

    add_auxiliary_output_to_pp_tensors: Callable[[Any, Any], None]
    pop_auxiliary_output_from_pp_tensors: Callable[[Any, Any], Any]


class _Consuming(Protocol):
    """The target's host output, as the stand-in result processing calls it (sglang's
    ``consume(batch, commits)``)."""

    def consume(self, batch: StandInBatch, commits: list[Any], /) -> object: ...


@contextlib.contextmanager
def machinery(
    options: ObserverOptions, given_wire: Wire | None = None
) -> Iterator[tuple[Machinery, SamplingInfoFactory, torch.device, bool]]:
    """What a check runs the target's outputs through (:class:`Machinery`), the sampling
    info maker, the device and whether sglang's own parts are used: the implementation
    ``options.impl`` loaded, the wire opened (or ``given_wire``, left open) and its receiver
    started, sglang's result processing with the ``sglang`` transport, ppaux's otherwise."""
    from ppaux.replay import DeviceError, resolve_device

    try:
        device = resolve_device(options.device)
    except DeviceError as exc:
        raise ObserverConfigError("device", exc.value, exc.reason) from None
    module = _implementation(options)
    wire = given_wire or _open_wire(options, device, module)
    sglang_parts = options.transport is Transport.SGLANG
    starting = _start_receiver(wire) if given_wire is None else None
    try:
        consume, copier, info = _sglang_parts() if sglang_parts else _ppaux_parts()
    except BaseException:
        # sglang's classes could not be imported: stop the receiver before saying so.
        if starting is not None:
            starting()
        wire.close()
        raise
    if starting is not None:
        failure = starting()
        if failure is not None:
            wire.close()
            raise ObserverConfigError("transport", options.transport.value, failure)
    machine = _machine(options, module, wire, device, consume, copier, info)
    try:
        yield machine, info, device, sglang_parts
    finally:
        if given_wire is None:
            wire.close()


def rank0_machinery(options: ObserverOptions) -> Machinery:
    """Rank 0's parts in a process of its own (:mod:`.apart`): ``options.impl``'s pop,
    the copy to the host, the result processing and the requests; no wire."""
    from ppaux.replay import resolve_device

    device = resolve_device(options.device)
    module = _implementation(options)
    sglang_parts = options.transport is Transport.SGLANG
    consume, copier, info = _sglang_parts() if sglang_parts else _ppaux_parts()
    return _machine(options, module, None, device, consume, copier, info)


def _machine(
    options: ObserverOptions,
    module: _Implementation,
    wire: Wire | None,
    device: torch.device,
    consume: Consume,
    copier: Callable[[torch.Tensor], torch.Tensor],
    info: SamplingInfoFactory,
) -> Machinery:
    from ppaux.observer.requests import request_kit

    kit = request_kit(options.transport is Transport.SGLANG)
    return Machinery(
        add=module.add_auxiliary_output_to_pp_tensors,
        pop=module.pop_auxiliary_output_from_pp_tensors,
        wire=wire,
        validating=options.sender is Sender.VALIDATING,
        copy_tensor=copier,
        consume=consume,
        # The batch carries its sampling_info, as every ScheduleBatch sglang builds does.
        make_batch=lambda reqs: kit.make_batch(
            reqs, str(device), info(len(reqs), options.vocab_size, device)
        ),
        make_requests=kit.make,
        view_request=kit.view,
        requests=kit.label,
    )


def _implementation(options: ObserverOptions) -> Any:
    """The add and pop of ``options.impl`` (ppaux's reference, or sglang's own module)."""
    from ppaux.replay import load_implementation

    impl = options.impl.value
    transport = options.transport.value
    try:
        return load_implementation(impl, options.sglang_path if transport != "sglang" else None)
    except PpauxError as exc:
        reason = getattr(exc, "reason", str(exc))
        where = getattr(exc, "where", None)
        if options.sglang_path is not None and where not in (None, "sglang"):
            # The path given is at fault: name it, as replay does.
            raise ObserverConfigError("sglang_path", str(where), reason) from None
        way_out = (
            (Setting("sglang_path", what="an unpacked tree or a wheel"),)
            if options.sglang_path is None
            else ()
        )
        raise ObserverConfigError("impl", impl, f"sglang is {reason}").suggest(*way_out) from None


def _open_wire(options: ObserverOptions, device: torch.device, module: object) -> Any:
    from ppaux.replay import WireSetupError, open_wire

    transport = options.transport.value
    try:
        return open_wire(
            transport,
            device=device,
            timeout_s=options.timeout_s,
            sglang_path=options.sglang_path,
            implementations={options.impl.value: module},
        )
    except WireSetupError as exc:
        raise ObserverConfigError("transport", transport, exc.bare()).suggest(
            *exc.suggestions
        ) from None


def _sglang_parts() -> tuple[Consume, Callable[[torch.Tensor], torch.Tensor], SamplingInfoFactory]:
    """sglang's own result processing, copy to the host and ``SamplingBatchInfo``."""
    import warnings

    with warnings.catch_warnings():
        # sglang's imports warn about missing GPUs and kernels; they are not findings.
        warnings.simplefilter("ignore")
        from sglang.srt.managers.scheduler_components.batch_result_processor import (
            SchedulerBatchResultProcessor,
        )

        # The copy the scheduler hands copy_to_host (GenerationBatchResult's): defined in
        # this module in 0.5.19, imported into it from sglang.srt.utils.common in 0.5.23.
        from sglang.srt.managers.utils import _async_d2h as async_d2h
        from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo

    def info(batch_size: int, vocab_size: int, where: torch.device | str) -> Any:
        return SamplingBatchInfo(**sampling_info_fields(batch_size, vocab_size, where))

    return SchedulerBatchResultProcessor.consume_auxiliary_output, async_d2h, info


def _ppaux_parts() -> tuple[Consume, Callable[[torch.Tensor], torch.Tensor], SamplingInfoFactory]:
    """ppaux's stand-ins for the same three."""

    def consume(batch: object, host: object, starts: list[int]) -> None:
        # The stand-in parts go with the stand-in requests (request_kit), so make_batch made a
        # StandInBatch. The host output is the target's: one without ``consume`` fails here
        # with the target's own AttributeError, a hook failure, as sglang's processing would.
        stand_in = cast("StandInBatch", batch)
        commits = build_commits(stand_in.reqs, starts, CommittedTokens)
        cast("_Consuming", host).consume(stand_in, commits)

    def info(batch_size: int, vocab_size: int, where: torch.device | str) -> Any:
        return StandInSamplingInfo(**sampling_info_fields(batch_size, vocab_size, where))

    return consume, copy_tensor, info


def _start_receiver(wire: Wire) -> Callable[[], str | None] | None:
    """Join a two-process wire's receiver now, in a thread, so that its start-up (torch and,
    for ``sglang``, sglang's runtime, imported in the other process; the ``sglang`` wire starts
    that process as soon as it is opened, before this process imports sglang) overlaps with
    this process's own imports; returns the call that waits for it (the failure's text, or
    None). In-process wires have nothing to start (None)."""
    if wire.transport not in ("torch-distributed", "sglang") or not isinstance(wire, _Joined):
        return None
    import threading

    failed: list[str] = []

    def start() -> None:
        try:
            wire.raw([])  # an empty exchange: the receiver is up and joined once it returns
        except Exception as exc:  # reported when the check waits for it
            lines = str(exc).strip().splitlines()
            failed.append(lines[0] if lines else type(exc).__name__)

    thread = threading.Thread(target=start, name="ppaux-receiver-start", daemon=True)
    thread.start()

    def wait() -> str | None:
        thread.join()
        return failed[0] if failed else None

    return wait
