"""Records of one process's failure that are no failure of their own.

- A C++ abort (``terminate called after throwing an instance of 'c10::Error'`` and its
  ``what():`` line) right after the traceback of the same process, saying the same error: the
  process aborting on the error it raised (:func:`without_own_aborts`);
- a launcher's record of the root's own exit (:func:`launchers_own`): torchrun's
  ``ChildFailedError`` and its own traceback, its agent's ``failed (exitcode: 1) local_rank: 0``
  line, DeepSpeed's ``[...] exits with return code = 1``: the launcher saying that the process
  whose failure the log shows exited, not another process failing after it; an interactive
  shell's bare ``Aborted (core dumped)`` or ``Killed`` after the root, in its log: the end of
  the command whose output the log is.
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.crashes import NEAR_LINES
from ppaux.triage.deaths import death_of, exited, launcher_summary
from ppaux.triage.kerneldeaths import bare_death
from ppaux.triage.records import Event, Failure, process_of

__all__ = ["launchers_own", "without_own_aborts"]


def _first_line(failure: Failure) -> str:
    return failure.message.split("\n", 1)[0].strip()


def without_own_aborts(failures: list[Failure]) -> list[Failure]:
    """``failures`` less each C++ abort (``terminate called after throwing an instance of
    'c10::Error'`` and its ``what():`` line) that is the same process aborting on the error
    its own traceback just raised: the failure before it in its log, of the same stream and
    within :data:`~ppaux.triage.crashes.NEAR_LINES` lines of that traceback's end, says the
    same error (``RuntimeError: CUDA error: an illegal memory access ...``, then the abort's
    ``what():  CUDA error: an illegal memory access ...``). One failure, not two incidents."""
    dropped: set[int] = set()
    before: Failure | None = None
    for failure in sorted(failures, key=lambda f: f.order):
        if (
            failure.aborted
            and before is not None
            and not before.aborted
            and before.exception is not None
            and before.source == failure.source
            and before.stream == failure.stream
            and failure.line - _last_line(before) <= NEAR_LINES
            and _first_line(before) != ""
            and _first_line(before) == _first_line(failure)
        ):
            dropped.add(id(failure))
            continue
        before = failure
    return [f for f in failures if id(f) not in dropped]


def _last_line(failure: Failure) -> int:
    """The last line of ``failure``'s record that the log's numbers give (its last frame's
    place is the file's, not the log's): its first line and two per frame read."""
    return failure.line + 2 * len(failure.frames) + 1


#: A rank a record's stream names last (``local_rank 0``, ``rank 3``, ``sglang-1, rank 3``).
_RANK = lazy(r"(?:^|[\s,_])rank (?P<rank>\d{1,9})$")
#: The exit code a launcher's record of its child says (torchrun's agent: ``exited with code
#: 1``).
_CODE = lazy(r"exited with code (?P<code>-?\d{1,9})\b")


def _rank(name: str | None) -> str | None:
    found = None if name is None else _RANK.search(name)
    return None if found is None else found.group("rank")


def _exit_of(record: Failure | Event) -> tuple[str | None, bool] | None:
    """(the rank, whether it exited with a status of its own) of a launcher's record of one
    child's exit (torchrun's agent line, DeepSpeed's return code), or None for another
    record."""
    if isinstance(record, Event):
        how = death_of(record)
        if how is None or "DeepSpeed's launcher" not in how or "return code" in how:
            return None
        return _rank(record.who), exited(how)
    if record.summary != "agent":
        return None
    code = _CODE.search(record.said or "")
    return _rank(record.stream), code is not None and not code.group("code").startswith("-")


def launchers_own(root: Failure, own: list[Failure | Event], record: Failure | Event) -> bool:
    """Whether ``record``, which follows ``root`` (``own``: the records already read as
    root's own), is a launcher's record of ``root``'s own exit: torchrun's ``ChildFailedError``
    (or its own traceback cut before it), always the launcher's account of its children's
    failures; a shell's bare line of its child's death after ``root`` in ``root``'s log (the
    end of the command whose output it is); or the first record after ``root`` of one child
    exiting with a status of its own (no signal: an error the child reported, as ``root``'s
    exception is), in ``root``'s log, naming ``root``'s rank, or any rank where the log names
    none for ``root``."""
    if isinstance(record, Failure) and launcher_summary(record):
        return True
    if isinstance(record, Event) and record.kind == "death" and bare_death(record.text):
        return record.source == root.source and record.order > root.order  # the shell's
    said = _exit_of(record)
    if said is None or not said[1] or record.source != root.source:
        return False
    if root.exception is None and root.said is None:
        return False  # a traceback cut off: whose exit it was is not known
    if any(_exit_of(r) is not None for r in own):
        return False
    if root.order > record.order and root.summary != "root-cause":
        return False
    mine = _rank(root.ranks) or _rank(root.stream)
    if mine is None and process_of(root.stream) is None and not root.ranks:
        return True
    return mine is not None and mine == said[0]
