"""Recording the failing dict inside a running sglang.

Modules, by what they hold: :mod:`.settings` (the ``PPAUX_CAPTURE_*`` settings and every limit),
:mod:`.state` (the one state object of the process), :mod:`.hooks` (the hooks around sglang's
add and pop, and the plugin's registration), :mod:`.hop_hooks` (the hooks on the scheduler's
and the PP group's methods, and every fixed-signature wrapper), :mod:`.markers` (the marks on
ppaux's own hooks and wrappers), :mod:`.hops` (the hops of sglang's output path),
:mod:`.checkpoints` (the looks at each hop, the trail), :mod:`.culprit` (the code between the
last clean and the first dirty hop), :mod:`.patching` (:func:`install` / :func:`uninstall`),
:mod:`.plugin` (the sglang plugin), :mod:`.writer` (writing one capture), :mod:`.host`
(versions, host, ranks), :mod:`.directory` (the capture directory: layout, bounds, what it
holds), :mod:`.environment` (would the plugin capture in this environment) and :mod:`.reports`
(the reports of ``ppaux capture``).
"""

from typing import TYPE_CHECKING

from ppaux._lazy import lazy_exports

if TYPE_CHECKING:
    from ppaux.capture.directory import CaptureDirError, list_captures
    from ppaux.capture.environment import plugin_state
    from ppaux.capture.hooks import capture_original
    from ppaux.capture.patching import active_config, install, stats, uninstall
    from ppaux.capture.reports import list_report, status_report
    from ppaux.capture.settings import ENV_DIR, CaptureConfig, config_from_env, parse_size
    from ppaux.capture.state import CaptureStats

#: Each public name and the module that holds it, imported on first use.
_EXPORTS = {
    "ENV_DIR": "settings",
    "CaptureConfig": "settings",
    "config_from_env": "settings",
    "parse_size": "settings",
    "install": "patching",
    "uninstall": "patching",
    "active_config": "patching",
    "stats": "patching",
    "CaptureStats": "state",
    "capture_original": "hooks",
    "CaptureDirError": "directory",
    "list_captures": "directory",
    "status_report": "reports",
    "list_report": "reports",
    "plugin_state": "environment",
}

__all__ = [
    "ENV_DIR",
    "CaptureConfig",
    "CaptureDirError",
    "CaptureStats",
    "active_config",
    "capture_original",
    "config_from_env",
    "install",
    "list_captures",
    "list_report",
    "parse_size",
    "plugin_state",
    "stats",
    "status_report",
    "uninstall",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
