"""Lines just above a traceback cut before its exception that say what failed, besides NCCL's
warnings that a communicator's set-up failed (:mod:`ppaux.triage.ncclsetup`):

- NCCL's warnings that a transfer failed in flight (:mod:`ppaux.triage.ncclflight`): a message
  received truncated (``size-mismatch``: the ranks' collectives, or a pipeline's sends and
  receives, disagree on a tensor's size), an InfiniBand completion in error
  (``ib-completion``: the link between two hosts, or the peer's process);
- torch's c10d store that could not listen, its port held by another process: ``[W
  socket.cpp:401] [c10d] The server socket has failed to bind to 0.0.0.0:47531 (errno: 98 -
  Address already in use).`` then ``[E socket.cpp:435] [c10d] The server socket has failed to
  listen on any local network address.`` (torch's own words, 1.x to 2.x; ``EADDRINUSE`` in
  later ones), a set-up failure of this host: read only in the few lines the scanner passed
  over just before the traceback's first line (:func:`c10d_cause`).

A warning that says nothing of a failure (``errno: 97 - Address family not supported by
protocol``: torch tries IPv6 first, then IPv4) is no cause.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = [
    "ABOVE_CAUSES",
    "C10D_WORDS",
    "IN_FLIGHT_CAUSES",
    "c10d_cause",
    "cause_words",
]

#: The causes read above a cut traceback, each with its words.
ABOVE_CAUSES = {
    "size-mismatch": "its socket transport received a message of another size than it "
    "expected: the ranks' collectives (or a pipeline's sends and receives) disagree on a "
    "tensor's size",
    "address-in-use": "its store could not listen on its port: another process holds it "
    "(errno 98, EADDRINUSE)",
    "ib-completion": "its InfiniBand transport got an error completion from a peer in flight "
    "(status 12 means its retries ran out): the link between the two hosts, or the peer's process",
}
#: Those of a transfer in flight, not of a set-up.
IN_FLIGHT_CAUSES = frozenset({"size-mismatch", "ib-completion"})

#: What makes a line worth matching with :data:`_IN_USE` (cheap, on the raw bytes).
C10D_WORDS = (b"Address already in use", b"EADDRINUSE", b"failed to listen")
_IN_USE = lazy(
    r"(?:\[c10d\][^\n]{0,200}?(?:failed to (?:bind|listen) on (?P<address>[^\s()]{1,120})"
    r"[^\n]{0,40}?)?\(errno: 98 - Address already in use\)|code: -98, name: EADDRINUSE"
    r"|\[c10d\] The server socket has failed to listen on any local network address)"
)


def c10d_cause(lines: list[str]) -> tuple[int, str, str] | None:
    """(the index among ``lines`` of the line that says most, the cause, what it says) where
    torch's c10d lines among ``lines`` (oldest first) say its store's port was in use; None
    where none does."""
    best: tuple[int, str, str] | None = None
    for index, text in enumerate(lines):
        found = _IN_USE.search(text)
        if found is None:
            continue
        if found["address"]:
            return index, "address-in-use", f"{found['address']}: Address already in use"
        if best is None:
            best = index, "address-in-use", found.group(0).strip("[] ")
    return best


def cause_words(name: str, said: str) -> str:
    """The words for the cause ``name`` (:data:`ABOVE_CAUSES`), ``said`` being what its line
    says, left open for where it was said."""
    whose = "torch's c10d error" if name == "address-in-use" else "NCCL's warning"
    return f"{whose} that {ABOVE_CAUSES[name]} ({said}"
