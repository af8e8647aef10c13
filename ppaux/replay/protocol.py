"""One shape for the four transports: the :class:`Wire` protocol and what a wire answers.

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

    from ppaux.replay import open_wire  # ppaux.replay.wiring: the wire for a transport

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
:class:`~ppaux.replay.protocol.WireSetupError` for it. This module imports no wire and
not torch: :mod:`ppaux.replay.wiring` opens the wire for a transport.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ppaux.errors import PpauxError

if TYPE_CHECKING:
    from ppaux.replay.roundtrip import Reception
    from ppaux.replay.wire import WireError, WireStats

__all__ = [
    "Delivery",
    "Exchange",
    "Wire",
    "WireFailure",
    "WireSetupError",
]


class WireSetupError(PpauxError, RuntimeError):
    """The two-process group could not be set up (no second GPU, the receiver did not start).

    Defined here, without torch, so that a caller can catch it without importing a wire."""


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

    #: The transport's name, a :class:`~ppaux.replay.vocabulary.Transport` value.
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
