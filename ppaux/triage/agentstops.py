"""torchrun's elastic agent stopped by a signal from outside the job.

torchrun's agent turns SIGTERM, SIGINT, SIGHUP and SIGQUIT into an exception of its own and
stops its workers (torch's ``torch/distributed/elastic/multiprocessing/api.py``,
``_terminate_process_handler``; ``torch/distributed/elastic/agent/server/api.py``, the agent's
``run``; torch 1.10 to 2.13 word them alike):

- its log record ``Received 15 death signal, shutting down workers``;
- its exception ``torch.distributed.elastic.multiprocessing.api.SignalException: Process 165
  got signal: 15``, the end of torchrun's own traceback.

Such a signal came from outside the job (a scheduler cancelling or pre-empting it,
``kubectl delete`` or an eviction, a timeout wrapper, a user's ``kill``): the workers it
stopped did not fail, and what sent it is not in the log. Each is read where torch writes it:
at the line's start or behind a logger's prefix, never as words inside a sentence.
"""

from __future__ import annotations

import signal

from ppaux.patterns import lazy

__all__ = ["AGENT_STOP_MARKER", "agent_signal", "agent_stop", "stopped_from_outside"]

#: What makes a line worth reading for the agent's record.
AGENT_STOP_MARKER = b"death signal, shutting down workers"
_RECEIVED = lazy(
    r"(?:^|(?<=:)|(?<=: )|(?<=\] ))Received (?P<number>\d{1,3}) death signal, shutting down "
    r"workers"
)
_SIGNAL_EXCEPTION = lazy(r"(?:^|\.)SignalException$")
_GOT_SIGNAL = lazy(r"^Process (?P<pid>\d{1,10}) got signal: (?P<number>\d{1,3})$")
#: The words of :func:`_how` that tell such a stop from a death.
_OUTSIDE = "from outside the job"


def _how(number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    return (
        f"was stopped by {name} (signal {number}) {_OUTSIDE} and stopped its workers, which "
        "did not fail"
    )


def agent_stop(text: str) -> tuple[str, str] | None:
    """(who, how) of torchrun's agent's record that a signal stopped it, or None for another
    line."""
    found = _RECEIVED.search(text) if "death signal" in text else None
    if found is None:
        return None
    return "torchrun's agent", _how(int(found["number"]))


def agent_signal(exception: str, message: str) -> str | None:
    """How torchrun's agent ended, for its ``SignalException`` (``Process 165 got signal:
    15``); None for another exception."""
    if _SIGNAL_EXCEPTION.search(exception) is None:
        return None
    found = _GOT_SIGNAL.match(message.strip())
    return None if found is None else _how(int(found["number"]))


def stopped_from_outside(how: str) -> bool:
    """True where a process ended ``how`` by a signal from outside the job."""
    return _OUTSIDE in how
