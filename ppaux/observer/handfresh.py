"""Rank 0's side of a check in hand (``assert_pp_safe`` given the object) in a fresh interpreter.

sglang starts each scheduler as a new interpreter: its own copy of the observer's module and
objects, its own string hash seed (unless ``PYTHONHASHSEED`` is exported to all:
:mod:`.interpreter`), its own threads and locks. Where the object in hand can be carried there,
rank 0's side runs so here too: the object (an instance as it is before any step ran, or the
class or factory given) is pickled in the checking process (its class and functions by
reference: the caller's own code, in the caller's own process), and ``python`` started isolated
as the check's child is (``python -m ppaux.observer.hand_rank0_worker``, the caller's import path
and ``sys.argv``) unpickles it, makes rank 0's observer from it as the checking process would
(:func:`~ppaux.observer.target.observer_from`) and answers as the forked copy of
:mod:`.handapart` does. :func:`fresh` says why it cannot where it cannot (an object that does
not pickle, a class defined in ``__main__``, which another interpreter cannot import, an
interpreter that does not start or cannot load it); the check then forks rank 0's side
(:mod:`.handapart`) and its report says why (:mod:`.handnotes`).

``PPAUX_TEST_RANK0_FORK=1`` (:mod:`.fresh`) asks for the fork here too.

Imports nothing beyond the standard library at import.
"""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppaux.limits import Limits
    from ppaux.observer.handapart import HandRankZero
    from ppaux.observer.handguard import HandGuard
    from ppaux.observer.options import ObserverOptions
    from ppaux.observer.target import LoadedObserver

__all__ = ["MODULE", "carried", "fresh"]

#: The module rank 0's fresh process runs.
MODULE = "ppaux.observer.hand_rank0_worker"
#: Seconds a fresh process is given to import torch and load the object, before the check
#: forks rank 0's side instead (not the target's time: its ``timeout_s`` starts after).
_START_S = 120.0


def carried(
    loaded: LoadedObserver, timeout_s: float | None = None, notes: list[str] | None = None
) -> IO[bytes] | str:
    """The object of ``loaded`` as it crosses to a fresh interpreter (pickled into an unnamed
    file, which the fresh process reads through its descriptor: no copy in memory, no text
    encoding), or why it cannot. The pickling runs the
    object's own methods (:mod:`.handcopy`): within ``timeout_s`` seconds, else
    :class:`~ppaux.observer.handcopy.Stuck` is raised; attributes it changed on an instance
    are put back, and a note saying which is added to ``notes``."""
    import pickle
    import pickletools
    import tempfile

    from ppaux.observer.drive import message_line
    from ppaux.observer.handcopy import Stuck, changed_note, in_time, kept_as_given

    value = loaded.observer if loaded.given is None else loaded.given
    module = getattr(value if loaded.kind != "instance" else type(value), "__module__", None)
    main = "its class is defined in __main__, which another interpreter cannot import"
    if module == "__main__":
        return main if loaded.kind == "instance" else main.replace("its class", "it")
    step = f"pickling the {'instance' if loaded.kind == 'instance' else loaded.kind}"
    file = tempfile.TemporaryFile()
    try:
        _, changed = kept_as_given(
            lambda: in_time(
                lambda: pickle.dump(value, file, protocol=pickle.HIGHEST_PROTOCOL), timeout_s, step
            ),
            value,
        )
        file.seek(0)
        mains = any(arg == "__main__" for _, arg, _ in pickletools.genops(file))
    except Stuck:
        file.close()  # the thread left waiting may still write: into a file nobody reads
        raise
    except Exception as exc:  # the object's own pickling refused
        file.close()
        return f"it cannot be pickled ({type(exc).__name__}: {message_line(exc)})"[:500]
    if changed and notes is not None:
        notes.append(changed_note(changed, "pickling"))
    if mains:
        file.close()
        return "it refers to an object defined in __main__, which another interpreter cannot import"
    file.seek(0)
    return file


def fresh(
    loaded: LoadedObserver,
    options: ObserverOptions,
    limits: Limits,
    rank0_only: bool,
    notes: list[str] | None = None,
    guard: HandGuard | None = None,
) -> tuple[HandRankZero | None, str]:
    """Rank 0's fresh process for ``loaded``, ready, or None and why not (``notes``: carried),
    in a session of its own; ``guard`` is told its pid as it starts and gives the signals it
    unblocks (:mod:`.handguard`)."""
    from ppaux.observer.fresh import FORK_HOOK, forking

    if forking():
        return None, f"the test suite's hook {FORK_HOOK}=1 asked for a fork"
    blob = carried(loaded, options.timeout_s, notes)
    if isinstance(blob, str):
        return None, blob
    with blob:
        return _started(loaded, options, limits, rank0_only, blob.fileno(), guard)


def _started(
    loaded: LoadedObserver,
    options: ObserverOptions,
    limits: Limits,
    rank0_only: bool,
    blob: int,
    guard: HandGuard | None,
) -> tuple[HandRankZero | None, str]:
    """:func:`fresh`'s process, given the descriptor of the file the object is pickled in."""
    import socket

    from ppaux.observer.fresh import launched
    from ppaux.observer.handapart import HandRankZero, run_bound
    from ppaux.observer.handcopy import Stuck

    request: dict[str, Any] = {
        "target": loaded.target,
        "options": options.to_json(),
        "path": [entry for entry in sys.path if isinstance(entry, str) and entry],
    }
    try:
        ours, theirs = socket.socketpair()
    except OSError as exc:
        return None, f"no socket to a fresh interpreter ({exc.strerror or exc})"
    told, tell = os.pipe()
    request.update(
        pickled_fd=blob,
        rank0_only=rank0_only,
        how={
            "budget": limits.max_digested_items,
            "nesting": limits.max_value_nesting,
            "elements": limits.max_digested_elements,
        },
        socket=theirs.fileno(),
        tell=tell,
        unblock=[] if guard is None else guard.blocked,
    )
    passed = [theirs.fileno(), tell, blob]
    if guard is not None and guard.report is not None:
        request["shield"] = guard.report
        passed.append(guard.report)
    try:
        rank0 = launched(MODULE, request, ours, tuple(passed), session=True)
    except OSError as exc:
        ours.close()
        os.close(told)
        return None, f"a fresh interpreter could not start ({exc.strerror or exc})"
    finally:
        theirs.close()
        os.close(tell)
    if guard is not None:
        guard.pid = rank0.pid
    hand = HandRankZero(rank0, told)
    # Its start (torch's import), then the object's deep copy there, bounded by the timeout.
    hand.wait_s = _START_S + options.timeout_s
    reply = hand._reply()
    if reply is not None and reply.get("stuck") is True:
        hand.close()
        raise Stuck("deep-copying the instance in rank 0's fresh process", options.timeout_s)
    if reply is None or reply.get("ready") is not True:
        why = reply.get("refused") if reply is not None else hand.lost
        hand.close()
        return None, f"rank 0's fresh interpreter could not load it ({str(why)[:300]})"
    hand.whole(options.timeout_s, run_bound(options, rank0_only, limits))
    return hand, ""
