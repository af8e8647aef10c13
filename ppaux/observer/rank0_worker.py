"""Rank 0's fresh process: ``python -m ppaux.observer.rank0_worker``, started by the check's
child (:mod:`.fresh`), its request on stdin.

It dies with the child, puts back the ``PYTHON*`` variables held back at its start
(:mod:`.interpreter`), takes the child's ``sys.argv`` (sglang's spawn gives every scheduler
the launcher's; :mod:`.rank0_start`), imports ppaux's own modules and torch as the child does
(:mod:`.worker`), says so on its socket, then answers the child's questions as rank 0
(:func:`ppaux.observer.apart.serve`), the target imported at the first one.
"""

from __future__ import annotations

import os
import sys

__all__ = ["main"]


def main() -> int:
    """Rank 0's fresh process (see the module's docstring)."""
    from ppaux.observer import worker
    from ppaux.observer.apart import how_loaded, loader, ready, serve
    from ppaux.observer.rank0_start import begun

    request, sock = begun()  # sys.argv the child's, as sglang's spawn gives it
    emit = worker._writer(worker._hidden(int(request.pop("fd"))))
    options, announce, _ = worker._before_the_target(request, emit)
    ready(sock)
    how = how_loaded(request)
    serve(sock, loader(str(request["target"]), options, how, announce), how, announce)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
