"""Digests of Python definitions that ignore layout and stay the same across Python versions.

Two copies of a function compare equal here when their syntax trees are equal: comments,
docstrings, blank lines, line numbers and quoting do not count, every token of code does (names,
strings, annotations, decorators). The digest is built from a canonical dump of our own rather than
``ast.dump``, whose output changed in Python 3.13 (empty fields are omitted) and whose node
fields grow with new releases (``type_params`` in 3.12); empty and missing fields are dropped
here, so 3.10 to 3.13 give the same digest for the same code.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from typing import Any

__all__ = ["definition_digests", "definitions", "node_digest"]

# Nodes whose body may open with a docstring, which does not change what the code does.
_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)

# Attributes that say where a node is, not what it is.
_POSITION_FIELDS = frozenset({"lineno", "col_offset", "end_lineno", "end_col_offset", "ctx"})


def _has_docstring(body: object) -> bool:
    return (
        isinstance(body, list)
        and bool(body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )


def _dump(value: object, out: list[str]) -> None:
    if isinstance(value, ast.AST):
        out.append(type(value).__name__)
        out.append("(")
        for name in value._fields:
            if name in _POSITION_FIELDS:
                continue
            field: Any = getattr(value, name, None)
            if name == "body" and isinstance(value, _DOCUMENTED) and _has_docstring(field):
                field = field[1:]
            if field is None or field == []:
                continue
            out.append(name)
            out.append("=")
            _dump(field, out)
            out.append(",")
        out.append(")")
    elif isinstance(value, list):
        out.append("[")
        for item in value:
            _dump(item, out)
            out.append(",")
        out.append("]")
    else:
        # Constants: the type matters (1 is not True is not '1').
        out.append(f"{type(value).__name__}:{value!r}")


def node_digest(node: ast.AST) -> str:
    """sha256 (hex) of the canonical dump of ``node`` and everything under it."""
    out: list[str] = []
    _dump(node, out)
    return hashlib.sha256("".join(out).encode("utf-8")).hexdigest()


def definitions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, node) for each top-level function and class and each method of one.

    Methods are named ``Class.method``. Order is the file's, so where a name is defined twice the
    later pair is the definition Python binds.
    """
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item


def definition_digests(tree: ast.Module, names: tuple[str, ...] | list[str]) -> dict[str, str]:
    """Digest of each named definition (``func``, ``Class`` or ``Class.method``) in ``tree``.

    A name defined twice gets the digest of its last definition, the one Python binds.
    """
    wanted = set(names)
    return {name: node_digest(node) for name, node in definitions(tree) if name in wanted}
