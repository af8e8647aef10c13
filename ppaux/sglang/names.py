"""sglang's own names that ppaux uses: the keys of its pipeline-parallel messages, the module,
files and functions of its auxiliary-output transport, and its plugin entry-point group (with
ppaux's entry in it and the capture directory ppaux's pages use). The
nine messages its transport raises are :mod:`ppaux.sglang.messages`'s; recognising one in pasted
text is :mod:`ppaux.sglang.message_search`'s.

Facts from sglang 0.5.19 - 0.5.23 (``srt/sampling/sampling_observer_pp.py`` and
``srt/managers/scheduler_pp_mixin.py``; the plugin group from ``srt/plugins/__init__.py``,
0.5.15 and later). Torch-free, and it imports nothing.
"""

from __future__ import annotations

__all__ = [
    "ADD",
    "CAPTURE_DIR",
    "ENTRY_POINT",
    "GROUP_CLASS",
    "HOOK_REGISTRY_FILE",
    "MSG_TYPE_KEY",
    "OUTPUT_MSG_TYPE",
    "OUTPUT_PREFIX",
    "PARALLEL_STATE_MODULE",
    "PLUGIN_GROUP",
    "PLUGIN_NAME",
    "POP",
    "PROXY_KEYS",
    "SCHEDULER_CLASS",
    "SCHEDULER_FILE",
    "SCHEDULER_MODULE",
    "TRANSPORT_FILE",
    "TRANSPORT_MODULE",
    "TRANSPORT_PATH",
    "aux_name",
]

#: The transport's sender (last stage) and receiver (first stage) functions.
ADD = "add_auxiliary_output_to_pp_tensors"
POP = "pop_auxiliary_output_from_pp_tensors"

#: The module that holds the PP auxiliary transport (0.5.19 and later).
TRANSPORT_MODULE = "sglang.srt.sampling.sampling_observer_pp"
#: Its file, relative to the ``sglang`` package directory.
TRANSPORT_FILE = "srt/sampling/sampling_observer_pp.py"
#: Its file inside a wheel or site-packages (``python/sglang/...`` in git).
TRANSPORT_PATH = f"sglang/{TRANSPORT_FILE}"

#: The scheduler mixin that calls add (last stage) and pop (first stage).
SCHEDULER_MODULE = "sglang.srt.managers.scheduler_pp_mixin"
#: Its file, relative to the ``sglang`` package directory.
SCHEDULER_FILE = "srt/managers/scheduler_pp_mixin.py"

#: The entry-point group of sglang's general plugins (``load_plugins()``, 0.5.15 and later).
PLUGIN_GROUP = "sglang.srt.plugins"
#: ppaux's entry in that group: its name, which is what ``SGLANG_PLUGINS`` lists, and the
#: entry point declared in ppaux's metadata (pyproject.toml).
PLUGIN_NAME = "ppaux_capture"
ENTRY_POINT = "ppaux.capture.plugin:register"
#: The capture directory that ppaux's pages, error pages and suggested commands use (the plugin
#: itself captures only where ``PPAUX_CAPTURE_DIR`` or ``install()`` says).
CAPTURE_DIR = "/var/tmp/ppaux"
#: The file of the plugins' ``HookRegistry``, relative to the ``sglang`` package directory.
HOOK_REGISTRY_FILE = "srt/plugins/hook_registry.py"

#: Every auxiliary tensor travels under this prefix plus its name.
OUTPUT_PREFIX = "__sampling_observer_output__."

#: Key that the last stage adds before sending a message to the first stage.
MSG_TYPE_KEY = "__msg_type__"

#: Value of ``MSG_TYPE_KEY`` on the output message, the only one rank 0 pops.
OUTPUT_MSG_TYPE = "output"

#: Keys of the separate "proxy" message (hidden states between stages); aux keys never belong there.
PROXY_KEYS = ("hidden_states", "residual")


def aux_name(key: object) -> str | None:
    """Return the auxiliary name that pop would see for ``key``, or None if pop ignores it."""
    if isinstance(key, str) and key.startswith(OUTPUT_PREFIX):
        return key[len(OUTPUT_PREFIX) :]
    return None


# The pipeline-parallel output path, hop by hop (sglang 0.5.19 - 0.5.23): the last stage's
# scheduler prepares the output message and sends it through its PP group; rank 0 receives it.

#: The scheduler mixin's class, which builds, sends and receives PP messages.
SCHEDULER_CLASS = "SchedulerPPMixin"
#: The module and class of the PP group's wire (``send_tensor_dict`` / ``recv_tensor_dict``).
PARALLEL_STATE_MODULE = "sglang.srt.distributed.parallel_state"
GROUP_CLASS = "GroupCoordinator"
