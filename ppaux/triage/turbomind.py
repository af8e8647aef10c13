"""lmdeploy TurboMind's record of a CUDA call that failed, one line and no Python traceback
where the engine's C++ logs it (``[TM][ERROR] CUDA runtime error: out of memory
/opt/lmdeploy/src/turbomind/core/allocator.cc:42``): CUDA's words for the error, then the
source place of the call. The same words inside a Python exception's message (``RuntimeError:
[TM][ERROR] ...``) are that traceback's, not a record of their own.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["TURBOMIND_MARKER", "TURBOMIND_TYPE", "turbomind_error"]

#: What makes a line worth reading for this record (added to the scanner's markers).
TURBOMIND_MARKER = b"[TM][ERROR] CUDA runtime error: "
#: What such a record is called: the engine's own words, no Python type.
TURBOMIND_TYPE = "CUDA runtime error"
#: The record at the line's start (behind a logger's ``] `` at most), CUDA's words for the
#: error (``cudaGetErrorString``: lowercase words), then the call's place, which a paste may
#: cut.
_RECORD = lazy(
    r"(?:^\s{0,8}|(?<=\] ))\[TM\]\[ERROR\] CUDA runtime error: "
    r"(?P<error>[a-z][a-z0-9 ,'-]{0,120}?)(?: (?P<place>/\S{0,300}))?\s*$"
)


def turbomind_error(text: str) -> tuple[str, str] | None:
    """(type, message) of TurboMind's one-line CUDA error record in ``text`` as triage reads
    it, or None for another line (a sentence about it, a Python exception's message)."""
    found = _RECORD.search(text)
    if found is None:
        return None
    place = f" at {found['place']}" if found["place"] else ""
    return TURBOMIND_TYPE, f"{found['error']}{place} (lmdeploy TurboMind's CUDA call)"
