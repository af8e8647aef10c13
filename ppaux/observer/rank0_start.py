"""The first lines of rank 0's fresh process, as both its modules begin
(:mod:`.rank0_worker`, a check's; :mod:`.hand_rank0_worker`, a check in hand's), started by
:func:`ppaux.observer.fresh.launched`.

Imports nothing beyond the standard library at import.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

__all__ = ["begun"]


def begun() -> tuple[dict[str, Any], socket.socket]:
    """The first lines of rank 0's fresh process: it dies with the process that started it,
    gives up CAP_SYS_PTRACE, reads its request, puts back the ``PYTHON*`` variables held back
    at its start (:mod:`.interpreter`) and takes the starter's ``sys.argv``; the rest of the
    request and rank 0's end of the socket."""
    import socket

    from ppaux.observer import worker
    from ppaux.observer.interpreter import put_back

    worker._die_with_parent()
    worker._drop_ptrace()
    request = worker._read_request()
    put_back(request.pop("environ", {}))
    sys.argv[:] = [str(arg) for arg in request.pop("argv", sys.argv)]
    sock = socket.socket(fileno=worker._hidden(int(request.pop("socket"))))
    return request, sock
