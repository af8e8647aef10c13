"""Recording the failing dict inside a running sglang: the settings read from the
environment, the hooks around sglang's add and pop (installed by :func:`install` or by the
sglang plugin in :mod:`.plugin`), the writer, and the capture directory (:mod:`.store`).
"""

from ppaux._lazy import lazy_exports

_EXPORTS = {
    "ENV_DIR": "hooks",
    "install": "hooks",
    "uninstall": "hooks",
    "CaptureConfig": "hooks",
    "CaptureStats": "hooks",
    "config_from_env": "hooks",
    "active_config": "hooks",
    "stats": "hooks",
    "capture_original": "hooks",
    "parse_size": "hooks",
    "list_captures": "store",
    "status_report": "store",
    "list_report": "store",
    "plugin_state": "store",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
