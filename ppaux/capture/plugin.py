"""The sglang plugin entry point of ppaux capture (entry-point group ``sglang.srt.plugins``).

sglang (0.5.15 and later) calls every general plugin's entry point with no arguments from
``sglang.srt.plugins.load_plugins()``, early in each of its processes (the launcher, every
scheduler, the detokenizer), and then applies the hooks the plugins registered with
``HookRegistry``. ``SGLANG_PLUGINS=ppaux_capture,...`` restricts which plugins load.

Importing this module costs nothing: it does not import torch or :mod:`ppaux.capture.hooks`
(:func:`register_plugin_hooks` imports them when the plugin is enabled).
Besides add and pop, the plugin hooks the checkpoints of the output path
(:mod:`ppaux.capture.checkpoints`); a hop this sglang lacks is skipped.
:func:`register` does nothing unless ``PPAUX_CAPTURE_DIR`` is set, and it never raises into
sglang: a bad setting or an sglang without the PP auxiliary transport is logged and ignored.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ppaux.sglang import ADD, POP, TRANSPORT_MODULE

if TYPE_CHECKING:
    from ppaux.capture.settings import CaptureConfig

__all__ = ["register", "register_plugin_hooks"]

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
    if register_plugin_hooks(config):
        logger.info(
            "ppaux capture: capturing failing PP auxiliary transport calls into %s (when=%s%s)",
            config.directory,
            config.when,
            ", strict" if config.strict else "",
        )


def register_plugin_hooks(config: CaptureConfig) -> bool:
    """Register the hooks with sglang's ``HookRegistry``.

    Called by :func:`register` inside sglang's ``load_plugins()``, which applies the hooks right
    after and carries them to by-name imports. A hop whose target this sglang does not have is
    skipped (and said so by ``ppaux capture status``). Returns False (and changes nothing but the
    settings) when :func:`ppaux.capture.install` already patched the functions.
    """
    from sglang.srt.plugins.hook_registry import (
        HookRegistry,
        HookType,
    )

    from ppaux.capture.hop_hooks import METHOD_HOOKS, hook_for
    from ppaux.capture.hops import hop_availability
    from ppaux.capture.state import STATE

    with STATE.lock:
        STATE.activate(config)
        if STATE.patched or STATE.plugin_hooks:
            return False
        # apply_hooks() imports the module right after this returns; importing it here first
        # lets the hooks match the functions' signatures (see hook_for).
        module = importlib.import_module(TRANSPORT_MODULE)
        for name in (ADD, POP):
            hook = hook_for(name, getattr(module, name, None))
            HookRegistry.register(f"{TRANSPORT_MODULE}.{name}", hook, HookType.AROUND)
        available = hop_availability(_sglang_package())
        STATE.skipped_hops = {
            hop: why for hop, why in available.items() if why is not None and hop in METHOD_HOOKS
        }
        for hop, (target, method_hook) in METHOD_HOOKS.items():
            if available.get(hop) is None:
                HookRegistry.register(target, method_hook, HookType.AROUND)
        STATE.plugin_hooks = True
        return True


def _sglang_package() -> Path | None:
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))
