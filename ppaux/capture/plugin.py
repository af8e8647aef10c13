"""The sglang plugin entry point of ppaux capture (entry-point group ``sglang.srt.plugins``).

sglang (0.5.15 and later) calls every general plugin's entry point with no arguments from
``sglang.srt.plugins.load_plugins()``, early in each of its processes (the launcher, every
scheduler, the detokenizer), and then applies the hooks the plugins registered with
``HookRegistry``. ``SGLANG_PLUGINS=ppaux_capture,...`` restricts which plugins load.

Importing this module costs nothing: it does not import torch or :mod:`ppaux.capture.hooks`.
Besides add and pop, the plugin hooks the checkpoints of the output path
(:mod:`ppaux.capture.checkpoints`); a hop this sglang lacks is skipped.
:func:`register` does nothing unless ``PPAUX_CAPTURE_DIR`` is set, and it never raises into
sglang: a bad setting or an sglang without the PP auxiliary transport is logged and ignored.
"""

from __future__ import annotations

import logging
import os

from ppaux.sglang import TRANSPORT_MODULE

__all__ = ["register"]

logger = logging.getLogger("ppaux.capture")


def register() -> None:
    """sglang plugin entry point: wrap the PP transport functions when PPAUX_CAPTURE_DIR is set."""
    if not os.environ.get("PPAUX_CAPTURE_DIR", "").strip():
        return
    try:
        _register()
    except Exception as error:  # a plugin must never stop sglang from starting
        logger.warning("ppaux capture: not enabled: %s: %s", type(error).__name__, error)


def _register() -> None:
    import importlib.util

    from ppaux.capture import hooks as capture
    from ppaux.capture.settings import config_from_env

    try:
        config = config_from_env()
    except ValueError as error:
        logger.warning("ppaux capture: not enabled: %s", error)
        return
    if config is None:
        return
    # sglang before 0.5.19 has no auxiliary transport; a hook on a missing target would make
    # sglang log a traceback at start-up, so look first (the parents are already imported).
    if importlib.util.find_spec(TRANSPORT_MODULE) is None:
        logger.info("ppaux capture: not enabled: this sglang has no %s", TRANSPORT_MODULE)
        return
    if capture.register_plugin_hooks(config):
        logger.info(
            "ppaux capture: capturing failing PP auxiliary transport calls into %s (when=%s%s)",
            config.directory,
            config.when,
            ", strict" if config.strict else "",
        )
