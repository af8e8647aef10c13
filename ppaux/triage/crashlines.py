"""Crash records that are one line and name their kind alone: a host allocation that failed,
a cuBLAS GEMM that failed (DeepSpeed's kernels' record),
the driver's Xid record of a GPU fault, and the tail of torch's CUDA error whose first line is
not in the log. Each reader gives the (type, message) triage reads the line as, or None.
"""

from __future__ import annotations

from collections.abc import Callable

from ppaux.patterns import lazy
from ppaux.triage.curesult import CURESULT_TYPE, curesult_error
from ppaux.triage.gloolines import GLOO_TYPE, gloo_failure
from ppaux.triage.records import Failure
from ppaux.triage.turbomind import TURBOMIND_TYPE, turbomind_error

__all__ = [
    "CUBLAS_TYPE",
    "CUDA_TAIL_MARKERS",
    "CUDA_WORDS_SAID",
    "HOST_ALLOC_TYPE",
    "KERNEL_ASSERT_TYPE",
    "ONE_LINE",
    "XID_TYPE",
    "cublas_gemm",
    "cuda_tail",
    "cuda_words_said",
    "host_allocation",
    "kernel_assert",
    "xid_record",
]

#: A host allocation that failed (one process's words, or two processes' written into each
#: other).
_HOST_ALLOC = lazy(r"memory allocation of (?:memory allocation of )?\d{1,40} bytes failed")
#: What such a record is called: the log shows no exception type for it.
HOST_ALLOC_TYPE = "memory allocation failed"
#: The driver's record of a GPU fault in the kernel's log, its code and what follows.
_XID = lazy(r"NVRM: Xid \((?P<device>[^()\n]{1,64})\): (?P<said>\d{1,4}\b.{0,400})")
XID_TYPE = "driver Xid"
#: The tail of torch's CUDA error (``Search for `cudaErrorIllegalAddress' in ...``), where the
#: head (``CUDA error: an illegal memory access ...``) is not in the log: the error's name.
_CUDA_SEARCH = lazy(r"Search for `(?P<error>cudaError\w{1,60})'")
#: torch's words after a CUDA error's first line (``CUDA kernel errors might be asynchronously
#: reported at some other API call ...``) and the place its C++ check names (``Exception raised
#: from c10_cuda_check_implementation at ...``), at a line's start: where the error's first line
#: is not in the log, a CUDA error whose name is not either.
_CUDA_WORDS = lazy(
    r"^\s{0,8}(?:CUDA kernel errors might be asynchronously reported at some other API call"
    r"|Exception raised from c10_cuda_check_implementation at )"
)
#: What such a record is called: the C++ error's own words, no Python type.
_CUDA_ERROR = "CUDA error"
#: What makes a line of that tail worth reading (the scanner's markers).
CUDA_TAIL_MARKERS = (
    b"Search for `cudaError",
    b"CUDA kernel errors might be asynchronously",
    b"Exception raised from c10_cuda_check_impl",
)
#: What triage says of torch's words after a CUDA error whose first line is not in the log.
CUDA_WORDS_SAID = (
    "a CUDA error torch's check of a CUDA call raised (the message's first line, which names "
    "the error, is not in this log)"
)
#: A CUDA kernel's assertion as the device prints it, one line per failing thread
#: (``../aten/src/ATen/native/cuda/Indexing.cu:1290: indexSelectLargeIndex: block: [949,0,0],
#: thread: [63,0,0] Assertion `srcIndex < srcSelectDimSize` failed.``; a web page may have
#: taken the backticks as a code span's). The function is as the compiler names it: a lambda's
#: ``operator()``, a template's arguments, the signature with ``[with T = float, ...]`` of older
#: releases; a kernel Triton compiled from Inductor's Python file is named by that file.
_KERNEL_ASSERT = lazy(
    r"(?:^|[\s/])(?P<file>[\w.+-]{1,100}\.(?:cuh?|py)):(?P<line>\d{1,9}): "
    r"(?P<function>[^\n]{1,600}?): "
    r"block: \[[\d, ]{1,40}\], thread: \[[\d, ]{1,40}\] Assertion `?(?P<check>.{1,400}?)`? failed\."
)
#: What such a record is called: the device's own words, no Python type (torch raises
#: ``RuntimeError: CUDA error: device-side assert triggered`` at its next CUDA call).
KERNEL_ASSERT_TYPE = "device-side assert"


#: DeepSpeed's GEMM wrapper of its transformer kernels (``csrc/transformer/cublas_wrappers.cu``)
#: when cuBLAS returns an error: ``!!!! kernel execution error. (m: 768, n: 4608, k: 3072,
#: error: 13)``, the GEMM's sizes and cuBLAS's status (the wrapper returns and the caller goes on
#: to its next CUDA call, which raises).
_CUBLAS_GEMM = lazy(
    r"!!!! kernel execution error\. \(m: (?P<m>\d{1,9}), n: (?P<n>\d{1,9}), k: (?P<k>\d{1,9}), "
    r"error: (?P<status>\d{1,4})\)"
)
#: cuBLAS's statuses by number (``cublasStatus_t`` in ``cublas_api.h``).
_CUBLAS_STATUS = {
    1: "CUBLAS_STATUS_NOT_INITIALIZED",
    3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE",
    8: "CUBLAS_STATUS_ARCH_MISMATCH",
    11: "CUBLAS_STATUS_MAPPING_ERROR",
    13: "CUBLAS_STATUS_EXECUTION_FAILED",
    14: "CUBLAS_STATUS_INTERNAL_ERROR",
    15: "CUBLAS_STATUS_NOT_SUPPORTED",
    16: "CUBLAS_STATUS_LICENSE_ERROR",
}
#: What such a record is called: the wrapper's own words, no Python type.
CUBLAS_TYPE = "cuBLAS error"


