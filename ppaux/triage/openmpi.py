"""Open MPI's own report of an error, a block of ``***`` lines a rank writes as it aborts::

    *** An error occurred in MPI_Init_thread
    *** on a NULL communicator
    *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,
    ***    and potentially your MPI job)

The first line names the MPI call that failed: ``MPI_Init`` or ``MPI_Init_thread`` is the
communication's set-up (a ``communication-init`` failure of that rank), any other call one in
flight. A later ``*** MPI_ERR_TRUNCATE: message truncated`` line of the block says which error.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["MPI_ERROR", "MPI_MARKERS", "mpi_block", "mpi_detail"]

#: What the failure is called: the words of no Python type, Open MPI's own.
MPI_ERROR = "Open MPI error"
#: What makes a line worth reading for this module.
MPI_MARKERS: tuple[bytes, ...] = (b"An error occurred in MPI_", b"*** MPI_ERR_")

_BLOCK = lazy(r"^\s{0,8}\*{3} (?P<said>An error occurred in MPI_\w{1,40})\s*$")
_DETAIL = lazy(r"^\s{0,8}\*{3} (?P<said>MPI_ERR_[A-Z_]{1,40}: .{0,200}?)\s*$")


def mpi_block(text: str) -> tuple[str, str] | None:
    """(:data:`MPI_ERROR`, its words) for the first line of Open MPI's error block, else None."""
    found = _BLOCK.match(text)
    return None if found is None else (MPI_ERROR, found.group("said"))


def mpi_detail(text: str) -> str | None:
    """The error a later line of the block names (``MPI_ERR_TRUNCATE: message truncated``),
    else None."""
    found = _DETAIL.match(text)
    return None if found is None else found.group("said")
