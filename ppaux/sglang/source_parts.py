"""Parse only the parts of a large Python file that an analysis needs.

sglang's ``parallel_state.py`` (140 KB) and ``scheduler_pp_mixin.py`` (80 KB) cost tens of
milliseconds each to turn into a syntax tree, and ppaux needs three functions of one and two
methods of the other. :func:`parse_parts` cuts the file into top-level blocks (and a class into
its methods) by indentation, and parses only the module-level statements and the definitions
asked for: by name, or because their text mentions a given string.

Cutting by indentation can be fooled (a string or a bracket that runs back to column 0), so the
result is checked: every chunk must parse, every requested definition that the text defines must
be found, and every mention in the file must fall inside a parsed chunk. Otherwise the caller
gets None and parses the whole file, so the answer is always the same as a full parse's.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Collection

from ppaux.sglang.bounded_parse import parse_source

__all__ = ["parse_parts"]

_HEADER = re.compile(r"(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _starts_statement(line: str) -> bool:
    # A closing bracket at the block's indentation ends a multi-line signature or literal
    # (``) -> str:`` as black writes it); it continues the block above.
    return _is_code(line) and not line.lstrip().startswith((")", "]", "}"))


def _blocks(lines: list[str], width: int) -> list[tuple[str | None, bool, int, int]]:
    """(name, is_class, start, end) of each block of ``lines`` whose code starts at ``width``.

    A named block is a ``def`` or ``class`` with its decorators, up to the next code line at
    ``width``; the lines between named blocks form unnamed blocks.
    """
    starts = [
        i for i, line in enumerate(lines) if _starts_statement(line) and _indent(line) <= width
    ]
    raw: list[tuple[str | None, bool, int, int]] = []
    pending_decorator: int | None = None
    for k, i in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        text = lines[i][width:] if _indent(lines[i]) == width else lines[i].lstrip()
        if text.startswith("@"):
            if pending_decorator is None:
                pending_decorator = i
            continue
        match = _HEADER.match(text)
        start = pending_decorator if pending_decorator is not None else i
        pending_decorator = None
        if match:
            raw.append((match.group(1), text.startswith("class"), start, end))
        elif raw and raw[-1][0] is None:
            # Consecutive statements (an assignment and its closing bracket, if/else) stay together.
            raw[-1] = (None, False, raw[-1][2], end)
        else:
            raw.append((None, False, start, end))
    if pending_decorator is not None:
        raw.append((None, False, pending_decorator, len(lines)))
    return raw


def _parse_chunk(text: str) -> list[ast.stmt] | None:
    try:
        return parse_source(textwrap.dedent(text)).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def parse_parts(
    source: str,
    names: Collection[str],
    mentions: Collection[str] = (),
) -> ast.Module | None:
    """A module holding the file's module-level statements and the definitions wanted.

    ``names`` are top-level function or class names, bare method names (any class), or
    ``Class.method``; methods come back inside a stand-in class of the same name holding only
    them. Definitions whose text contains one of ``mentions`` are included too. Returns None
    whenever the cut cannot be trusted; then parse the whole file.
    """
    lines = source.splitlines(keepends=True)
    wanted = set(names)
    chunks: list[tuple[int, list[ast.stmt]]] = []
    included_text: list[str] = []
    found: set[str] = set()

    def take(start: int, end: int) -> list[ast.stmt] | None:
        text = "".join(lines[start:end])
        included_text.append(text)
        return _parse_chunk(text)

    for name, is_class, start, end in _blocks(lines, 0):
        text = "".join(lines[start:end])
        mentioned = any(m in text for m in mentions)
        if name is None or name in wanted or (not is_class and mentioned):
            body = take(start, end)
            if body is None:
                return None
            chunks.append((start, body))
            if name is not None:
                found.add(name)
            continue
        if not is_class:
            continue
        methods = _class_methods(lines, start, end, name, wanted, mentions)
        if methods is None:
            return None
        kept, texts, names_found = methods
        included_text.extend(texts)
        found |= names_found
        if kept:
            stand_in = ast.ClassDef(name=name, bases=[], keywords=[], body=kept, decorator_list=[])
            chunks.append((start, [stand_in]))
    # Trust the cut only if it saw everything a full parse would have used.
    joined = "".join(included_text)
    for mention in mentions:
        if source.count(mention) != joined.count(mention):
            return None
    for name in wanted:
        bare = name.rpartition(".")[2]
        if name not in found and re.search(
            rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(bare)}\b", source, re.MULTILINE
        ):
            return None
    body = [stmt for _, stmts in sorted(chunks, key=lambda c: c[0]) for stmt in stmts]
    return ast.Module(body=body, type_ignores=[])


def _class_methods(
    lines: list[str],
    start: int,
    end: int,
    cls: str,
    wanted: set[str],
    mentions: Collection[str],
) -> tuple[list[ast.stmt], list[str], set[str]] | None:
    """The wanted methods of one class block, parsed; None if the class must be parsed whole."""
    body_lines = lines[start:end]
    header = next((i for i, line in enumerate(body_lines) if _HEADER.match(line.lstrip())), None)
    code = [i for i, line in enumerate(body_lines) if i > (header or 0) and _starts_statement(line)]
    if header is None or not code:
        return [], [], set()
    width = _indent(body_lines[code[0]])
    kept: list[ast.stmt] = []
    texts: list[str] = []
    found: set[str] = set()
    for name, _, s, e in _blocks(body_lines[code[0] :], width):
        if name is None:
            continue
        text = "".join(body_lines[code[0] + s : code[0] + e])
        qualified = f"{cls}.{name}"
        if name in wanted or qualified in wanted or any(m in text for m in mentions):
            parsed = _parse_chunk(text)
            if parsed is None:
                return None
            kept.extend(parsed)
            texts.append(text)
            found |= {name, qualified}
    return kept, texts, found
