"""An NCCL error whose own frames say neither set-up nor a collective in flight, read as a
communicator's set-up where its process was starting up.

A worker's NCCL error is often printed as a few frames of the library's wrapper (pynccl's
``NCCL_CHECK``) and the error: nothing in it says whether the communicator was being made or a
collective ran. What the same process printed next to it says: its worker's wrapper naming
the method it ran (vLLM's ``Error executing method init_device``), or a traceback of the same
process through the engine's or the worker's start-up (``from_engine_args``, ``init_device``,
``init_distributed_environment``). Such an error is then of the ``communication-init`` kind
(:mod:`ppaux.triage.kinds`), with the set-up steps.

"The same process" is the same stream and ranks; and a traceback whose header Ray folded
from several workers of the same class (``[repeated 14x across cluster]``), which stands for
each of those workers' own. Only records within :data:`_NEAR_LINES` lines and
:data:`_NEAR_RECORDS` records of the error count: a process's start-up is what it printed
around the error, not anything earlier or later in the log. A traceback after the error
counts only as the same error carried up (cut before its exception, or ending in the same
error): one that ends in an error of its own is a later failure (a restart that failed
again), whatever it ran. A worker's method of its own decides alone: ``execute_model``
says the error came in flight, whatever the lines around it.
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.kinds import COMMUNICATION, kind_of
from ppaux.triage.records import Failure

__all__ = ["in_flight", "mark_startup", "near", "starting"]

#: Methods a worker runs while the engine starts (vLLM's and sglang's workers).
_START_METHODS = frozenset(
    {"init_device", "init_worker", "init_distributed_environment", "init_process_group"}
)
#: Functions of an engine's or a worker's start-up, and of a communicator's set-up.
_START_FUNCTIONS = frozenset(
    {
        *_START_METHODS,
        "from_engine_args",
        "_init_engine",
        "_init_executor",
        "_init_workers_ray",
        "init_worker_distributed_environment",
        "init_distributed_environment",
        "ensure_model_parallel_initialized",
        "initialize_model_parallel",
        "init_model_parallel_group",
        "init_torch_distributed",
        "ncclCommInitRank",
    }
)
#: Collectives and point-to-point calls: a frame of one says the error came in flight.
_COLLECTIVES = lazy(
    r"^_?(?:all_reduce|all_gather|all_gather_into_tensor|reduce_scatter|reduce_scatter_tensor|"
    r"broadcast|send|recv|isend|irecv|barrier|all_to_all|all_to_all_single|gather|scatter|"
    r"reduce|batch_isend_irecv|send_object_list|recv_object_list|\w*_p2p\w*)$"
)
#: An NCCL error's own words (not a watchdog's timeout or a closed socket).
_NCCL_ERROR = lazy(r"NCCL error|\bnccl\w{0,40}Error\b")
#: How far from the error a record of the same process is read.
_NEAR_LINES = 40
_NEAR_RECORDS = 8


def near(said_at: int, line: int) -> bool:
    """Whether a record at line ``said_at`` stands near enough above ``line`` to be read as
    what the same process was doing there (at most :data:`_NEAR_LINES` lines above it)."""
    return 0 <= line - said_at <= _NEAR_LINES


def starting(failure: Failure) -> bool:
    """True when ``failure``'s worker method or frames are of a start-up."""
    if failure.method is not None and failure.method.rsplit(".", 1)[-1] in _START_METHODS:
        return True
    return any(frame.function in _START_FUNCTIONS for frame in failure.frames)


#: A loop's or a step's function: a frame of one says the process was past its start-up,
#: running (``train_step``, ``event_loop_normal``, ``forward``).
_RUNNING = lazy(r"^_?(?:\w+_)?(?:step|loop|forward)(?:_\w+)?$")


def in_flight(failure: Failure) -> bool:
    """True when a frame of ``failure`` says its process was running, past its start-up: a
    collective or a point-to-point call, a loop or a step."""
    return any(
        _COLLECTIVES.match(frame.function) or _RUNNING.match(frame.function)
        for frame in failure.frames
    )


def _undecided(failure: Failure) -> bool:
    """An NCCL error read as in flight only for want of a word of set-up: no frame of a
    collective says it was in flight."""
    if failure.exception is None or kind_of(failure) != COMMUNICATION:
        return False
    if _NCCL_ERROR.search(f"{failure.exception}: {failure.message[:2000]}") is None:
        return False
    return not any(_COLLECTIVES.match(frame.function) for frame in failure.frames)


def _worker_class(stream: str | None) -> str | None:
    """The class of a launcher's worker a stream names (``RayWorkerWrapper`` of
    ``RayWorkerWrapper pid=335, ip=10.0.0.2``), or None."""
    if stream is None or " pid=" not in stream:
        return None
    return stream.split(" pid=", 1)[0]


def _same_process(failure: Failure, other: Failure) -> bool:
    if (other.stream, other.ranks) == (failure.stream, failure.ranks):
        return True
    named = _worker_class(failure.stream)
    return other.folded and named is not None and named == _worker_class(other.stream)


def _carried(failure: Failure, later: Failure) -> bool:
    """Whether ``later``, a traceback after ``failure``'s, may be the same error carried up
    through the process's start-up (the engine's traceback of the worker's error): cut before
    its exception, or ending in (or chained from) the same error. One that ends in an error
    of its own (a restart's ``EADDRINUSE``) is another failure, not this one's start-up."""
    if later.exception is None:
        return True
    said = failure.message.split("\n", 1)[0].strip()
    errors = [(later.exception, later.message), *later.chain]
    return any(said and said in message[:4000] for _, message in errors)


def _starts(failure: Failure, other: Failure) -> bool:
    """Whether ``other``, a record of one log, says ``failure``'s process was starting up: of
    the same process, near it, through a start-up; before it, or after it as the same error
    carried up (:func:`_carried`)."""
    return (
        other is not failure
        and abs(other.line - failure.line) <= _NEAR_LINES
        and _same_process(failure, other)
        and starting(other)
        and (other.line < failure.line or _carried(failure, other))
    )


def mark_startup(failures: list[Failure]) -> None:
    """Mark each undecided NCCL error of one log's ``failures`` whose process was starting up
    (:attr:`~ppaux.triage.records.Failure.startup`): its own worker's method says so, or,
    where it names none, a record of the same process near it does (:func:`_starts`). A
    method of its own that is no start-up's (``execute_model``) says it came in flight."""
    ordered = sorted(failures, key=lambda f: f.line)
    for index, failure in enumerate(ordered):
        if not _undecided(failure):
            continue
        if failure.method is not None:
            failure.startup = starting(failure)
            continue
        near = ordered[max(0, index - _NEAR_RECORDS) : index + _NEAR_RECORDS + 1]
        failure.startup = starting(failure) or any(_starts(failure, o) for o in near)
