"""``install()`` / ``uninstall()``: the capture without sglang's plugin framework.

:func:`install` wraps sglang's add and pop in the transport module and in every module that
imported them by name, and the checkpoint methods of the scheduler mixin and the PP group class;
a module that is not loaded yet is patched the moment it is imported (an import hook on
``sys.meta_path``, :class:`_ModuleWatcher`). :func:`uninstall` puts every original back.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ppaux.capture.hop_hooks import METHOD_HOOKS, hook_for, method_wrapper, wrap
from ppaux.capture.hops import HOP_TARGETS
from ppaux.capture.markers import WRAPPER_MARK
from ppaux.capture.settings import DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES, CaptureConfig
from ppaux.capture.state import STATE
from ppaux.capture.writer import note_failure
from ppaux.sglang import ADD, PARALLEL_STATE_MODULE, POP, SCHEDULER_MODULE, TRANSPORT_MODULE

__all__ = ["active_config", "install", "stats", "uninstall"]

#: The modules install() patches, each as soon as it is loaded.
_MODULES = (TRANSPORT_MODULE, SCHEDULER_MODULE, PARALLEL_STATE_MODULE)


def active_config() -> CaptureConfig | None:
    """The configuration in force in this process, or None when capture is off."""
    return STATE.config


def stats() -> Any:
    """Counts of captures written, skipped by the bounds and failed, in this process."""
    return STATE.stats()


def install(
    directory: str | os.PathLike[str],
    *,
    when: str = "error",
    max_files: int = DEFAULT_MAX_FILES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    sample_every: int = 1,
    strict: bool = False,
) -> None:
    """Capture failing (or, with ``when='always'``, sampled) transport calls into ``directory``.

    Patches ``add_auxiliary_output_to_pp_tensors`` and ``pop_auxiliary_output_from_pp_tensors``
    in ``sglang.srt.sampling.sampling_observer_pp`` and in every loaded module that imported
    them by name; when that module is not loaded yet, patches it as soon as it is imported.
    The checkpoints (:mod:`ppaux.capture.checkpoints`) are put on the scheduler mixin's and
    the PP group's methods the same way. Calling it again changes the settings and keeps the
    patches. When the sglang plugin already routes the functions through ppaux, only the
    settings change. ``strict`` makes the last stage raise at the first dirty hop. Raises
    :class:`ValueError` for an invalid setting.
    """
    if not os.fspath(directory):
        raise ValueError("the capture directory must not be empty")  # Path('') would be '.'
    config = CaptureConfig(Path(directory), when, max_files, max_bytes, sample_every, strict)
    with STATE.lock:
        STATE.activate(config)
        if STATE.plugin_hooks:
            return
        for name in _MODULES:
            module = sys.modules.get(name)
            if module is not None:
                _patch(module)
        if STATE.watcher is None:
            # Also when the module is loaded: a reload or a fresh import must be patched again.
            STATE.watcher = _ModuleWatcher()
            sys.meta_path.insert(0, STATE.watcher)


def uninstall() -> None:
    """Stop capturing: restore the original functions everywhere install() put wrappers.

    Hooks registered through sglang's plugin framework cannot be removed; they become
    pass-through calls.
    """
    with STATE.lock:
        STATE.activate(None)
        if STATE.watcher is not None:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(STATE.watcher)
            STATE.watcher = None
        for target, (owner, original, wrapper) in list(STATE.patched.items()):
            name = target.rsplit(".", 1)[1]
            if owner.__dict__.get(name) is wrapper:
                setattr(owner, name, original)
            if isinstance(owner, types.ModuleType):
                _rebind(wrapper, original, owner)
        STATE.patched.clear()
        STATE.skipped_hops.clear()


def _patch(module: types.ModuleType) -> None:
    """Wrap what ppaux hooks in ``module`` and rebind every by-name import of the functions."""
    if module.__name__ == TRANSPORT_MODULE:
        for name in (ADD, POP):
            original = module.__dict__.get(name)
            if original is None or not callable(original) or getattr(original, WRAPPER_MARK, False):
                continue
            wrapper = wrap(original, hook_for(name, original))
            setattr(module, name, wrapper)
            _rebind(original, wrapper, module)
            STATE.patched[f"{TRANSPORT_MODULE}.{name}"] = (module, original, wrapper)
        return
    for hop, (target, _hook) in METHOD_HOOKS.items():
        owner_path, name = target.rsplit(".", 1)
        module_name, class_name = owner_path.rsplit(".", 1)
        if module_name != module.__name__:
            continue
        owner = module.__dict__.get(class_name)
        original = owner.__dict__.get(name) if isinstance(owner, type) else None
        if owner is None or original is None or not callable(original):
            STATE.skipped_hops[hop] = f"this sglang has no {HOP_TARGETS[hop]}"
            continue
        if getattr(original, WRAPPER_MARK, False):
            continue
        wrapper = method_wrapper(hop, original)
        setattr(owner, name, wrapper)
        STATE.patched[target] = (owner, original, wrapper)
        STATE.skipped_hops.pop(hop, None)


def _rebind(old: object, new: object, source: types.ModuleType) -> int:
    """Point every module global that is ``old`` at ``new`` (the ``from X import f`` copies)."""
    count = 0
    for module in list(sys.modules.values()):
        if module is source or not isinstance(module, types.ModuleType):
            continue
        try:
            names = [k for k, v in vars(module).items() if v is old]
        except Exception:  # a module object with an unusual __dict__
            continue
        for name in names:
            try:
                setattr(module, name, new)
                count += 1
            except Exception:
                pass
    return count


class _ModuleWatcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the loader of the transport module so that it gets patched
    the moment it has been executed, before any other module can import from it."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """Return the transport module's spec from the next finder, with a patching loader."""
        if fullname not in _MODULES:
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:
                return None  # let the import system report it as it would without us
            if spec is None:
                continue
            if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _PatchingLoader(spec.loader)
            return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    """Delegates to the real loader, then patches the freshly executed module."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        """The real loader's module object (None: the default)."""
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: types.ModuleType) -> None:
        """Run the module as the real loader does, then patch it if capture is still on."""
        self._loader.exec_module(module)
        try:
            with STATE.lock:
                if STATE.config is not None and not STATE.plugin_hooks:
                    _patch(module)
        except Exception as error:  # an import of sglang must never fail because of ppaux
            note_failure(f"could not patch {module.__name__}", error)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