def cublas_gemm(text: str) -> tuple[str, str] | None:
    """(type, message) of DeepSpeed's record of a cuBLAS GEMM that failed (``!!!! kernel
    execution error. (m: M, n: N, k: K, error: S)``) as triage reads it, the status named as
    cuBLAS names it (``CUBLAS_STATUS_EXECUTION_FAILED``: the kernel failed on the device), or
    None for another line."""
    found = _CUBLAS_GEMM.search(text)
    if found is None:
        return None
    status = int(found.group("status"))
    name = _CUBLAS_STATUS.get(status, "a status cuBLAS does not name")
    return CUBLAS_TYPE, (
        f"a GEMM (m: {found.group('m')}, n: {found.group('n')}, k: {found.group('k')}) "
        f"failed with cuBLAS status {status}, {name}"
    )


def host_allocation(text: str) -> tuple[str, str] | None:
    """(type, message) of a host allocation's failure (``memory allocation of N bytes
    failed``) as triage reads it, or None for another line."""
    alloc = _HOST_ALLOC.search(text)
    if alloc is None:
        return None
    return HOST_ALLOC_TYPE, f"{alloc.group()} (the host ran out of memory)"


def xid_record(text: str) -> tuple[str, str] | None:
    """(type, message) of the driver's record of a GPU fault (``NVRM: Xid (PCI:...): 79,
    ...``) as triage reads it, or None for another line."""
    xid = _XID.search(text)
    if xid is None:
        return None
    return XID_TYPE, f"NVRM: Xid ({xid.group('device')}): {xid.group('said').rstrip()}"


def cuda_tail(text: str) -> tuple[str, str] | None:
    """(type, message) of the tail of torch's CUDA error (``Search for `cudaError...'``) as
    triage reads it where the error's first line is not in the log, or None for another line."""
    search = _CUDA_SEARCH.search(text)
    if search is None:
        if _CUDA_WORDS.match(text) is None:
            return None
        return _CUDA_ERROR, CUDA_WORDS_SAID
    return _CUDA_ERROR, f"{search.group('error')} (the message's first line is not in this log)"


#: Words of a sentence: two lowercase words, a space between. A record's prefix (``[rank0]: ``,
#: ``14: ``, ``host-a:240:240 [6] ``, a logger's ``ERROR ``) and what a collector puts after its
#: line (``\\n","stream":"stderr"``, a table's `` |``) hold none.
_SENTENCE_HEAD = lazy(r"[a-z]{2,} [a-z]{2,}[,:]? \S*$")
_SENTENCE_TAIL = lazy(r"[a-z]{2,} [a-z]{2,}")


def _quoted(text: str, start: int, end: int) -> bool:
    """True where a kernel's assertion stands inside a sentence (``We saw lines like ... failed.
    in the old release``, a bullet's code span followed by words): words of prose before its
    file or after its end. The device writes the record as a line of its own."""
    return (
        _SENTENCE_HEAD.search(text, 0, start + 1) is not None
        or _SENTENCE_TAIL.search(text, end) is not None
    )


def kernel_assert(text: str) -> tuple[str, str] | None:
    """(type, message) of a CUDA kernel's assertion as the device prints it (``Indexing.cu:1290:
    indexSelectLargeIndex: block: [...], thread: [...] Assertion `...` failed.``) as triage
    reads it, or None for another line."""
    found = _KERNEL_ASSERT.search(text)
    if found is None or _quoted(text, found.start(), found.end()):
        return None
    return KERNEL_ASSERT_TYPE, (
        f"{found.group('file')}:{found.group('line')}: {found.group('function')}: assertion "
        f"`{found.group('check')}` failed in a CUDA kernel (triggered on the device)"
    )


def cuda_words_said(failures: list[Failure]) -> list[Failure]:
    """``failures`` without those read from torch's words after a CUDA error alone
    (:data:`CUDA_WORDS_SAID`) where another failure of the log names a CUDA error: the words
    are that error's, wherever the log's order or envelope put them."""
    words = [f for f in failures if f.message == CUDA_WORDS_SAID]
    if not words or not any(
        "CUDA error" in f"{f.exception} {f.message}" for f in failures if f not in words
    ):
        return failures
    return [f for f in failures if f not in words]


#: Readers of one-line crash records, each with the type it gives: a record of the same type
#: just after one is the same failure's next record (the same fault, another thread's
#: assertion, the next GEMM of the step, the same allocation said again, the next process's
#: failed driver call).
ONE_LINE: tuple[tuple[Callable[[str], tuple[str, str] | None], str], ...] = (
    (xid_record, XID_TYPE),
    (kernel_assert, KERNEL_ASSERT_TYPE),
    (cublas_gemm, CUBLAS_TYPE),
    (host_allocation, HOST_ALLOC_TYPE),
    (turbomind_error, TURBOMIND_TYPE),
    (curesult_error, CURESULT_TYPE),
    (gloo_failure, GLOO_TYPE),
)
