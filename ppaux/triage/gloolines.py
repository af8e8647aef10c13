"""gloo's one-line records of a failure, as torch's C++ logs them (behind glog's
``[E421 02:05:38.764490322 ProcessGroupGloo.cpp:143] `` and torch's ``[rank4]:``):

- ``Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no
  error``: the process group's set-up could not connect this rank to every other (an address,
  an interface, a firewall, a peer that never came);
- ``Rank 1 successfully reached monitoredBarrier, but received errors while waiting for
  send/recv from rank 0. Please check rank 0 logs for faulty rank.``: a monitored barrier that
  names the rank it waited for.

Each is read only as torch writes it, behind glog's ``ProcessGroupGloo.cpp:N]``; the words in a
sentence are no record. :func:`gloo_failure` gives the (type, message) triage reads it as.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["GLOO_MARKERS", "GLOO_TYPE", "gloo_failure"]

#: What makes a line worth reading for these records (added to the scanner's markers).
GLOO_MARKERS: tuple[bytes, ...] = (b"connectFullMesh failed", b"reached monitoredBarrier")
#: What such a record is called: torch's C++ words, no Python type.
GLOO_TYPE = "gloo error"

_GLOO = lazy(
    r"ProcessGroupGloo\.cpp:\d{1,6}\]\s{1,4}(?P<said>(?:Gloo connectFullMesh failed with "
    r"|Rank \d{1,7} successfully reached monitoredBarrier, but received errors)[^\n]{0,600})"
)


def gloo_failure(text: str) -> tuple[str, str] | None:
    """(type, message) of gloo's record ``text`` of a failure, or None for another line."""
    if (found := _GLOO.search(text)) is None:
        return None
    return GLOO_TYPE, found["said"].strip()
