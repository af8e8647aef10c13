"""Regular expressions compiled on first use, so that a process pays only for those it runs.

Triage reads a log's lines through some three hundred module-level patterns, most of which a
given log never reaches (a kind of record it does not hold); compiling them all at import cost
about half of the command's start-up. :func:`lazy` returns an object that stands for
``re.compile(pattern, flags)``: its ``pattern`` is the source as given (other patterns are
built from it without compiling it); any other attribute (``search``, ``match``, ``sub``,
``groupindex``, ...) compiles it once and is the compiled pattern's own, kept on the object
so that later uses cost what the compiled pattern's do.
"""

from __future__ import annotations

import re
from typing import Any, cast, overload

__all__ = ["lazy"]

#: The compiled pattern's attributes kept on the object once compiled (a lookup of one of them
#: then finds it in the object's own dict, with no further call).
_KEPT = (
    "findall",
    "finditer",
    "flags",
    "fullmatch",
    "groupindex",
    "groups",
    "match",
    "scanner",
    "search",
    "split",
    "sub",
    "subn",
)


class _Lazy:
    """``re.compile(pattern, flags)``, compiled at its first use."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self.pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_flags":
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self._flags)
        for kept in _KEPT:
            self.__dict__[kept] = getattr(compiled, kept)
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r}, {self._flags})"


@overload
def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]: ...
@overload
def lazy(pattern: bytes, flags: int = 0) -> re.Pattern[bytes]: ...
def lazy(pattern: str | bytes, flags: int = 0) -> re.Pattern[str] | re.Pattern[bytes]:
    """What ``re.compile(pattern, flags)`` returns, compiled only when first used."""
    return cast("re.Pattern[str] | re.Pattern[bytes]", _Lazy(pattern, flags))
