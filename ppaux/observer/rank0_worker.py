"""Rank 0's fresh process: ``python -m ppaux.observer.rank0_worker``, started by the check's
child (:mod:`.fresh`), its request on stdin.

It dies with the child, puts back the ``PYTHON*`` variables held back at its start
(:mod:`.interpreter`), takes the child's ``sys.argv`` (sglang's spawn gives every scheduler
the launcher's), imports ppaux's own modules and torch as the child does
(:mod:`.worker`), says so on its socket, then answers the child's questions as rank 0
(:func:`ppaux.observer.apart.serve`), the target imported at the first one.
"""

from __future__ import annotations

import os
import sys

__all__ = ["main"]


def main() -> int:
    """Rank 0's fresh process (see the module's docstring)."""
    import socket

    from ppaux.observer import worker
    from ppaux.observer.apart import how_loaded, loader, ready, serve
    from ppaux.observer.interpreter import put_back

    worker._die_with_parent()
    worker._drop_ptrace()
    request = worker._read_request()
    put_back(request.pop("environ", {}))
    sys.argv[:] = [str(arg) for arg in request.pop("argv", sys.argv)]  # the child's, as sglang
    emit = worker._writer(worker._hidden(int(request.pop("fd"))))
    sock = socket.socket(fileno=worker._hidden(int(request.pop("socket"))))
    options, announce, _ = worker._before_the_target(request, emit)
    ready(sock)
    how = how_loaded(request)
    serve(sock, loader(str(request["target"]), options, how, announce), how, announce)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
