"""Names that sglang's pipeline-parallel messages use, kept free of any torch import.

Facts from sglang 0.5.19 - 0.5.23 (``srt/sampling/sampling_observer_pp.py`` and
``srt/managers/scheduler_pp_mixin.py``).
"""

__all__ = [
    "OUTPUT_PREFIX",
    "MSG_TYPE_KEY",
    "OUTPUT_MSG_TYPE",
    "PROXY_KEYS",
    "aux_name",
    "TRANSPORT_MODULE",
    "ADD_FUNCTION",
    "POP_FUNCTION",
    "SCHEDULER_PP_MODULE",
    "SCHEDULER_PP_CLASS",
    "PARALLEL_STATE_MODULE",
    "GROUP_CLASS",
]

#: Every auxiliary tensor travels under this prefix plus its name.
OUTPUT_PREFIX = "__sampling_observer_output__."

#: Key that the last stage adds before sending a message to the first stage.
MSG_TYPE_KEY = "__msg_type__"

#: Value of ``MSG_TYPE_KEY`` on the output message, the only one rank 0 pops.
OUTPUT_MSG_TYPE = "output"

#: Keys of the separate "proxy" message (hidden states between stages); aux keys never belong there.
PROXY_KEYS = ("hidden_states", "residual")


def aux_name(key: object) -> "str | None":
    """Return the auxiliary name that pop would see for ``key``, or None if pop ignores it."""
    if isinstance(key, str) and key.startswith(OUTPUT_PREFIX):
        return key[len(OUTPUT_PREFIX):]
    return None


# The pipeline-parallel output path, hop by hop (sglang 0.5.19 - 0.5.23): the last stage's
# scheduler prepares the output message and sends it through its PP group; rank 0 receives it.

#: The module of the PP auxiliary transport (add and pop).
TRANSPORT_MODULE = "sglang.srt.sampling.sampling_observer_pp"
#: The last stage's add, called by ``_pp_prepare_tensor_dict``.
ADD_FUNCTION = "add_auxiliary_output_to_pp_tensors"
#: Rank 0's pop, called by ``_pp_prep_batch_result``.
POP_FUNCTION = "pop_auxiliary_output_from_pp_tensors"
#: The scheduler mixin that builds, sends and receives PP messages.
SCHEDULER_PP_MODULE = "sglang.srt.managers.scheduler_pp_mixin"
SCHEDULER_PP_CLASS = "SchedulerPPMixin"
#: The module and class of the PP group's wire (``send_tensor_dict`` / ``recv_tensor_dict``).
PARALLEL_STATE_MODULE = "sglang.srt.distributed.parallel_state"
GROUP_CLASS = "GroupCoordinator"
