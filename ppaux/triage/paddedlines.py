"""The lines around a flattened traceback that a terminal's copy padded to its width.

A paste copied from a terminal whose newlines were lost keeps each line's padding: the line
ends, a run of spaces fills the terminal's width, the next line starts. Around a traceback
flattened so (torchrun's agent failing:
``WARNING:torch.distributed...:Sending process 2 closing signal SIGTERM      ERROR:torch.
distributed...:failed (exitcode: -9) local_rank: 4 (pid: 7) of binary: ...      Traceback (most
recent call last):      File ...``, then its exception and torchrun's failure summary), the
lines that matter are told apart again:

- :func:`head_lines`: the text before the header, a line for each record of Python's logging
  (``LEVEL:logger:message``) that padding begins, and the header on a line of its own where
  padding stands before it (a prefix right before the header, one space apart, is the
  header's own: ``[... TP0] Traceback ...``);
- :func:`exception_lines`: the exception line, and torchrun's failure summary after it (its
  rule of ``=``) on a line of its own, as a summary flattened onto one line is read.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["exception_lines", "head_lines"]

#: A terminal's padding: the spaces that filled a line's end up to the terminal's width.
_PADDING = lazy(r"\s{3,400}")
#: A record of Python's logging in its default format (``WARNING:torch.distributed...:``)
#: after a terminal's padding.
_RECORD = lazy(r"\s{3,400}(?=(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]{1,200}:)")
#: torchrun's failure summary's rule after its exception (``ChildFailedError: ====...``).
_SUMMARY_RULE = lazy(r"\s{1,400}(?====={20,400}\s{1,400}\S{1,400} FAILED)")


def head_lines(head: str) -> list[str]:
    """The lines of ``head``, the text a flattened traceback's header ends (the header
    included): one per padded record, the header alone where padding stands before it;
    ``[head]`` where there is none."""
    header = head.rfind("Traceback")
    before = head[:header] if header > 0 else ""
    if not before or _PADDING.fullmatch(before[-3:]) is None:
        return [head]
    lines = [piece for piece in _RECORD.split(before.rstrip()) if piece.strip()]
    return [*lines, head[header:]]


def exception_lines(line: str) -> list[str]:
    """The exception line ``line`` and torchrun's failure summary flattened after it, each a
    line of its own; ``[line]`` where no summary follows it."""
    rule = _SUMMARY_RULE.search(line)
    if rule is None:
        return [line]
    return [line[: rule.start()].rstrip(), line[rule.end() :]]
