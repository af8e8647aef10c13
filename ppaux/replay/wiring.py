"""The wire for a transport: :func:`open_wire`, over the four wires of :mod:`ppaux.replay`.

:mod:`ppaux.replay.protocol` says what every wire answers and imports none of them; this module
knows them all, and imports each only when it is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ppaux.replay.protocol import Wire
from ppaux.replay.vocabulary import Transport

if TYPE_CHECKING:
    import torch

__all__ = ["open_wire"]


def open_wire(
    transport: Transport | str,
    *,
    device: torch.device | str = "cpu",
    all_gather: int = 1,
    timeout_s: float = 60.0,
    sglang_path: str | None = None,
    implementations: Mapping[str, Any] | None = None,
) -> Wire:
    """The :class:`Wire` for ``transport``, a :class:`~ppaux.replay.vocabulary.Transport` or
    its value.

    ``device`` is where the sender's tensors are (a ``torch.device`` or its text); ``all_gather``
    the size of the attention-TP all-gather group the wire emulates (1: none); ``timeout_s`` how
    long a two-process wire waits for its peer. ``sglang_path`` is where sglang is read from (a
    directory or a wheel for ``--impl sglang``; for the ``sglang`` transport, an unpacked tree
    whose imports resolve); None means the installed sglang. ``implementations`` maps 'reference'
    and 'sglang' to modules with ``add_auxiliary_output_to_pp_tensors`` and
    ``pop_auxiliary_output_from_pp_tensors`` already loaded (the in-process wires load them
    otherwise; the two-process wires always load them in the receiver).

    Raises ``ValueError`` for an unknown transport and
    :class:`~ppaux.replay.protocol.WireSetupError` where a two-process wire cannot work here
    (CUDA with one GPU, sglang's runtime not importable).
    """
    import torch

    try:
        name = Transport(transport)
    except ValueError:
        known = ", ".join(t.value for t in Transport)
        raise ValueError(f"{transport}: not a transport (one of {known})") from None
    where = device if isinstance(device, torch.device) else torch.device(device)
    if name in (Transport.NONE, Transport.WIRE):
        from ppaux.replay.local_wires import EmulatedWire, NoWire

        if name is Transport.NONE:
            return NoWire(implementations, sglang_path=sglang_path)
        return EmulatedWire(implementations, sglang_path=sglang_path, all_gather_size=all_gather)
    if name is Transport.TORCH_DISTRIBUTED:
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
