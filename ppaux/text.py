"""Text taken from a file and shown to a person: escaped so that it stays on its line."""

from __future__ import annotations

__all__ = ["shown_name"]


def shown_name(text: str) -> str:
    """``text`` with control and other unprintable characters escaped.

    Names from a file end up in one-line messages and on terminals, where a newline or an
    escape sequence would forge output.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
