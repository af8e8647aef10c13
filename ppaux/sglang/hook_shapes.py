"""The parameters of the sglang functions that ppaux's capture wraps, release by release: each
hop's target on the pipeline-parallel output path (:data:`HOP_SHAPES`) and the transport's add
and pop (:data:`TRANSPORT_SHAPES`). A shape is the parameter list, in order, as (name, default)
pairs, :data:`REQUIRED` for a parameter without a default.

Facts from sglang 0.5.18 - 0.5.23 (``srt/managers/scheduler_pp_mixin.py``,
``srt/distributed/parallel_state.py``, ``srt/sampling/sampling_observer_pp.py``). Torch-free,
and it imports nothing outside the standard library but :mod:`ppaux.sglang.names`.
"""

from __future__ import annotations

import inspect

from ppaux.sglang.names import ADD, POP

__all__ = ["HOP_SHAPES", "REQUIRED", "TRANSPORT_SHAPES", "Shape"]

#: The default of a parameter that has none (``inspect.Parameter.empty``).
REQUIRED = inspect.Parameter.empty

#: A parameter list: (name, default) pairs in order.
Shape = tuple[tuple[str, object], ...]

#: hop -> the parameter lists its target has in sglang's releases, read from the 0.5.18 -
#: 0.5.23 wheels: the scheduler's ``_pp_prepare_tensor_dict`` ("prepare"), its
#: ``_pp_send_dict_to_next_stage`` ("send_dict"), and the PP group's ``send_tensor_dict``
#: ("send") and ``recv_tensor_dict`` ("recv").
HOP_SHAPES: dict[str, tuple[Shape, ...]] = {
    "prepare": ((("self", REQUIRED), ("result", REQUIRED), ("batch", REQUIRED)),),
    "send_dict": (
        (  # 0.5.18 - 0.5.20
            ("self", REQUIRED),
            ("tensor_dict", REQUIRED),
            ("async_send", True),
            ("msg_type", "default"),
        ),
        (  # 0.5.21 - 0.5.23
            ("self", REQUIRED),
            ("tensor_dict", REQUIRED),
            ("async_send", True),
            ("msg_type", "default"),
            ("ready_event", None),
        ),
    ),
    "send": (
        (
            ("self", REQUIRED),
            ("tensor_dict", REQUIRED),
            ("dst", None),
            ("all_gather_group", None),
            ("async_send", False),
        ),
    ),
    "recv": ((("self", REQUIRED), ("src", None), ("all_gather_group", None)),),
}


#: The parameters of sglang's add and pop in 0.5.19 - 0.5.23.
TRANSPORT_SHAPES: dict[str, Shape] = {
    ADD: (("tensors", REQUIRED), ("output", REQUIRED)),
    POP: (("tensors", REQUIRED), ("observer", REQUIRED)),
}
