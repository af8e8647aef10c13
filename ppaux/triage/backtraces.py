"""A native program's backtrace as glibc's ``backtrace_symbols`` writes it, the lines a C++
library's crash handler prints (``[16] /opt/lib/libplugin.so(_ZN3lib6Plugin7enqueueEv+0x3ea)
[0x7f1200cb48e0]``): the process crashed in native code, in the frames the lines name.

Only the nested names of a mangled symbol are read back (``_ZN3lib6Plugin7enqueueE...`` is
``lib::Plugin::enqueue``); a symbol of another shape is shown as written. torch's own C++
backtrace writes the same frames without their number, the readable name after the address
(``/opt/lib/libtorch_cuda.so(+0xe427c9) [0x7fd15b3007c9]
c10d::ProcessGroupNCCL::ncclCommWatchdog()``): read the same way.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["BACKTRACE_MARKERS", "backtrace_frame", "backtrace_said"]

#: What makes a line worth reading for this module (added to the scanner's markers): glibc's
#: frames, and torch's (a space before the address).
BACKTRACE_MARKERS = (b")[0x", b") [0x")

#: One frame: its number in brackets, the object's path, the symbol and offset in parentheses,
#: the address in brackets.
_FRAME = lazy(
    r"^\s*\[(?P<number>\d{1,4})\] (?P<object>/[^\s()]{1,1000})"
    r"\((?P<symbol>[^()\s]{0,2000})\)\[0x[0-9a-fA-F]{1,16}\]\s*$"
)
#: torch's frame: the object's path, the offset in parentheses, a space, the address, and the
#: readable name where torch found one.
_TORCH_FRAME = lazy(
    r"^\s*(?P<object>/[^\s()]{1,1000})\((?P<symbol>[^()\s]{0,2000})\) \[0x[0-9a-fA-F]{1,16}\]"
    r"(?: (?P<name>[^\s(]{1,1000})(?:\(\))?)?\s*$"
)
#: A mangled nested name's start, and one of its parts (its length, then its characters).
_NESTED = "_ZN"
_PART = lazy(r"(?:[rVKR]{0,3})(?P<length>\d{1,4})")
#: Parts of a nested name read at most.
_MAX_PARTS = 16


def _nested_name(symbol: str) -> str | None:
    """``lib::Plugin::enqueue`` for a mangled nested name (``_ZN3lib6Plugin7enqueueE...``),
    else None."""
    if not symbol.startswith(_NESTED):
        return None
    at, parts = len(_NESTED), list[str]()
    while at < len(symbol) and symbol[at] != "E" and len(parts) < _MAX_PARTS:
        part = _PART.match(symbol, at)
        if part is None:
            return None
        start = part.end()
        end = start + int(part.group("length"))
        if end > len(symbol) or end == start:
            return None
        parts.append(symbol[start:end])
        at = end
    return "::".join(parts) if len(parts) >= 2 else None


def backtrace_frame(text: str) -> tuple[str, str] | None:
    """(object's file, function: the symbol's readable name, or its offset in the object) of
    one ``backtrace_symbols`` line, or None for another line."""
    found = _FRAME.match(text)
    if found is None:
        torch = _TORCH_FRAME.match(text)
        if torch is None:
            return None
        named = torch["name"] or f"+{torch['symbol'].partition('+')[2]}"
        return torch["object"], named
    symbol = found.group("symbol")
    name, _, _ = symbol.partition("+")
    readable = _nested_name(name) or name or f"+{symbol.partition('+')[2]}"
    return found.group("object"), readable


def backtrace_said(function: str, file: str) -> str:
    """What a failure begun by a backtrace's first named frame says."""
    where = function if not function.startswith("+") else f"{file.rsplit('/', 1)[-1]}{function}"
    return (
        f"a native backtrace (a crash handler's frames) through {where}: the process crashed "
        "in native code; the signal or error it died of is not in this log"
    )
