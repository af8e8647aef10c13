"""Lazy re-exports for package faces, so that importing a package imports none of its modules.

A package's face is listed once, in the stub beside its ``__init__.py``: ``__init__.pyi`` holds
one ``from .module import name as name`` line per module (the form a type checker reads as a
re-export), and the ``__init__.py`` serves it with ``__getattr__, __dir__, __all__ =
attach_stub(__name__, __file__)``. Type checkers read the stub; at run time a module is imported
on first use of one of its names. This keeps ``import ppaux`` (and every subpackage) torch-free
and cheap, and lets a subpackage declare its public API without import cycles.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["attach_stub", "stub_exports"]

#: ``from MODULE import NAMES`` in a stub, NAMES on one line or in parentheses.
_IMPORT = re.compile(r"^from[ \t]+(\.?[\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)


def _lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a module ``__getattr__`` and ``__dir__`` serving ``exports`` (name -> module).

    ``module`` is relative to ``package`` (``"hooks"`` for ``ppaux.capture.hooks``).
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        # The lazy names and those the package defines itself (``__version__``, ...).
        return sorted(set(exports) | set(vars(sys.modules[package])))

    return __getattr__, __dir__


def stub_exports(stub: str) -> dict[str, str]:
    """Each name the stub text ``stub`` imports, and its module relative to the package
    (``from .hooks import install as install`` gives ``{"install": "hooks"}``)."""
    exports: dict[str, str] = {}
    for module, names in _IMPORT.findall(stub):
        for item in names.strip("()").split(","):
            words = item.split()
            if not words or words[0].startswith("#"):
                continue
            exports[words[-1]] = module.lstrip(".")
    return exports


def attach_stub(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of ``package`` from the names its
    ``__init__.pyi`` (beside ``init_file``) imports."""
    stub = init_file[: -len(".py")] + ".pyi"
    with open(stub, encoding="utf-8") as handle:
        exports = stub_exports(handle.read())
    getattr_, dir_ = _lazy_exports(package, exports)
    return getattr_, dir_, sorted(exports)
