"""Which fields of a syntax tree's node can hold other nodes, per node type, found once: the walks
of the analysis read only those, rather than every field of every node (a name's ``id``, a
constant's value, an import's ``level`` never hold one).
"""

from __future__ import annotations

import ast

__all__ = ["node_fields", "push_children", "statement_fields"]

#: Fields that hold a name, a number, a flag or a constant in every node type that has them.
_SCALAR = frozenset(
    {
        "id",
        "attr",
        "arg",
        "kind",
        "type_comment",
        "level",
        "module",
        "conversion",
        "is_async",
        "asname",
        "tag",
        "lineno",
    }
)
#: Fields that hold a name as a string in the node types listed, and nodes in others.
_NAMED = {
    "name": (
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.ClassDef,
        ast.ExceptHandler,
        ast.MatchAs,
        ast.MatchStar,
        ast.alias,
    ),
    "rest": (ast.MatchMapping,),
}
#: Fields that hold the statements of a body.
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")

_NODE_FIELDS: dict[type, tuple[str, ...]] = {}
_STATEMENT_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(kind: type) -> tuple[str, ...]:
    """The fields of node type ``kind`` that may hold a node or a list of nodes, in order."""
    found = _NODE_FIELDS.get(kind)
    if found is None:
        fields: tuple[str, ...] = getattr(kind, "_fields", ())
        if kind is ast.Constant:
            found = ()
        else:
            found = tuple(
                name
                for name in fields
                if name not in _SCALAR
                and not (name in _NAMED and issubclass(kind, _NAMED[name]))
                and not (name == "names" and kind in (ast.Global, ast.Nonlocal))
            )
        _NODE_FIELDS[kind] = found
    return found


def push_children(stack: list[ast.AST], node: ast.AST, kind: type) -> None:
    """Put the nodes directly under ``node`` (of type ``kind``) on ``stack`` so that popping it
    gives them in the order of its fields: a walk in source order without recursion."""
    for field in node_fields(kind):
        value = getattr(node, field, None)
        if isinstance(value, list):
            stack.extend(item for item in reversed(value) if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            stack.append(value)


def statement_fields(kind: type) -> tuple[str, ...]:
    """The fields of node type ``kind`` that hold statements (``handlers`` and ``cases`` hold
    the clauses that hold them), in order."""
    found = _STATEMENT_FIELDS.get(kind)
    if found is None:
        fields: tuple[str, ...] = getattr(kind, "_fields", ())
        found = tuple(name for name in fields if name in _BODIES)
        _STATEMENT_FIELDS[kind] = found
    return found
