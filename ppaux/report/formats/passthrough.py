"""Another program's output shown next to a report under ``-f github``, so that none of its
lines is read as a workflow command.

The Actions runner reads a command from any line of a step's stdout or stderr that starts with
``::`` once leading white space is trimmed; it ends lines at ``\\n``, ``\\r\\n`` and a lone
``\\r``. A checked program could print ``::stop-commands::...`` (and every annotation after it
would be ignored) or forge a ``::notice``. :class:`LinePrefix` puts ``target: `` at the start of
each of its lines, as the report's notes carry ``note: ``, so no line of it starts with ``::``.
The output arrives in pieces that may end mid-line: a prefix goes only where a line starts.
"""

from __future__ import annotations

import re

__all__ = ["TARGET_PREFIX", "LinePrefix"]

#: What starts each line of the checked program's output under ``-f github``.
TARGET_PREFIX = b"target: "

# A line end (``\r\n`` is one) followed by more output: a line starts after it.
_LINE_END = re.compile(rb"(\r\n|\r(?!\n)|\n)(?=[\s\S])")


class LinePrefix:
    """Prefixes each line of a stream given in pieces (see the module's text)."""

    def __init__(self, prefix: bytes = TARGET_PREFIX) -> None:
        self._prefix = prefix
        self._at_line_start = True

    def __call__(self, data: bytes) -> bytes:
        """``data`` with the prefix at each line start within it."""
        if not data:
            return data
        body = _LINE_END.sub(lambda end: end.group(1) + self._prefix, data)
        head = self._prefix if self._at_line_start else b""
        # A piece that ends a line leaves the next piece at a line start.
        self._at_line_start = data.endswith((b"\n", b"\r"))
        return head + body
