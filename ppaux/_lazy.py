"""Lazy re-exports for package faces, so that importing a package imports none of its modules.

A package's ``__init__`` names what it offers and the module each name lives in; the module is
imported on first use of the name. This keeps ``import ppaux`` (and every subpackage) torch-free
and cheap, and lets a subpackage declare its public API without import cycles.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
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
