"""NCCL's warnings that a CUDA call it made failed: a failure of that process on its own GPU
(memory it could not get, a CUDA fault), never what it saw of the network.

- ``include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'``, ``Cuda failure 1 'invalid
  argument'``, ``enqueue.cc:1085 NCCL WARN Cuda failure 'an illegal memory access was
  encountered'``: the CUDA call and its error, NCCL's place before the words;
- ``include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes``: the allocation that
  failed, the same failure's next line (NCCL writes both), never a second one.

NCCL returns ``ncclUnhandledCudaError`` for these, which torch reports as ``unhandled cuda
error``; the process's name is NCCL's own prefix (``<host>:<pid>:<thread> [<device>]``).
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.lineformat import LogLine
from ppaux.triage.longnumbers import number_said
from ppaux.triage.records import Failure

__all__ = ["NCCL_CUDA_TYPE", "cuda_calloc", "cuda_failure", "last_error", "nccl_error_name"]

#: What such a record is called: NCCL's own name for the error it returns.
NCCL_CUDA_TYPE = "ncclUnhandledCudaError"

#: The CUDA errors NCCL cannot go on after (its check of a CUDA call warns 'Cuda failure' and
#: returns ``ncclUnhandledCudaError``): the host's set-up (a driver older than the runtime, no
#: usable device, a driver stub, forward compatibility on a GPU without it, a device ordinal
#: past the devices, devices another process holds, a system whose fabric manager has not
#: initialised it, peer access the topology does not allow, CUDA's unknown error), memory it
#: could not get, an argument CUDA refused, a kernel's fault or time-out, and the GPU's ECC.
_FATAL_CUDA = (
    r"CUDA driver version is insufficient|no CUDA-capable device|CUDA driver is a stub library|"
    r"forward compatibility was attempted|system has unsupported display driver|"
    r"invalid device ordinal|all CUDA-capable devices are busy or unavailable|"
    r"system not yet initialized|peer access is not supported|unknown error|"
    r"out of memory|invalid argument|an illegal memory access|an illegal address|"
    r"unspecified launch failure|misaligned address|device-side assert|"
    r"the launch timed out and was terminated|uncorrectable ECC error"
)
#: NCCL's warning of a failed CUDA call, after NCCL's place in its source or its device's
#: ``[N]`` (where NCCL writes it), never the words inside a sentence about it.
_CUDA_FAILURE = lazy(
    r"(?:(?P<place>[\w./-]{1,200}\.(?:cc|cu|h):\d+)|\[\d{1,6}\]) NCCL WARN Cuda failure"
    rf"(?: \d{{1,4}})? '(?P<message>(?:{_FATAL_CUDA})[^']{{0,200}})'"
)
_CALLOC = lazy(r"NCCL WARN Failed to CUDA (?:calloc|malloc|host alloc) \d{1,20} bytes")


def cuda_failure(text: str) -> str | None:
    """What NCCL's warning of a failed CUDA call in ``text`` says, as triage shows it
    ("Cuda failure 'out of memory' (NCCL's include/alloc.h:178)"), or None for another line."""
    found = _CUDA_FAILURE.search(text) if "NCCL WARN Cuda failure" in text else None
    if found is None:
        return None
    place = found.group("place")
    if place:
        file, _, number = place.rpartition(":")
        place = f"{file}:{number_said(number, 6)}"
    said = f"Cuda failure '{found.group('message')}'"
    return said + (f" (NCCL's {place})" if place else "")


def cuda_calloc(text: str) -> str | None:
    """NCCL's ``Failed to CUDA calloc N bytes`` in ``text`` ('Failed to CUDA calloc N bytes'),
    or None for another line."""
    found = _CALLOC.search(text) if "NCCL WARN Failed to CUDA" in text else None
    return None if found is None else found.group(0).removeprefix("NCCL WARN ")


#: NCCL's name of its error (``ncclUnhandledCudaError``, ``ncclSystemError``), which torch's
#: ``NCCL error in: ..., unhandled cuda error`` message gives on its next line.
_NCCL_NAME = lazy(r"^nccl[A-Z]\w{0,40}Error$")
#: Lines within which NCCL's name follows the record: the next line, or the next record of a
#: pretty-printed JSON export, which spends up to eight lines on each.
_NEAR = 8


def nccl_error_name(previous: Failure | None, number: int, stream: str | None, name: str) -> bool:
    """Whether an exception line ``name: ...`` at line ``number`` of ``stream`` is NCCL's name
    of the error the one-line record ``previous`` (the line before it, of the same stream)
    reports (within :data:`_NEAR` lines): the next line of that error's message, never a
    failure of its own."""
    return (
        previous is not None
        and _NCCL_NAME.match(name) is not None
        and previous.stream == stream
        and 0 < number - previous.line <= _NEAR
        and "NCCL" in previous.message
    )


#: The CUDA error torch gives after ``Last error:`` on the lines below NCCL's record
#: (``Cuda failure 'out of memory'``, ``Cuda failure 1 'invalid argument'``).
_LAST_ERROR = lazy(r"^\s*(?P<said>Cuda failure(?: \d{1,4})? '[^'\n]{1,200}')")


def last_error(previous: Failure | None, line: LogLine, text: str) -> bool:
    """Whether ``text``, of ``line``, is the CUDA error torch names
    after ``Last error:`` below the one-line NCCL record ``previous`` (within :data:`_NEAR`
    lines): the rest of that record's message, which it then holds."""
    found = _LAST_ERROR.match(text)
    if (
        found is None
        or previous is None
        or (previous.stream, previous.ranks) != (line.stream, line.ranks or None)
        or not 0 < line.number - previous.line <= _NEAR
        or "NCCL" not in previous.message
        or found.group("said") in previous.message
    ):
        return False
    previous.message = f"{previous.message}\nLast error: {found.group('said')}"
    return True
