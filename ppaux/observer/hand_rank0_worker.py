"""Rank 0's fresh process of a check in hand: ``python -m ppaux.observer.hand_rank0_worker``,
started by the checking process (:mod:`.handfresh`), its request on stdin.

It dies with the checking process, puts back the ``PYTHON*`` variables held back at its start
(:mod:`.interpreter`), takes the caller's ``sys.argv`` (:mod:`.rank0_start`) and import path,
imports torch and ppaux's own modules, unpickles the object (the caller's module imported
here), makes rank 0's side from it and says so on its socket (or why it could not), then
answers the checking process's questions as rank 0 (:func:`ppaux.observer.apart.serve`). A
fork it makes in one of the target's methods ends before it answers, told on a pipe of its own.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppaux.observer.options import ObserverOptions

__all__ = ["main"]


def main() -> int:
    """Rank 0's fresh process of a check in hand (see the module's docstring)."""
    import pickle

    from ppaux.observer import worker
    from ppaux.observer.apart import ready, send, serve
    from ppaux.observer.handguard import shielded
    from ppaux.observer.rank0_start import begun

    request, sock = begun()  # sys.argv the caller's
    shield = request.pop("shield", None)
    shielded(None if shield is None else int(shield), [int(n) for n in request.pop("unblock", [])])
    tell = worker._hidden(int(request.pop("tell")))
    options = _prepared(request)
    owner = os.getpid()

    def announce(method: str | None, where: object) -> None:
        if os.getpid() != owner:  # a fork of rank 0's process: it ends here
            try:
                os.write(tell, b"f")
            finally:
                os._exit(0)

    from ppaux.observer.drive import message_line
    from ppaux.observer.parts import rank0_machinery
    from ppaux.observer.rankzero import RankZeroSide
    from ppaux.observer.target import observer_from

    try:
        with os.fdopen(int(request["pickled_fd"]), "rb") as pickled:
            value = pickle.load(pickled)
        loaded = observer_from(
            value,
            str(request["target"]),
            rank0_only=request["rank0_only"],
            timeout_s=options.timeout_s,  # its deep copy, run by its own methods, is bounded
        )
        if loaded.stuck is not None:
            send(sock, {"ready": False, "stuck": True, "refused": loaded.stuck}, [])
            os._exit(0)
        side = RankZeroSide(loaded.make_rank0, rank0_machinery(options))
    except BaseException as exc:  # the caller's module, as it loads here
        send(sock, {"ready": False, "refused": f"{type(exc).__name__}: {message_line(exc)}"}, [])
        os._exit(0)
    ready(sock)
    announce(None, None)
    serve(sock, lambda: (side, None), request["how"], announce)
    os._exit(0)


def _prepared(request: dict[str, Any]) -> ObserverOptions:
    """torch and ppaux's own modules imported, the caller's import path taken (after the
    standard library, as the check's child takes it): what comes before the object loads."""
    import site
    import warnings

    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    import torch  # noqa: F401  (before the caller's module, which may patch it)

    from ppaux.observer.options import ObserverOptions
    from ppaux.observer.torch_threads import note_torchs_threads
    from ppaux.replay import ordered_path

    note_torchs_threads()
    settings = dict(request["options"])
    settings["batch_sizes"] = tuple(settings["batch_sizes"])
    sys.path[:] = ordered_path(sys.path, request.get("path", []), site.getsitepackages())
    return ObserverOptions(**settings)


if __name__ == "__main__":
    sys.exit(main())
