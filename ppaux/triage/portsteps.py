"""A port another process already holds: the failure's own words say the address is in use
(``RuntimeError: Address already in use``, torch's ``DistNetworkError: The server socket has
failed to listen on any local network address. port: 29500, ... name: EADDRINUSE``, Python's
``[Errno 98] Address already in use``). Nothing on the network failed: a process on this host
(an earlier run still alive, another job) holds the port, so the steps find who holds it
(``ss -ltnp 'sport = :N'``, the port from the log where it names one) and give the next run
another port, by the flag of the program that chose it: sglang's ``--port`` and
``--dist-init-addr``, torchrun's ``--master-port`` and ``--rdzv-endpoint``, else
``MASTER_PORT``.
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.records import Failure
from ppaux.triage.stepdata import Step

__all__ = ["IN_USE_LOOK_FIRST", "in_use", "port_in_use", "port_steps"]

#: The words of a bind that failed because the address is taken.
_IN_USE = lazy(r"(?i:address already in use)|EADDRINUSE|\[Errno 98\]|errno: 98\b")
#: The port a failure names (torch's ``port: 29500``, an address's ``host:29500``, Python's
#: address pair ``('0.0.0.0', 30000)`` as asyncio and uvicorn print it).
_PORT = lazy(
    r"\bport:? (?P<port>\d{2,5})\b|:(?P<after>\d{2,5})\b(?![.\d])"
    r"|\('[^'\n]{0,100}', (?P<pair>\d{2,5})\)"
)
#: Where ``explain`` says to look first for such a line (triage's first command).
IN_USE_LOOK_FIRST = "check which process holds the port (ss -ltnp)"


def in_use(text: str) -> bool:
    """True for ``text`` that says an address is in use (a bind that failed)."""
    return _IN_USE.search(text) is not None


def port_in_use(failure: Failure) -> tuple[str, str] | None:
    """(port, or '' where the failure names none; the program that chose it: 'sglang',
    'torchrun' or 'job') for a failure whose own words (its message, its chain's, or what
    its logger said of a cut traceback: :mod:`~ppaux.triage.loggedabove`) say the
    address is in use, or whose traceback is cut below torch's c10d line that says its store's
    port is in use (its ``warned`` 'address-in-use': ``[::]:47531: Address already in use``,
    the port read from its address); else None."""
    texts = [failure.message, failure.said or "", *(message for _, message in failure.chain)]
    said = next((t for t in texts if _IN_USE.search(t)), None)
    if said is None and failure.warned is not None and failure.warned[0] == "address-in-use":
        said = failure.warned[1]  # torch's c10d line just above its cut traceback
    if said is None:
        return None
    found = _PORT.search(said)
    port = "" if found is None else (found["port"] or found["after"] or found["pair"] or "")
    files = " ".join(frame.file for frame in failure.frames)
    if "sglang" in files or failure.scheduler:
        return port, "sglang"
    if "/elastic/" in files or "torch/distributed/run.py" in files:
        return port, "torchrun"
    return port, "job"


#: How each program is given another port.
_FLAGS = {
    "sglang": "sglang's --port (its HTTP server) or --dist-init-addr HOST:PORT (its processes' "
    "meeting point)",
    "torchrun": "torchrun's --master-port, or the port of --rdzv-endpoint HOST:PORT",
    "job": "MASTER_PORT (or the launcher's own port setting)",
}


def port_steps(port: str, program: str) -> list[Step]:
    """The steps for a port already held on the host that failed to bind it: who holds it,
    and the flag of ``program`` ('sglang', 'torchrun', 'job') that gives the next run another."""
    where = "the host whose process could not bind the port"
    which = f"port {port}" if port else "the port"
    holder = ("ss", "-ltnp", f"sport = :{port}") if port else ("ss", "-ltnp")
    return [
        Step(
            None,
            where,
            f"{which} is already in use on this host (an earlier run still alive, or another "
            "job): nothing on the network failed",
        ),
        Step(holder, where, "the process that listens on it, and its pid"),
        Step(
            None,
            where,
            f"end that process, or give the next run another port: {_FLAGS[program]}",
        ),
    ]
