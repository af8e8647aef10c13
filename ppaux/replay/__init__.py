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

from ppaux._lazy import attach_stub

# The face is listed once, in __init__.pyi; its modules are imported on first use of a name.
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
