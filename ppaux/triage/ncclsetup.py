"""NCCL's warnings that a communicator's set-up failed, not a collective in flight: what NCCL
writes before any collective runs, so the cause is how the job was started or how its hosts
reach each other, never a peer that died mid-run.

- ``Bootstrap Root : rank 1 of 8 ranks has already checked in``: two processes joined the
  bootstrap as the same rank (the launcher gave two the same rank, or two jobs share one
  bootstrap address and port);
- ``Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 40``: two ranks chose the
  same GPU (each rank must select its own device: its local rank), the host's own set-up;
- ``socketStartConnect: Connect to <address> failed : ...``, ``socketPollConnect: Connect to
  <address> returned 113(No route to host) ...``, ``Connect to <address> failed : Connection
  refused``: the bootstrap's connection to another rank's address failed (the interface NCCL
  chose, a route, a firewall, a bootstrap address no one listens on);
- ``ibvwrap.c:130 NCCL WARN Call to ibv_create_qp failed`` (``ibv_reg_mr``, ``ibv_open_device``,
  ...): a call NCCL's InfiniBand transport makes to the verbs library on this host failed while
  it connected the ranks (NCCL returns ``ncclSystemError``, its ``-> 2`` lines leading up to
  ``init.cc``): this host's InfiniBand device or its limits (locked memory in a container),
  not a peer.

Each is read only where NCCL writes it: after its ``NCCL WARN`` words.

A communicator whose ``ncclCommInitRank`` returned an error, as a worker's NCCL wrapper reports
it before it raises (vLLM's pynccl: ``ncclCommInitRank failed with error: NCCL error: internal
error - please report this issue to the NCCL developers``), is a record of its own
(:func:`init_failure`): a set-up failure whose error the line names, its traceback below it
often cut.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = [
    "INIT_FAILED_MARKER",
    "INIT_FAILED_TYPE",
    "SETUP_FAILURES",
    "init_failure",
    "setup_cause",
    "setup_failure",
    "setup_words",
]

#: What makes a line worth reading for :func:`init_failure` (added to the scanner's markers).
INIT_FAILED_MARKER = b"ncclCommInitRank failed"
#: The type such a record is given: the line names no exception's, NCCL's error its words.
INIT_FAILED_TYPE = "NCCL error"
#: The wrapper's words, then NCCL's error (its ``NCCL error: `` taken as the type).
_INIT_FAILED = lazy(
    r"\bncclCommInitRank failed(?: with error)?: (?:NCCL error: )?(?P<reason>[^\n]{1,400})"
)

_DUPLICATE_RANK = lazy(
    r"NCCL WARN Bootstrap Root ?: rank (?P<rank>\d{1,7}) of (?P<size>\d{1,7}) ranks has "
    r"already checked in"
)
_DUPLICATE_GPU = lazy(
    r"NCCL WARN Duplicate GPU detected ?: rank (?P<first>\d{1,7}) and rank (?P<second>\d{1,7}) "
    r"both on CUDA device (?P<device>[\w:.]{1,40})"
)
_CONNECT = lazy(
    r"NCCL WARN (?:socket(?:Start|Poll)?Connect: )?[Cc]onnect to\b"
    r"(?: (?P<peer>[^\s<]{1,120}(?:<\d{1,6}>)?))?"
    r"(?:\s{0,4}(?:failed\s{0,4}:\s{0,4}|returned\s{0,4})(?P<reason>[^\n]{1,120}))?"
)
_VERBS = lazy(r"NCCL WARN Call to (?P<call>ibv_\w{1,40}) failed(?P<rest>[^\n]{0,120})")

#: The set-up failures :func:`setup_failure` names, each with its words.
SETUP_FAILURES = {
    "duplicate-rank": "two processes joined NCCL's bootstrap as the same rank",
    "duplicate-gpu": "two ranks on one host chose the same GPU",
    "bootstrap-connect": "NCCL's bootstrap could not connect to another rank's address",
    "ib-verbs": "a call to this host's InfiniBand verbs library failed",
}


def setup_failure(text: str) -> tuple[str, str] | None:
    """(the set-up failure, what the line says of it) that NCCL's warning ``text`` reports
    ('bootstrap-connect', 'Connect to 10.0.0.4<56849>: returned 113(No route to host)'), or
    None for another line."""
    if (rank := _DUPLICATE_RANK.search(text)) is not None:
        return "duplicate-rank", f"rank {rank['rank']} of {rank['size']} checked in twice"
    if (gpu := _DUPLICATE_GPU.search(text)) is not None:
        return (
            "duplicate-gpu",
            f"rank {gpu['first']} and rank {gpu['second']} both on CUDA device {gpu['device']}",
        )
    if (connect := _CONNECT.search(text)) is not None:
        peer = connect["peer"] or "an address the line does not keep"
        reason = (connect["reason"] or "").strip()
        return "bootstrap-connect", f"connect to {peer}" + (f": {reason}" if reason else "")
    if (verbs := _VERBS.search(text)) is not None:
        rest = verbs["rest"].strip(" :")
        return "ib-verbs", f"{verbs['call']} failed" + (f": {rest}" if rest else "")
    return None


def init_failure(text: str) -> str | None:
    """What a worker's line that its ``ncclCommInitRank`` failed says (``ncclCommInitRank
    failed: internal error - ...``), or None for another line."""
    found = _INIT_FAILED.search(text)
    if found is None:
        return None
    return f"ncclCommInitRank failed: {found.group('reason').strip()}"


def setup_words(name: str, said: str) -> str:
    """The words for the set-up failure ``name`` (:func:`setup_failure`), ``said`` being
    what its line says, left open for where it was said."""
    return f"its communicator's set-up failed: {SETUP_FAILURES[name]} ({said}"


#: Where the cause of a set-up failure is, where it is not how the job was started or how its
#: hosts reach each other.
_CAUSES = {
    "ib-verbs": "this host's InfiniBand devices or their limits (locked memory in a container), "
    "not a peer",
}


def setup_cause(name: str) -> str:
    """Where the cause of the set-up failure ``name`` is, in words."""
    return _CAUSES.get(name, "how the job was started or how its hosts reach each other")
