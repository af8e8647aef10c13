"""Names that sglang's pipeline-parallel messages use, kept free of any torch import.

Facts from sglang 0.5.19 - 0.5.23 (``srt/sampling/sampling_observer_pp.py`` and
``srt/managers/scheduler_pp_mixin.py``).
"""

__all__ = ["OUTPUT_PREFIX", "MSG_TYPE_KEY", "OUTPUT_MSG_TYPE", "PROXY_KEYS", "aux_name"]

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
