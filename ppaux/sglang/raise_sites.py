"""Where sglang's transport raises each of its nine messages, and where the scheduler calls add
and pop, per release: facts read from the release wheels (the tests marked ``wheels`` check
every line against them). The error pages say them; nothing here imports the rest of ppaux.
"""

from __future__ import annotations

__all__ = ["RAISE_RELEASES", "RELEASE_LINES", "SCHEDULER_CALLS"]

#: The releases whose transport raises the nine messages, oldest first.
RAISE_RELEASES = ("0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")

#: The line of each message's ``raise`` in ``sglang/srt/sampling/sampling_observer_pp.py``: one
#: layout in 0.5.19, another (two import lines fewer) from 0.5.20 to 0.5.23.
RELEASE_LINES: dict[str, dict[str, int]] = {
    "0.5.19": {
        "add-unsupported": 42,
        "add-empty": 48,
        "add-bad-name": 52,
        "add-not-tensor": 54,
        "add-duplicate": 57,
        "pop-no-observer": 73,
        "pop-unsupported": 75,
        "pop-non-tensor": 79,
        "pop-not-reconstructed": 83,
    },
    **{
        release: {
            "add-unsupported": 40,
            "add-empty": 46,
            "add-bad-name": 50,
            "add-not-tensor": 52,
            "add-duplicate": 55,
            "pop-no-observer": 71,
            "pop-unsupported": 73,
            "pop-non-tensor": 77,
            "pop-not-reconstructed": 81,
        }
        for release in RAISE_RELEASES[1:]
    },
}

#: Where the scheduler calls add and pop in ``sglang/srt/managers/scheduler_pp_mixin.py``, per
#: release: the calling method and the line of the call (the frame above the raise in a
#: traceback).
SCHEDULER_CALLS: dict[str, dict[str, tuple[str, int]]] = {
    "0.5.19": {"add": ("_pp_prepare_tensor_dict", 1041), "pop": ("_pp_prep_batch_result", 1168)},
    "0.5.20": {"add": ("_pp_prepare_tensor_dict", 799), "pop": ("_pp_prep_batch_result", 923)},
    "0.5.21": {"add": ("_pp_prepare_tensor_dict", 930), "pop": ("_pp_prep_batch_result", 1074)},
    "0.5.22": {"add": ("_pp_prepare_tensor_dict", 845), "pop": ("_pp_prep_batch_result", 989)},
    "0.5.23": {"add": ("_pp_prepare_tensor_dict", 848), "pop": ("_pp_prep_batch_result", 991)},
}
