"""The hops of sglang's PP output path that the checkpoints watch, and which exist in an sglang.

Names only (no torch, no state): the checkpoints (:mod:`ppaux.capture.checkpoints`) look at a
message at each hop; ``ppaux capture status`` (:mod:`ppaux.capture.environment`) says which hops the
installed sglang lacks, reading its files as text.
"""

from __future__ import annotations

from pathlib import Path

from ppaux.sglang import (
    ADD,
    GROUP_CLASS,
    PARALLEL_STATE_MODULE,
    POP,
    SCHEDULER_CLASS,
    SCHEDULER_MODULE,
    TRANSPORT_MODULE,
)

__all__ = ["HOPS", "HOP_TARGETS", "HOP_TEXT", "SENDER_HOPS", "hop_availability"]

#: The hops in the order a message passes them: five on the last stage, two on rank 0.
HOPS = ("add", "prepare", "send_dict", "send", "sent", "recv", "pop")
SENDER_HOPS = HOPS[:5]

_MIXIN = f"{SCHEDULER_MODULE}.{SCHEDULER_CLASS}"
_GROUP = f"{PARALLEL_STATE_MODULE}.{GROUP_CLASS}"
#: The function each hop watches, as a dotted path (the target of its hook).
HOP_TARGETS = {
    "add": f"{TRANSPORT_MODULE}.{ADD}",
    "prepare": f"{_MIXIN}._pp_prepare_tensor_dict",
    "send_dict": f"{_MIXIN}._pp_send_dict_to_next_stage",
    "send": f"{_GROUP}.send_tensor_dict",
    "sent": f"{_GROUP}.send_tensor_dict",
    "recv": f"{_GROUP}.recv_tensor_dict",
    "pop": f"{TRANSPORT_MODULE}.{POP}",
}
#: What a hop is, in words.
HOP_TEXT = {
    "add": f"{ADD} returned",
    "prepare": "_pp_prepare_tensor_dict returned",
    "send_dict": "_pp_send_dict_to_next_stage called",
    "send": "send_tensor_dict called",
    "sent": "send_tensor_dict returned",
    "recv": "recv_tensor_dict returned",
    "pop": f"{POP} called",
}


def hop_availability(package: Path | None) -> dict[str, str | None]:
    """For each hop, None when its target exists in the sglang at ``package`` (the ``sglang``
    directory), else why it is skipped. Reads the files as text; imports nothing."""
    out: dict[str, str | None] = {}
    for hop in HOPS:
        target = HOP_TARGETS[hop]
        parts = target.split(".")
        module_parts = parts[:-2] if parts[-2][:1].isupper() else parts[:-1]
        function = parts[-1]
        relative = "/".join(module_parts[1:]) + ".py"
        if package is None:
            out[hop] = "sglang is not installed"
            continue
        path = package / relative
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            out[hop] = f"this sglang has no {relative}"
            continue
        if f"def {function}(" not in text:
            out[hop] = f"this sglang has no {target}"
        else:
            out[hop] = None
    return out
