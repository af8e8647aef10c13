"""Faults put into real Python sources, and the verdict CPython gives the result."""

from __future__ import annotations

import ast

__all__ = ["FAULTS", "cpython_verdict", "damaged", "with_fault"]

#: Lines CPython refuses wherever they stand, or only where they stand. (Not an opening triple
#: quote: put before a file's docstrings it turns their text into code and their code into
#: strings, faults all over the file, of which CPython's choice is not followed in every case.)
FAULTS = [
    b"x = = 1",
    b"def broken(:",
    b"else:",
    b"x = (",
    b"x = 1)",
    b"x = 'open",
    b"return = 1",
    b"del f()",
    b"  y = 2",
    b"\ty = 2",
    b"x = 1 $ 2",
    b"print 'hi'",
    b"x = 0123",
    b"pass",
]


def cpython_verdict(data: bytes, where: str) -> tuple[str, str | None]:
    """The status and reason a file of ``data`` must get: from ``ast.parse`` of all of it."""
    try:
        ast.parse(data, where)
    except SyntaxError as exc:
        return "unparsable", f"not valid Python: {exc.msg} (line {exc.lineno})"
    except (ValueError, RecursionError, MemoryError) as exc:
        return "unparsable", f"not valid Python: {type(exc).__name__}: {exc}"
    return "ok", None


def with_fault(data: bytes, fault: bytes, pick: int) -> bytes:
    """``data`` with ``fault`` put in before one of its statements, indented as it is."""
    statements = sorted(
        {
            (node.lineno, node.col_offset)
            for node in ast.walk(ast.parse(data))
            if isinstance(node, ast.stmt)
        }
    )
    row, column = statements[pick % len(statements)]
    lines = data.splitlines(keepends=True)
    indent = lines[row - 1][:column]
    return b"".join([*lines[: row - 1], indent + fault + b"\n", *lines[row - 1 :]])


def damaged(data: bytes, changes: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for at, byte in changes:
        out[at % len(out)] = byte
    return bytes(out)
