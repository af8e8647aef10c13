"""The rows of torchrun's failure summary, as torchrun prints each on lines of its own: ``[1]:``,
then ``time``, ``host``, ``rank : 1 (local_rank: 1)``, ``exitcode : 1 (pid: 8835)``,
``error_file`` and ``traceback``. The summary lists its ``Failures:`` first and its ``Root Cause
(first observed failure)`` last; a paste cut before the root cause holds the other failures'
rows only, each one rank that exited with its code: a code of 1 or more is the rank's own error
(a Python exception, written to that rank's own stderr), a negative one the signal that ended
it (:mod:`ppaux.triage.deaths` reads those as deaths).
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.lineformat import ranked_stream
from ppaux.triage.records import Failure

__all__ = ["SUMMARY_EXIT", "SUMMARY_EXIT_RUN_IN", "SUMMARY_RANK", "SummaryRows", "summary_row"]

#: A row's rank line. A copy that lost characters (a screenshot's text read back) may put a
#: space before the colon, drop the one between ``rank`` and its number, write ``local rank``
#: and run the ``exitcode`` line into the rank's (``rank2 (local rank: 2)exitcode: -9``).
SUMMARY_RANK = lazy(r"^\s*rank\s*:?\s*(?P<rank>\d{1,9}) ?\(local[_ ]rank: ")
SUMMARY_EXIT = lazy(r"^\s*exitcode\s*:\s*(?P<code>-?\d{1,9})(?!\d)")
#: The ``exitcode`` run into the rank's line, after its ``(local_rank: N)``.
SUMMARY_EXIT_RUN_IN = lazy(r"\d{1,9}\)\s*exitcode\s*:\s*(?P<code>-?\d{1,9})(?!\d)")
#: Lines a row's exit code may come after its rank's (the next line; an export's pretty-printed
#: JSON spends up to eight lines on each).
_ROW_LINES = 8


def summary_row(failure: Failure, stream: str | None, rank: str, code: str) -> Failure:
    """``failure`` as the summary's row of a failure other than its root cause: ``rank``
    exited with ``code``, behind ``stream`` where the line has one."""
    failure.stream = ranked_stream(stream, f"rank {rank}")
    failure.said = (
        f"rank {rank} exited with code {code} (a failure of torchrun's summary); its exception "
        "is not in this log"
    )
    failure.summary = "failure"
    return failure


class SummaryRows:
    """A summary's rows read line by line, outside its root cause (only the lines that hold
    ``(local_rank: `` or ``exitcode`` need be given)."""

    def __init__(self) -> None:
        self._rank: tuple[str, int] | None = None

    def read(self, text: str, number: int) -> tuple[str, str] | bool:
        """(rank, exit code) of the row whose exit line (or rank line with its exit code run
        in) ``text`` is, at line ``number``; True for a rank's line, its exit line due; False
        for another line."""
        rank = SUMMARY_RANK.match(text)
        if rank is not None:
            code = SUMMARY_EXIT_RUN_IN.match(text, rank.end())
            if code is not None:
                self._rank = None
                return rank.group("rank"), code.group("code")
            self._rank = (rank.group("rank"), number)
            return True
        code = SUMMARY_EXIT.match(text)
        due = self._rank
        if code is None or due is None or number - due[1] > _ROW_LINES:
            return False
        self._rank = None
        return due[0], code.group("code")
