"""The kind of failure a pasted line or traceback shows (what ``ppaux explain`` says of one that
is none of sglang's nine messages), read as ``triage`` reads the same text: a traceback's chain,
else the last exception line with its frames, else a record triage reads without a traceback.
The kinds themselves are :mod:`ppaux.triage.kinds`'s.
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.kinds import kind_of, root_of_group
from ppaux.triage.records import Failure

__all__ = ["kind_of_text"]

#: What stands before a pasted line's own text: torch's rank (``[rank1]: ``), a logger's or
#: sglang's prefix (``... ] ``), a launcher's process (``(VllmWorkerProcess pid=236) ``,
#: ``(raylet) ``).
#: The type a C++ record's message is read as when it names none of its own.
_CPP_ERROR = "C++ exception"
_PREFIXED = lazy(
    r"^(?:\[rank\d{1,9}\]:\s?|.{0,200}?\] |(?:\([\w.:-]{1,80}(?: pid=\d{1,9})?\) ){1,3})"
)
#: A C++ record's message: after ``what():``, the NCCL watchdog's words or its work's async
#: exception (on a line of its own, or flattened into one with the rest of the abort).
_CPP_MESSAGE = lazy(
    r"(?:what\(\):|watchdog thread terminated with exception:|raised the following async "
    r"exception:)\s+(?P<message>.{1,2000})"
)
#: torch's rank prefix wherever it stands in a line's first characters (behind a launcher's
#: or a collector's own): what follows it is the rank's own text.
_TORCH_RANK = lazy(r"\[rank\d{1,9}\]:\s?")


def _traced(lines: list[str]) -> Failure | None:
    """The failure the first traceback among ``lines`` is, read as ``triage`` reads one (its
    chain; an exception group's root sub-exception, :func:`root_of_group`), or None when no
    line begins one or it is cut before its exception line."""
    from ppaux.triage.groups import GROUP_HEADER
    from ppaux.triage.lineformat import LogLine
    from ppaux.triage.tracebacks import TracebackBuilder

    start = next((k for k, line in enumerate(lines) if "Traceback (m" in line), None)
    if start is None:
        return None
    failure = Failure("", 0, None, None, None, None, None, 0)
    builder = TracebackBuilder(failure, group=GROUP_HEADER in lines[start])
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if not builder.feed(LogLine(number, line, None, None, None, None), False):
            break
    traced = builder.finish(root_of_group)
    return None if traced is None or traced.cut or traced.exception is None else traced


def kind_of_text(text: str) -> str | None:
    """The kind of the failure a pasted line or traceback shows, or None when no line of it is
    shaped as an exception line: a traceback's as ``triage`` reads it (its chain, an exception
    group's root sub-exception), else its last exception line's, with its frames."""
    from ppaux.triage.crashlines import cublas_gemm, cuda_tail, host_allocation, xid_record
    from ppaux.triage.curesult import curesult_error as curesult
    from ppaux.triage.groups import unmargined
    from ppaux.triage.records import Frame
    from ppaux.triage.tracelines import is_frame, raised
    from ppaux.triage.turbomind import turbomind_error

    lines = text.splitlines()[-2000:]
    traced = _traced(lines)
    if traced is not None:
        return kind_of(traced)
    frames: list[Frame] = []
    found: tuple[str, str] | None = None
    cpp: str | None = None
    for line in lines:
        ranked = _TORCH_RANK.search(line, 0, 200)
        body = line[ranked.end() :] if ranked is not None else _PREFIXED.sub("", line, count=1)
        inside = unmargined(body)  # a line of an exception group's traceback
        if inside is not None:
            body = inside[1]
        if (record := _CPP_MESSAGE.search(body) or _CPP_MESSAGE.search(line)) is not None:
            cpp = record.group("message")
        elif "Watchdog caught collective" in body:
            cpp = body
        if is_frame(body):
            function = body.rsplit(", in ", 1)[-1].strip() if ", in " in body else ""
            frames.append(Frame("", 0, function))
            continue
        shaped = raised(body) or raised(line)
        if shaped is not None:
            found = shaped
    if found is None and cpp is not None:  # a C++ abort or the watchdog's record, no Python line
        found = (_CPP_ERROR, cpp)
    # a record triage reads without a traceback: a host allocation that failed, DeepSpeed's
    # record of a cuBLAS GEMM that failed, the driver's record of a GPU fault, the tail of a
    # CUDA error whose first line is not there, lmdeploy TurboMind's one-line record of a CUDA
    # call that failed, a native library's CUDA driver API call that failed (its CUresult)
    for reader in (host_allocation, cublas_gemm, xid_record, cuda_tail, turbomind_error, curesult):
        found = found or next((r for line in lines if (r := reader(line)) is not None), None)
    if found is None:
        return None
    failure = Failure("", 0, None, None, None, None, None, 0, found[0], found[1], frames=frames)
    return kind_of(failure)
