"""The torch wing: the reference transport (sglang's add and pop, re-implemented), tensors
materialised from dumps, the four wires and :func:`replay_paths`, the job behind ``ppaux replay``.
Every module here imports torch when it is used.

Sending a tensor dict to rank 0 through any of the four transports (``none``, ``wire``,
``torch-distributed``, ``sglang``) goes through one :class:`Wire` protocol::

    from ppaux.replay import open_wire

    with open_wire("torch-distributed", device="cpu", timeout_s=30) as wire:
        delivery = wire.deliver(sent)  # sent: the last stage's dict, after its add
        if delivery.failure is not None:  # a WireFailure: side, error_type, message, key
            ...
        rank0 = delivery.received  # what rank 0 holds, in this process

``wire.exchange(sent, "reference" | "sglang")`` also runs rank 0's pop (and the way back) and
returns an :class:`Exchange`. :func:`load_implementation` gives the module whose ``add``/``pop``
run under an implementation's name ('reference', or sglang's own read from a path or wheel).
"""

from typing import TYPE_CHECKING

from ppaux._lazy import lazy_exports

if TYPE_CHECKING:
    from ppaux.replay.distributed import DistributedWire, WireSetupError
    from ppaux.replay.local_wires import EmulatedWire, NoWire, load_implementation
    from ppaux.replay.materialize import DeviceError, MaterializeError, Materializer, resolve_device
    from ppaux.replay.options import (
        MAX_TIMEOUT_S,
        REPLAY_LIMITS,
        Impl,
        ReplayConfigError,
        ReplayOptions,
        Sender,
        Transport,
        timeout_fault,
    )
    from ppaux.replay.protocol import TRANSPORTS, Delivery, Exchange, Wire, WireFailure
    from ppaux.replay.results import DumpResult, PayloadResult, RunResult
    from ppaux.replay.roundtrip import Reception
    from ppaux.replay.run import replay_paths
    from ppaux.replay.sglang_wire import SglangWire
    from ppaux.replay.transport import (
        add_auxiliary_output_to_pp_tensors,
        pop_auxiliary_output_from_pp_tensors,
    )
    from ppaux.replay.wire import WireStats
    from ppaux.replay.wiring import open_wire

#: Each public name and the module that holds it, imported on first use.
_EXPORTS = {
    "add_auxiliary_output_to_pp_tensors": "transport",
    "pop_auxiliary_output_from_pp_tensors": "transport",
    "replay_paths": "run",
    "ReplayOptions": "options",
    "ReplayConfigError": "options",
    "MAX_TIMEOUT_S": "options",
    "REPLAY_LIMITS": "options",
    "timeout_fault": "options",
    "Impl": "options",
    "Sender": "options",
    "Transport": "options",
    "DumpResult": "results",
    "PayloadResult": "results",
    "RunResult": "results",
    "TRANSPORTS": "protocol",
    "Delivery": "protocol",
    "Exchange": "protocol",
    "Wire": "protocol",
    "WireFailure": "protocol",
    "open_wire": "wiring",
    "EmulatedWire": "local_wires",
    "NoWire": "local_wires",
    "load_implementation": "local_wires",
    "DistributedWire": "distributed",
    "WireSetupError": "distributed",
    "SglangWire": "sglang_wire",
    "WireStats": "wire",
    "Reception": "roundtrip",
    "Materializer": "materialize",
    "MaterializeError": "materialize",
    "DeviceError": "materialize",
    "resolve_device": "materialize",
}

__all__ = [
    "MAX_TIMEOUT_S",
    "REPLAY_LIMITS",
    "TRANSPORTS",
    "Delivery",
    "DeviceError",
    "DistributedWire",
    "DumpResult",
    "EmulatedWire",
    "Exchange",
    "Impl",
    "MaterializeError",
    "Materializer",
    "NoWire",
    "PayloadResult",
    "Reception",
    "ReplayConfigError",
    "ReplayOptions",
    "RunResult",
    "Sender",
    "SglangWire",
    "Transport",
    "Wire",
    "WireFailure",
    "WireSetupError",
    "WireStats",
    "add_auxiliary_output_to_pp_tensors",
    "load_implementation",
    "open_wire",
    "pop_auxiliary_output_from_pp_tensors",
    "replay_paths",
    "resolve_device",
    "timeout_fault",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
