"""The two in-process wires: ``none`` (rank 0 gets the dict as sent) and ``wire`` (sglang's
``send_tensor_dict``/``recv_tensor_dict`` emulated, :func:`ppaux.replay.wire.transfer`).

Both follow the :class:`~ppaux.replay.protocol.Wire` protocol; rank 0's pop runs in this
process. This module imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppaux.replay.protocol import Delivery, Exchange, WireFailure
from ppaux.replay.wire import WireError, transfer

__all__ = ["EmulatedWire", "NoWire", "load_implementation"]


def load_implementation(name: str, sglang_source: str | None = None) -> Any:
    """The module whose ``add``/``pop`` run under ``name``: 'reference' (ppaux's transport) or
    'sglang' (sglang's own ``sampling_observer_pp``, read from ``sglang_source`` or the installed
    sglang; see :func:`ppaux.sglang_source.loader.load_transport_module`)."""
    if name == "reference":
        from ppaux.replay import transport

        return transport
    if name == "sglang":
        from ppaux.sglang_source import load_transport_module

        return load_transport_module(sglang_source)
    raise ValueError(f"{name}: not an implementation (reference or sglang)")


class NoWire:
    """No wire: rank 0 receives the very dict the last stage sent."""

    transport = "none"

    def __init__(
        self, implementations: Mapping[str, Any] | None = None, *, sglang_path: str | None = None
    ) -> None:
        self._modules: dict[str, Any] = dict(implementations or {})
        self._sglang_path = sglang_path

    def __enter__(self) -> NoWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to stop."""

    def _module(self, impl: str) -> Any:
        if impl not in self._modules:
            self._modules[impl] = load_implementation(impl, self._sglang_path)
        return self._modules[impl]

    def deliver(self, sent: dict[Any, Any]) -> Delivery:
        """The dict as sent: rank 0 gets the same dict object, untouched."""
        return Delivery(self.transport, sent)

    def exchange(self, sent: dict[Any, Any], impl: str) -> Exchange:
        """Pop with ``impl`` on what :meth:`deliver` gives rank 0, then add back."""
        from ppaux.replay.roundtrip import receive

        delivery = self.deliver(sent)
        if delivery.received is None:
            return Exchange(self.transport, None, None, delivery.stats, delivery.failure)
        module = self._module(impl)
        reception, readded = receive(
            delivery.received,
            pop=module.pop_auxiliary_output_from_pp_tensors,
            add=module.add_auxiliary_output_to_pp_tensors,
        )
        return Exchange(self.transport, reception, readded, delivery.stats)


class EmulatedWire(NoWire):
    """sglang's wire emulated in this process (see :mod:`ppaux.replay.wire`)."""

    transport = "wire"

    def __init__(
        self,
        implementations: Mapping[str, Any] | None = None,
        *,
        sglang_path: str | None = None,
        all_gather_size: int = 1,
    ) -> None:
        super().__init__(implementations, sglang_path=sglang_path)
        self.all_gather_size = all_gather_size

    def __enter__(self) -> EmulatedWire:
        return self

    def deliver(self, sent: dict[Any, Any]) -> Delivery:
        """What the emulated receiver rebuilds, or where the emulated wire fails."""
        try:
            received, stats = transfer(sent, all_gather_size=self.all_gather_size)
        except WireError as exc:
            return Delivery(self.transport, None, WireFailure.from_error(exc))
        return Delivery(self.transport, received, stats=stats)
