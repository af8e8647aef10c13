"""NCCL's warnings that a transfer failed in flight and its communicator with it: NCCL's
proxy thread returns an error (``ncclRemoteError``, its ``-> 6`` lines up to ``proxy.cc``
``[Progress Thread]``), the communicator is in error and every collective on it fails or
hangs: the process is down, though the log holds no traceback of it.

- ``NET/IB : Got completion from peer <address> with status=12 ... vendor err 129``
  (``with error 12``, older releases): a work request on the InfiniBand queue pair completed
  in error (12: ``IBV_WC_RETRY_EXC_ERR``, the transport's retries ran out: the link, a switch,
  or the peer gone);
- ``NET/Socket : peer <address> message truncated : receiving 4 bytes instead of 2``: the
  two ends of a transfer disagree on its size.

A warning of these is read only where NCCL writes it, after its ``NCCL WARN`` words.

The InfiniBand device a warning names (:func:`ib_device`) is the one that failed: NCCL 2.21
ends a completion's warning with ``hca mlx5_3``, and puts the device and its port before an
async event (``NET/IB : mlx5_3:1 async fatal event on QP (0x...): local access violation work
queue error``, ``NET/IB : mlx5_3:1 Got async event : port error``).
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["flight_failure", "ib_device"]

#: Each failure's warning, as NCCL writes it.
_WARNINGS = (
    (
        "ib-completion",
        lazy(
            r"NCCL WARN NET/IB ?: Got completion from peer (?P<peer>[^\s<]{1,120}(?:<\d{1,6}>)?)"
            r" with (?:error |status=)(?P<status>\d{1,4})"
        ),
    ),
    (
        "size-mismatch",
        lazy(
            r"NCCL WARN NET/Socket ?: (?:peer (?P<peer>[^\s<]{1,120}(?:<\d{1,6}>)?) )?"
            r"message truncated(?: ?: receiving (?P<got>\d{1,12}) bytes instead of "
            r"(?P<want>\d{1,12}))?"
        ),
    ),
)


#: A device's name as verbs gives it (``mlx5_3``, ``mlx5_ib0``, ``bnxt_re0``).
_DEVICE = r"(?P<device>[A-Za-z][A-Za-z0-9_.-]{0,63})(?![A-Za-z0-9_.-])"
#: NCCL's warnings that name the InfiniBand device that failed.
_DEVICES = (
    lazy(r"NCCL WARN NET/IB ?: Got completion from peer [^\n]{0,400}? hca " + _DEVICE),
    lazy(r"NCCL WARN NET/IB ?: " + _DEVICE + r":\d{1,3} (?:Got async|async)"),
)


def ib_device(text: str) -> str | None:
    """The InfiniBand device NCCL's warning ``text`` says failed ('mlx5_3'), or None where the
    line is no such warning or names none."""
    for pattern in _DEVICES:
        found = pattern.search(text)
        if found is not None:
            return found["device"]
    return None


def flight_failure(text: str) -> tuple[str, str] | None:
    """(the in-flight failure, what the line says of it) that NCCL's warning ``text`` reports
    ('ib-completion', 'peer 10.0.0.2<54862>, status 12'), or None for another line."""
    for name, pattern in _WARNINGS:
        found = pattern.search(text)
        if found is not None:
            peer = found["peer"] or "a peer the line does not name"
            groups = found.groupdict()
            status, got = groups.get("status"), groups.get("got")
            sizes = f", {got} bytes received instead of {groups['want']}" if got else ""
            device = ib_device(text)
            said = f"peer {peer}" + (f", status {status}" if status else "") + sizes
            return name, said + (f", device {device}" if device else "")
    return None
