"""The note a check's report carries where it ran sglang's transport from a path
(``--sglang-path``) whose add and pop are no known release's (:func:`release_note`). The file
is read and parsed, never run, in this process (:func:`ppaux.sglang_source.analyse`)."""

from __future__ import annotations

from ppaux.limits import Limits
from ppaux.observer.options import ObserverOptions
from ppaux.replay import Impl
from ppaux.report import ReportBuilder

__all__ = ["release_note"]


def release_note(report: ReportBuilder, options: ObserverOptions, limits: Limits) -> None:
    """Where the check ran sglang's transport from ``--sglang-path`` and that file's add and
    pop are no known release's, a note says so: its behaviour is a patched, forked or newer
    build's, not a release's."""
    if options.impl.value != Impl.SGLANG.value or options.sglang_path is None:
        return
    from ppaux.errors import PpauxError
    from ppaux.sglang import TransportMatch
    from ppaux.sglang_source import analyse

    try:
        capability = analyse(options.sglang_path, limits)
    except (PpauxError, OSError, ValueError):  # the child said what is wrong with the path
        return
    if capability.match is TransportMatch.MODIFIED:
        report.notes.append(
            f"the sglang transport read from {options.sglang_path} (add and pop) is no known "
            "release's: a patched, forked or newer build; what it does is that build's"
        )
