"""A hang: processes that stopped making progress without failing. Two records say one:

- sglang's own watchdog (``sglang/srt/utils/watchdog.py``, 0.5.23: ``_watchdog_once``), when a
  process's forward count has not moved for ``--watchdog-timeout`` seconds: ``Scheduler debug
  info:`` and what it holds of the batch, then ``Scheduler watchdog timeout
  (self.watchdog_timeout=300, self.soft=False)``; the scheduler then sends its parent SIGQUIT
  (unless soft), which takes the server down;
- the same watchdog's one line in the 0.3 and 0.4 releases (``Scheduler.watchdog_thread`` in
  ``sglang/srt/managers/scheduler.py``, e.g. 0.4.3): ``Watchdog timeout
  (self.watchdog_timeout=300)`` behind the scheduler's own prefix (``[<time> TP4] ``), no process
  name before it (only the scheduler had a watchdog), then SIGQUIT to the parent;
- a py-spy dump of an sglang process (``Process 3438121: sglang::scheduler_DP1_TP1_EP1_PP0``, the
  title sglang gives each of its processes): someone dumped its stacks, as one does of a
  process that hangs.

Neither is a failure with a cause: where nothing else in the logs failed, PP809 says the log
shows a hang and no root (:mod:`ppaux.triage.noroots`), and the steps say what to collect.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["HANG_MARKERS", "hang_words", "pyspy_process"]

#: What makes a line worth reading for this module (added to the scanner's markers).
HANG_MARKERS: tuple[bytes, ...] = (
    b" debug info:",
    b" watchdog timeout (",
    b"Watchdog timeout (self.watchdog_timeout=",
    b": sglang::",
)
#: The processes sglang's watchdog watches, by the name it gives them.
_WATCHED = r"(?P<who>Scheduler|DataParallelController|DetokenizerManager|TokenizerManager)"
#: sglang's watchdog's two lines, at the start of their message (behind sglang's prefix, or
#: a line's start), never behind a sentence's words.
_WATCHDOG = lazy(
    r"(?:^|[\]|:>\t]\s{0,8}|^\s{1,64})" + _WATCHED + r" (?:(?P<info>debug info:)\s*$|"
    r"watchdog timeout \(self\.watchdog_timeout=(?P<seconds>[\d.]{1,12}))"
    r"|(?:^|[\]|:>\t]\s{0,8}|^\s{1,64})"
    r"Watchdog timeout \(self\.watchdog_timeout=(?P<old>[\d.]{1,12})\)"
)
#: py-spy's header of a process's dump, naming an sglang process by its title.
_PYSPY = lazy(r"^\s{0,64}Process (?P<pid>\d{1,9}): (?P<title>sglang::[\w.-]{1,100})")


def pyspy_process(text: str) -> str | None:
    """The title of the sglang process a py-spy dump's header names (``sglang::scheduler_
    DP1_TP1_EP1_PP0``), or None for another line."""
    found = _PYSPY.match(text)
    return None if found is None else found.group("title")


def hang_words(text: str) -> str | None:
    """What a hang record ``text`` says, in a finding's words, or None for another line."""
    title = pyspy_process(text)
    if title is not None:
        return f"was dumped by py-spy ({title}): its stacks show where it waited"
    found = _WATCHDOG.search(text)
    if found is None:
        return None
    if found.group("old") is not None:  # 0.3/0.4: the scheduler's watchdog, its one line
        return (
            "was found hung by sglang's watchdog (Scheduler watchdog timeout after "
            f"{found.group('old')} s without progress)"
        )
    who = found.group("who")
    if found.group("info") is not None:
        return (
            f"was found hung by sglang's watchdog ({who} debug info: its forward count did not "
            "move for the watchdog's timeout)"
        )
    return (
        f"was found hung by sglang's watchdog ({who} watchdog timeout after "
        f"{found.group('seconds')} s without progress)"
    )
