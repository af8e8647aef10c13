"""Recording the failing dict inside a running sglang.

Modules, by what they hold: :mod:`.settings` (the ``PPAUX_CAPTURE_*`` settings and every limit),
:mod:`.state` (the one state object of the process), :mod:`.hooks` (the hooks around sglang's
add and pop, and the plugin's registration), :mod:`.hop_hooks` (the hooks on the scheduler's
and the PP group's methods), :mod:`.hops` (the hops of sglang's output path),
:mod:`.checkpoints` (the looks at each hop, the trail), :mod:`.culprit` (the code between the
last clean and the first dirty hop), :mod:`.patching` (:func:`install` / :func:`uninstall`),
:mod:`.plugin` (the sglang plugin), :mod:`.writer` (writing one capture), :mod:`.host`
(versions, host, ranks), :mod:`.store` (the capture directory and the reports of ``ppaux
capture``).
"""

from ppaux._lazy import lazy_exports

_EXPORTS = {
    "ENV_DIR": "settings",
    "install": "patching",
    "uninstall": "patching",
    "CaptureConfig": "settings",
    "CaptureStats": "state",
    "config_from_env": "settings",
    "active_config": "patching",
    "stats": "patching",
    "capture_original": "hooks",
    "parse_size": "settings",
    "list_captures": "store",
    "status_report": "store",
    "list_report": "store",
    "plugin_state": "store",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
