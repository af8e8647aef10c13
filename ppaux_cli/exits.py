"""Leaving: one error line and an exit code (:func:`fail`), and leaving a distributed run at
once with a known code, also on torchrun's SIGTERM.

Exiting is the CLI's business (the library never exits), so this stays here. Ranks other than
0 leave as soon as they know the verdict, before rank 0 does: torchrun stops the remaining
workers of a node with SIGTERM when one exits with a failure, and a rank that already knows the
code must still exit with it.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from ppaux.errors import PpauxError
    from ppaux.report import InputProblem

__all__ = ["fail", "leave", "leave_on_sigterm"]


def fail(
    message: str | PpauxError | InputProblem, code: int = 2, details: Sequence[str] = ()
) -> NoReturn:
    """Print one 'ppaux: error: ...' line on stderr and exit with ``code``. An error or a
    problem of the library is said with its suggestions in the command line's words
    (:func:`ppaux_cli.wording.cli_words`: a setting becomes its flag); every line is shown by
    :func:`ppaux.text.shown`, so a name from a file cannot break it. ``details``, where there
    are any, follow the line, each on a line of its own under a margin of two spaces."""
    from ppaux.text import shown
    from ppaux_cli.wording import cli_words

    line = message if isinstance(message, str) else message.worded(cli_words)
    sys.stderr.write(f"ppaux: error: {shown(line, None)}\n")
    for detail in details:
        sys.stderr.write(f"  {shown(detail, None)}\n")
    raise typer.Exit(code)


def leave(code: int) -> NoReturn:
    """Exit now with ``code``, skipping interpreter teardown (nothing is left to clean up).

    The report is written by then, so only the streams need flushing. torch's teardown is slow,
    and Python puts the default SIGTERM action back during it, so torchrun's SIGTERM would win.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def leave_on_sigterm(code: int) -> None:
    """From now on, SIGTERM ends this process with ``code``."""
    signal.signal(signal.SIGTERM, lambda *_: leave(code))
