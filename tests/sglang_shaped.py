"""A module tree shaped like sglang's, written into a test's directory, for the capture tests.

It has the layout and names that ppaux capture depends on, and nothing else:

* ``sglang/__init__.py`` (empty: the real one imports a score of heavy packages) and
  ``sglang/_version.py``;
* ``sglang/srt/sampling/sampling_observer_pp.py``: the two transport functions, with sglang's
  names and parameters, running ppaux's reference transport (:mod:`ppaux.replay.transport`), which
  behaves as sglang 0.5.19 - 0.5.23 do;
* ``sglang/srt/managers/scheduler_pp_mixin.py``: imports both functions by name, as sglang's
  scheduler mixin does, and calls them from a sending and a receiving function;
* ``sglang/srt/plugins/``: a small plugin framework with the interface of sglang's
  (``load_plugins()``, ``HookRegistry.register(target, hook, HookType.AROUND)``), written for
  these tests; it loads the ``sglang.srt.plugins`` entry points, honours ``SGLANG_PLUGINS`` and
  carries patches to by-name imports. The real framework is exercised by the wheel tier.

``srt``, ``srt/sampling`` and ``srt/managers`` have no ``__init__.py``, as in sglang.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

__all__ = ["build", "forget"]

_VERSION = "__version__ = version = '{version}'\n__version_tuple__ = version_tuple = ({tuple})\n"

_TRANSPORT = '''
"""Stand-in for sglang's PP auxiliary transport: sglang's names, ppaux's reference behaviour."""

from typing import Any, MutableMapping, Optional

from ppaux.replay import transport as _reference

_OUTPUT_PREFIX = "__sampling_observer_output__."


def add_auxiliary_output_to_pp_tensors(
    tensors: MutableMapping[str, Any], output: Optional[Any]
) -> None:
    return _reference.add_auxiliary_output_to_pp_tensors(tensors, output)


def pop_auxiliary_output_from_pp_tensors(
    tensors: MutableMapping[str, Any], observer: Optional[Any]
) -> Any:
    return _reference.pop_auxiliary_output_from_pp_tensors(tensors, observer)
'''

_MIXIN = '''
"""Stand-in for sglang's scheduler_pp_mixin: imports the transport functions by name."""

from sglang.srt.sampling.sampling_observer_pp import (
    add_auxiliary_output_to_pp_tensors,
    pop_auxiliary_output_from_pp_tensors,
)


def prepare_output_message(tensor_dict, auxiliary_output):
    """The last stage: put the auxiliary output into the message it sends to rank 0."""
    add_auxiliary_output_to_pp_tensors(tensor_dict, auxiliary_output)
    return tensor_dict


def receive_output_message(tensors, observer):
    """Rank 0: take the auxiliary output out of the message it received."""
    return pop_auxiliary_output_from_pp_tensors(tensors, observer)
'''

_HOOK_REGISTRY = '''
"""A small hook registry with the interface of sglang's (sglang.srt.plugins.hook_registry)."""

import enum
import functools
import pkgutil
import sys
import types


class HookType(enum.Enum):
    BEFORE = "before"
    AFTER = "after"
    AROUND = "around"
    REPLACE = "replace"


class HookRegistry:
    _hooks = {}
    _patched = set()

    @classmethod
    def register(cls, target, hook, hook_type=HookType.AFTER):
        cls._hooks.setdefault(target, []).append((hook_type, hook))

    @classmethod
    def apply_hooks(cls):
        for target, hooks in cls._hooks.items():
            if target in cls._patched:
                continue
            owner_name, attribute = target.rsplit(".", 1)
            owner = pkgutil.resolve_name(owner_name)
            original = getattr(owner, attribute)
            wrapped = original
            for hook_type, hook in hooks:
                if hook_type is not HookType.AROUND:
                    raise NotImplementedError("this stand-in applies AROUND hooks only")
                wrapped = _around(wrapped, hook)
            setattr(owner, attribute, wrapped)
            for module in list(sys.modules.values()):
                if module is owner or not isinstance(module, types.ModuleType):
                    continue
                for name, value in list(vars(module).items()):
                    if value is original:
                        setattr(module, name, wrapped)
            cls._patched.add(target)


def _around(original, hook):
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        return hook(original, *args, **kwargs)

    return wrapper
'''

_PLUGINS = '''
"""A small plugin loader with the interface of sglang's (sglang.srt.plugins)."""

import os
from importlib.metadata import entry_points

from sglang.srt.plugins.hook_registry import HookRegistry

_loaded = False


def load_plugins():
    global _loaded
    if _loaded:
        return
    _loaded = True
    allowed = {x.strip() for x in os.environ.get("SGLANG_PLUGINS", "").split(",") if x.strip()}
    for entry in entry_points(group="sglang.srt.plugins"):
        if allowed and entry.name not in allowed:
            continue
        entry.load()()
    HookRegistry.apply_hooks()
'''


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def build(root: Path, *, version: str = "0.5.23", framework: bool = True) -> Path:
    """Write the tree under ``root`` (put ``root`` on ``sys.path`` to import it); return root."""
    package = root / "sglang"
    _write(package / "__init__.py", "")
    parts = ", ".join(version.split("."))
    _write(package / "_version.py", _VERSION.format(version=version, tuple=parts))
    _write(package / "srt" / "sampling" / "sampling_observer_pp.py", _TRANSPORT)
    _write(package / "srt" / "managers" / "scheduler_pp_mixin.py", _MIXIN)
    if framework:
        _write(package / "srt" / "plugins" / "__init__.py", _PLUGINS)
        _write(package / "srt" / "plugins" / "hook_registry.py", _HOOK_REGISTRY)
    return root


def forget() -> None:
    """Drop every ``sglang`` module from ``sys.modules`` (the tree lives in a temporary dir)."""
    for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
        del sys.modules[name]
