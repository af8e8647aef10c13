"""Next steps for a failure of MPI, not of NCCL: a program that sets its ranks up over MPI
(TensorRT-LLM's ``[TensorRT-LLM][ERROR] ... MPI error`` from its ``mpiUtils.cpp``, an MPI call's
error ``MPI_ERR_...``, Open MPI's ``MPI_ERRORS_ARE_FATAL`` block). NCCL's and torch's settings
(``NCCL_DEBUG``, ``TORCH_NCCL_*``) say nothing of it: the MPI job's launch, its world and the
MPI library every rank loaded do. The steps are data: fixed words and commands, no operand
from the log."""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.kinds import COMMUNICATION, COMMUNICATION_INIT, kind_of
from ppaux.triage.openmpi import MPI_ERROR
from ppaux.triage.quotedvalues import unquoted_values
from ppaux.triage.records import Failure
from ppaux.triage.stepdata import Step

__all__ = ["mpi_failure", "mpi_steps"]

#: An MPI error in an exception's own words: TensorRT-LLM's check of an MPI call, an MPI error
#: class, Open MPI's fatal handler.
_MPI_WORDS = lazy(
    r"\bMPI error\b|\bMPI_ERR_[A-Z_]{2,40}\b|\bMPI_ERRORS_ARE_FATAL\b|/mpiUtils\.cpp:\d"
)


def mpi_failure(root: Failure) -> bool:
    """Whether ``root``'s exception is an MPI call's error (Open MPI's own report, or a
    communication failure whose message's first 2,000 characters say MPI's words, not in a
    value it quotes)."""
    if root.exception == MPI_ERROR:
        return True
    if root.exception is None or kind_of(root) not in (COMMUNICATION, COMMUNICATION_INIT):
        return False  # a failure of memory whose text names MPI's handler is memory's
    return _MPI_WORDS.search(unquoted_values(root.message[:2000])) is not None


def mpi_steps() -> list[Step]:
    """What an MPI failure's next run needs: the same MPI on every rank, a world that fits,
    MPI's own diagnostics; none of NCCL's settings."""
    return [
        Step(
            None,
            "every node",
            "a failure of MPI, not of NCCL: the job's ranks are MPI's (mpirun, or a launcher "
            "over it); NCCL's settings say nothing of it",
        ),
        Step(
            None,
            "every node",
            "every rank must load the same MPI library (the one the program was built "
            "against), and the world (mpirun -n) must be the size the program expects:",
        ),
        Step(("mpirun", "--version"), "every node"),
        Step(("ompi_info", "--parsable", "--all"), "every node", "Open MPI's build and settings"),
        Step(
            None,
            "every node",
            "run the job again under mpirun with '--mca btl_base_verbose 100' (Open MPI) to "
            "see the transport each rank chose; in a container, give it enough shared memory "
            "(--shm-size or --ipc=host) and the network devices the MPI transport uses",
        ),
    ]
