"""One shape for the four transports: the :class:`Wire` protocol and :func:`open_wire`.

A wire carries the dict the last pipeline stage sends (after its ``add``) to rank 0:

* ``none``: rank 0 gets the very dict that was sent (no wire at all);
* ``wire``: sglang's ``send_tensor_dict``/``recv_tensor_dict`` emulated in this process
  (:mod:`ppaux.replay.wire`);
* ``torch-distributed``: the same, re-implemented over a real two-process gloo group
  (:mod:`ppaux.replay.distributed`);
* ``sglang``: sglang's own ``GroupCoordinator`` in two processes (:mod:`ppaux.replay.sglang_wire`).

Every wire answers two questions, and reports a failure of the wire as data, never by raising:

* :meth:`Wire.deliver` – what does rank 0 receive? A :class:`Delivery` holds rank 0's dict in
  this process (for the two-process wires, a byte-for-byte copy of what the receiver holds:
  same keys, dtypes, shapes, devices, bytes), or the :class:`WireFailure` and the side it
  happened on;
* :meth:`Wire.exchange` – what does rank 0's ``pop`` (ppaux's reference one or sglang's, by
  name) make of it, and what comes back when the popped output is added into a fresh dict? An
  :class:`Exchange` holds the :class:`~ppaux.replay.roundtrip.Reception` and the re-added
  tensors; the two-process wires run that pop in the receiving process.

Use::

    from ppaux.replay import open_wire

    with open_wire("wire", device="cpu") as wire:
        delivery = wire.deliver(sent)
        if delivery.failure is not None:
            ...  # delivery.failure.side, .error_type, .message (verbatim), .key
        else:
            rank0 = delivery.received  # pop it with an observer, compare with ``sent``

Opening a two-process wire starts nothing; the receiving process starts on first use and stops
on :meth:`Wire.close` (or at the end of the ``with`` block). A receiver that cannot start at all
(sglang's runtime not importable there, no second GPU) is not a result of the dict but of the
setup: :meth:`Wire.deliver` and :meth:`Wire.exchange` raise
:class:`~ppaux.replay.distributed.WireSetupError` for it. This module imports torch only in
the functions that need it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ppaux.replay.roundtrip import Reception
    from ppaux.replay.wire import WireError, WireStats

__all__ = [
    "TRANSPORTS",
    "Delivery",
    "Exchange",
    "Wire",
    "WireFailure",
    "open_wire",
]

#: The transports :func:`open_wire` knows, by the names the CLI uses.
TRANSPORTS = ("none", "wire", "torch-distributed", "sglang")


@dataclass(frozen=True)
class WireFailure:
    """The wire failed: ``side`` 'sender' or 'receiver', ``error_type`` and ``message`` those of
    the exception raised there (verbatim where torch or sglang raised it), ``key`` the entry
    being sent if it was a string (a key of another type is None here), ``metadata_sent``
    whether the receiver already had the metadata list (then a real receiver is left waiting
    for data that never comes)."""

    side: str
    error_type: str
    message: str
    key: str | None = None
    metadata_sent: bool = False

    @classmethod
    def from_error(cls, error: WireError) -> WireFailure:
        """The failure a :class:`~ppaux.replay.wire.WireError` reports."""
        key = error.key
        return cls(
            error.side,
            error.error_type,
            error.message,
            key if isinstance(key, str) else None,
            error.metadata_sent,
        )

    def to_json(self) -> dict[str, Any]:
        """The failure as plain data."""
        return {
            "side": self.side,
            "error_type": self.error_type,
            "message": self.message,
            "key": self.key,
            "metadata_sent": self.metadata_sent,
        }


@dataclass(frozen=True)
class Delivery:
    """What one send gave rank 0: ``received`` (None when the wire failed) or ``failure``.

    ``stats`` says what crossed the wire (None for the ``none`` transport, which has none);
    ``transport`` names the wire that carried it.
    """

    transport: str
    received: dict[Any, Any] | None
    failure: WireFailure | None = None
    stats: WireStats | None = None


@dataclass(frozen=True)
class Exchange:
    """One send, rank 0's pop and the way back: ``reception`` (None when the wire failed), the
    ``readded`` auxiliary tensors (None when pop failed or gave nothing), the wire's ``stats``
    (None for ``none``) and its ``failure``, if it failed."""

    transport: str
    reception: Reception | None
    readded: dict[str, Any] | None = None
    stats: WireStats | None = None
    failure: WireFailure | None = None


@runtime_checkable
class Wire(Protocol):
    """A transport from the last pipeline stage to rank 0 (see the module's docstring)."""

    #: The transport's name, one of :data:`TRANSPORTS`.
    transport: str

    def deliver(self, sent: dict[Any, Any]) -> Delivery:
        """Send ``sent`` and return what rank 0 receives, or how the wire failed."""
        ...

    def exchange(self, sent: dict[Any, Any], impl: str) -> Exchange:
        """Send ``sent``; rank 0 pops with ``impl`` ('reference' or 'sglang') and adds back."""
        ...

    def close(self) -> None:
        """Stop whatever the wire started (a receiving process); a no-op for in-process wires."""
        ...

    def __enter__(self) -> Wire: ...

    def __exit__(self, *exc: object) -> None: ...


def open_wire(
    transport: str,
    *,
    device: Any = "cpu",
    all_gather: int = 1,
    timeout_s: float = 60.0,
    sglang_path: str | None = None,
    implementations: Mapping[str, Any] | None = None,
) -> Wire:
    """The :class:`Wire` for ``transport`` (a name of :data:`TRANSPORTS`, or a ``Transport``).

    ``device`` is where the sender's tensors are (a ``torch.device`` or its text); ``all_gather``
    the size of the attention-TP all-gather group the wire emulates (1: none); ``timeout_s`` how
    long a two-process wire waits for its peer. ``sglang_path`` is where sglang is read from (a
    directory or a wheel for ``--impl sglang``; for the ``sglang`` transport, an unpacked tree
    whose imports resolve); None means the installed sglang. ``implementations`` maps 'reference'
    and 'sglang' to modules with ``add_auxiliary_output_to_pp_tensors`` and
    ``pop_auxiliary_output_from_pp_tensors`` already loaded (the in-process wires load them
    otherwise; the two-process wires always load them in the receiver).

    Raises ``ValueError`` for an unknown transport and
    :class:`~ppaux.replay.distributed.WireSetupError` where a two-process wire cannot work here
    (CUDA with one GPU, sglang's runtime not importable).
    """
    import torch

    name = str(getattr(transport, "value", transport))
    if name not in TRANSPORTS:
        raise ValueError(f"{name}: not a transport (one of {', '.join(TRANSPORTS)})")
    where = device if isinstance(device, torch.device) else torch.device(device)
    if name in ("none", "wire"):
        from ppaux.replay.local_wires import EmulatedWire, NoWire

        if name == "none":
            return NoWire(implementations, sglang_path=sglang_path)
        return EmulatedWire(implementations, sglang_path=sglang_path, all_gather_size=all_gather)
    if name == "torch-distributed":
        from ppaux.replay.distributed import DistributedWire

        found = (implementations or {}).get("sglang")
        # The receiver loads sglang's module itself: from the same place, or (when it was found
        # on this process's path) from the very file found here.
        source = (
            sglang_path
            if sglang_path is not None or found is None
            else found.__ppaux_source__.origin
        )
        return DistributedWire(
            where, timeout_s=timeout_s, all_gather_size=all_gather, sglang_source=source
        )
    from ppaux.replay.sglang_wire import SglangWire

    return SglangWire(
        where, timeout_s=timeout_s, all_gather_size=all_gather, sglang_path=sglang_path
    )
