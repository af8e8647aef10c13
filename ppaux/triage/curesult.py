"""A native library's record of a CUDA driver API call that failed, one line and no Python
traceback: the ``CUresult`` the call returned, then the source place of the call (torch memory
saver, which sglang uses to release and resume its memory, writes ``[torch_memory_saver.cpp]
CUresult error  result=1 file=csrc/torch_memory_saver.cpp func=resume line=214``). The call
failed on this process's own GPU: what ended the process, not a peer's fault.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["CURESULT_MARKER", "CURESULT_TYPE", "curesult_error"]

#: What makes a line worth reading for this record (added to the scanner's markers).
CURESULT_MARKER = b"CUresult error"
#: What such a record is called: the library's own words, no Python type.
CURESULT_TYPE = "CUresult error"
#: The record at the line's start (behind the library's ``[file.cpp]`` tag or a logger's
#: ``] `` at most): the result's number, then the call's file, function and line.
_RECORD = lazy(
    r"(?:^\s{0,8}(?:\[[\w.+-]{1,100}\]\s{1,4})?|(?<=\] ))"
    r"CUresult error\s{1,4}result=(?P<code>\d{1,5})"
    r"(?:\s{1,4}file=(?P<file>\S{1,300}))?(?:\s{1,4}func=(?P<func>[\w:~]{1,200}))?"
    r"(?:\s{1,4}line=(?P<line>\d{1,7}))?"
)
#: The driver API's results by number (``CUresult`` in CUDA's ``cuda.h``), each with what it
#: means in a few words.
_RESULTS = {
    1: ("CUDA_ERROR_INVALID_VALUE", "an argument the driver refused"),
    2: ("CUDA_ERROR_OUT_OF_MEMORY", "out of memory on the device"),
    3: ("CUDA_ERROR_NOT_INITIALIZED", "the driver not initialised"),
    4: ("CUDA_ERROR_DEINITIALIZED", "the driver shutting down"),
    34: ("CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"),
    100: ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device"),
    101: ("CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
    201: ("CUDA_ERROR_INVALID_CONTEXT", "no valid context on the thread"),
    208: ("CUDA_ERROR_ALREADY_MAPPED", "memory already mapped"),
    209: ("CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for the device"),
    211: ("CUDA_ERROR_NOT_MAPPED", "memory not mapped"),
    400: ("CUDA_ERROR_INVALID_HANDLE", "an invalid handle"),
    700: ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access"),
    800: ("CUDA_ERROR_NOT_PERMITTED", "an operation not permitted"),
    801: ("CUDA_ERROR_NOT_SUPPORTED", "an operation the driver or device does not support"),
    803: (
        "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        "unsupported display driver / cuda driver combination",
    ),
    804: ("CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted"),
    999: ("CUDA_ERROR_UNKNOWN", "an unknown error"),
}


def curesult_error(text: str) -> tuple[str, str] | None:
    """(type, message) of a native library's one-line record of a CUDA driver API call that
    failed (``CUresult error result=N file=F func=X line=L``) as triage reads it, or None for
    another line (a sentence about such a record)."""
    found = _RECORD.search(text)
    if found is None:
        return None
    code = int(found["code"])
    name, said = _RESULTS.get(code, ("a result CUDA's cuda.h does not name", ""))
    where = f" in {found['func']}" if found["func"] else ""
    if found["file"]:
        where += f" ({found['file']}{':' + found['line'] if found['line'] else ''})"
    return CURESULT_TYPE, (
        f"CUDA error {code}, {name}{' (' + said + ')' if said else ''}: a CUDA driver API "
        f"call{where} failed on this process's GPU"
    )
