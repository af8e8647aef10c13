"""Which code of a module can never run, read from its syntax tree: the walks that look for a
call the program can make pass over the rest.

Code that never runs: the body of an ``if``/``while`` whose test is constant-false (``False``,
``0``, ``None``, an empty string, ``TYPE_CHECKING`` imported from :mod:`typing`, and ``not`` /
``and`` / ``or`` of those), the ``else`` of a constant-true ``if``, the branch of a
constant-tested conditional expression not taken, and statements after a ``return``, ``raise``,
``break`` or ``continue`` in the same body.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from ppaux.sglang.bindings import rebindings
from ppaux.sglang.node_fields import node_fields, statement_fields
from ppaux.sglang.text_rows import on_rows, spans_a_row

__all__ = ["constant_truth", "live_nodes", "reachable", "type_checking_imports"]

#: Statements after which nothing in the same body runs.
_ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
#: Modules whose ``TYPE_CHECKING`` is false when the program runs.
_TYPING = frozenset({"typing", "typing_extensions"})


def live_nodes(
    node: ast.AST,
    false_names: frozenset[str] | None = None,
    rows: Sequence[int] | None = None,
) -> Iterator[ast.AST]:
    """Every node under ``node`` in source order, leaving out code that never runs (see the
    module's docstring). Iterative, like :func:`ppaux.sglang.syntax.walk`. ``TYPE_CHECKING`` is
    known false only under a module, which says where it comes from (``false_names``, when the
    caller has read them already: :func:`type_checking_imports`).

    ``rows`` (sorted), when given, are the only lines a node sought can be on: a node whose
    lines hold none of them is left out with everything under it (a definition's lines start at
    its first decorator's)."""
    if false_names is None:
        false_names = _type_checking_names(node) if isinstance(node, ast.Module) else frozenset()
    children = _live_children(node, false_names)
    if isinstance(node, ast.Module):
        children = on_rows(children, rows)
    stack: list[ast.AST] = children[::-1]
    while stack:
        node = stack.pop()
        if rows is not None and not spans_a_row(node, rows):
            continue
        yield node
        stack.extend(_live_children(node, false_names)[::-1])


def _live_children(node: ast.AST, false_names: frozenset[str]) -> list[ast.AST]:
    if isinstance(node, ast.BoolOp):
        # ``a and b`` never runs ``b`` once ``a`` is known false (``or``: true).
        stops = isinstance(node.op, ast.Or)
        values: list[ast.AST] = []
        for operand in node.values:
            values.append(operand)
            if constant_truth(operand, false_names) is stops:
                break
        return values
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        truth = constant_truth(node.test, false_names)
        if truth is not None:
            taken: ast.AST | list[ast.stmt] = node.body if truth else node.orelse
            branch: list[ast.AST] = list(taken) if isinstance(taken, list) else [taken]
            return [node.test, *reachable(branch)]
    out: list[ast.AST] = []
    bodies = statement_fields(type(node))
    for field in node_fields(type(node)):
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            items = [item for item in value if isinstance(item, ast.AST)]
            # Only a body of statements can end early; an expression list never does.
            out.extend(reachable(items) if field in bodies else items)
    return out


def reachable(items: Sequence[ast.AST]) -> list[ast.AST]:
    """``items`` up to and including the first statement after which the body ends."""
    for index, item in enumerate(items):
        if isinstance(item, _ENDS):
            return list(items[: index + 1])
    return list(items)


def constant_truth(test: ast.AST, false_names: frozenset[str] = frozenset()) -> bool | None:
    """True or False when ``test`` is the same every time it runs, as far as its syntax says;
    None when it depends on anything else. ``false_names`` are names known to be false
    (``TYPE_CHECKING`` imported from :mod:`typing`)."""
    if isinstance(test, ast.Constant):
        value = test.value
        if value is None or isinstance(value, (bool, int, float, str, bytes)):
            return bool(value)
        return None
    if isinstance(test, ast.Name) and test.id in false_names:
        return False
    if (
        isinstance(test, ast.Attribute)
        and test.attr == "TYPE_CHECKING"
        and isinstance(test.value, ast.Name)
        and test.value.id in _TYPING
    ):
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = constant_truth(test.operand, false_names)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [constant_truth(v, false_names) for v in test.values]
        if isinstance(test.op, ast.And):
            if False in values:
                return False
            return True if all(v is True for v in values) else None
        if True in values:
            return True
        return False if all(v is False for v in values) else None
    return None


def type_checking_imports(module: ast.Module) -> dict[str, ast.stmt | None]:
    """The names under which ``module`` imports ``TYPE_CHECKING`` from typing at top level,
    each with its import."""
    imports: dict[str, ast.stmt | None] = {}
    for node in module.body:
        if isinstance(node, ast.ImportFrom) and node.module in _TYPING and not node.level:
            for alias in node.names:
                if alias.name == "TYPE_CHECKING":
                    imports[alias.asname or alias.name] = node
    return imports


def _type_checking_names(module: ast.Module) -> frozenset[str]:
    """Those of :func:`type_checking_imports` that ``module`` does not bind again after (a
    binding before the import is the import's to replace)."""
    imports = type_checking_imports(module)
    if not imports:
        return frozenset()
    return frozenset(imports.keys() - rebindings(module, imports).keys())
