"""What a module binds to a name after it defines or imports it, and which code of it can never
run: the two readings that decide whether a ``def`` (or an import) is what a call reaches, and
whether a call in the source is one the program can make. Read from the syntax tree only.

A module-level name is rebound by an assignment (plain, augmented, annotated with a value, or a
walrus), ``del``, a ``def`` or ``class`` of the name, an import that binds it (``import *``
included), a ``for``, ``with`` or ``except`` target, a ``match`` capture, ``type`` alias, a
``global`` declaration inside a function, or by its text: ``setattr(x, "name", ...)``,
``x["name"] = ...`` and ``x.name = ...`` written at module level.

Code that never runs: the body of an ``if``/``while`` whose test is constant-false (``False``,
``0``, ``None``, an empty string, ``TYPE_CHECKING`` imported from :mod:`typing`, and ``not`` /
``and`` / ``or`` of those), the ``else`` of a constant-true ``if``, the branch of a
constant-tested conditional expression not taken, and statements after a ``return``, ``raise``,
``break`` or ``continue`` in the same body.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import NamedTuple

from ppaux.sglang.node_fields import node_fields, statement_fields

__all__ = ["Rebinding", "constant_truth", "live_nodes", "rebinding_after", "rebindings"]

#: Definitions whose body and arguments run in their own scope (or later, when called).
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
#: Statements after which nothing in the same body runs.
_ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
#: Modules whose ``TYPE_CHECKING`` is false when the program runs.
_TYPING = frozenset({"typing", "typing_extensions"})


class Rebinding(NamedTuple):
    """Where (line) and how (a few words) a module binds a name again."""

    line: int
    how: str


def rebinding_after(
    module: ast.Module, name: str, after: ast.stmt | None = None
) -> Rebinding | None:
    """The first binding of ``name`` in ``module``'s own scope after the statement ``after``
    (anywhere when None), other than ``after`` itself; or a ``global name`` in any function,
    which may rebind it whenever the function runs. None when nothing rebinds it."""
    return rebindings(module, {name: after}).get(name)


def rebindings(module: ast.Module, definitions: dict[str, ast.stmt | None]) -> dict[str, Rebinding]:
    """:func:`rebinding_after` for each name of ``definitions`` (name to its statement), in one
    walk over the module's own scope; names nothing rebinds are left out."""
    found: dict[str, Rebinding] = {}
    # Where each definition ends, as (line, column): a binding after it on the same line (a
    # semicolon's second statement) is after it too.
    last = {
        name: (
            (after.end_lineno or after.lineno, after.end_col_offset or 0)
            if after is not None
            else (0, 0)
        )
        for name, after in definitions.items()
    }
    stack: list[ast.AST] = list(reversed(module.body))
    while stack and len(found) < len(definitions):
        node = stack.pop()
        kind = type(node)
        if kind in _MAY_BIND:
            for name, after in definitions.items():
                if name in found or node is after:
                    continue
                line = getattr(node, "lineno", 0)
                place = (line, getattr(node, "col_offset", 0))
                how = _binds(node, name) if place > last[name] else None
                if how is not None:
                    found[name] = Rebinding(line, how)
        if isinstance(node, ast.AnnAssign) and node.value is None:
            stack.append(node.annotation)
            continue  # a bare annotation (``name: T``) binds nothing
        if kind in _SCOPES:
            # A nested function's body matters only through its global declarations.
            for statement in _statements_of(node):
                if isinstance(statement, ast.Global):
                    for name in definitions:
                        if name in statement.names and name not in found:
                            found[name] = Rebinding(
                                statement.lineno, "a global declaration in a function"
                            )
            if kind is not ast.Lambda:
                stack.extend(reversed(_header(node)))
            continue
        for field in node_fields(kind):
            value = getattr(node, field, None)
            if isinstance(value, list):
                stack.extend(item for item in reversed(value) if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return found


#: Node types that may bind a name of the scope they are in.
_MAY_BIND = frozenset(
    {
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.ClassDef,
        ast.Name,
        ast.Import,
        ast.ImportFrom,
        ast.ExceptHandler,
        ast.MatchAs,
        ast.MatchStar,
        ast.MatchMapping,
        ast.Attribute,
        ast.Subscript,
        ast.Call,
        *((ast.TypeAlias,) if hasattr(ast, "TypeAlias") else ()),
    }
)


def _header(node: ast.AST) -> list[ast.AST]:
    """What of a definition runs in the enclosing scope: decorators, defaults, bases."""
    out: list[ast.AST] = list(getattr(node, "decorator_list", ()))
    args = getattr(node, "args", None)
    if isinstance(args, ast.arguments):
        out += [d for d in (*args.defaults, *args.kw_defaults) if d is not None]
    out += list(getattr(node, "bases", ())) + list(getattr(node, "keywords", ()))
    return out


def _statements_of(node: ast.AST) -> list[ast.stmt]:
    """Every statement under ``node`` (its nested definitions' included)."""
    out: list[ast.stmt] = []
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        for field in statement_fields(type(current)):
            items = getattr(current, field, ())
            if not isinstance(items, list):  # a lambda's body: one expression
                continue
            for item in items:
                if isinstance(item, ast.stmt):
                    out.append(item)
                stack.append(item)
    return out


def _binds(node: ast.AST, name: str) -> str | None:
    """How ``node`` itself binds ``name``, in a few words; None when it does not."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (
            f"another {'class' if isinstance(node, ast.ClassDef) else 'def'}"
            if (node.name == name)
            else None
        )
    if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
        return "an assignment"
    if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Del):
        return "a del"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if alias.name == "*":
                return "an import *"
            bound = alias.asname or alias.name.split(".")[0]
            if bound == name:
                return "an import"
        return None
    if isinstance(node, ast.ExceptHandler) and node.name == name:
        return "an except clause"
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
        return "a match capture"
    if isinstance(node, ast.MatchMapping) and node.rest == name:
        return "a match capture"
    if type(node).__name__ == "TypeAlias":
        alias_name = getattr(node, "name", None)
        if isinstance(alias_name, ast.Name) and alias_name.id == name:
            return "a type alias"
    if isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Store):
        return "an attribute assignment"
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        key = node.slice
        if isinstance(key, ast.Constant) and key.value == name:
            return "an item assignment"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in ("setattr", "delattr") and len(node.args) >= 2:
            key = node.args[1]
            if isinstance(key, ast.Constant) and key.value == name:
                return f"a {node.func.id} call"
    return None


# ----------------------------------------------------------------------------------------------
# Code that never runs


def live_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` in source order, leaving out code that never runs (see the
    module's docstring). Iterative, like :func:`ppaux.sglang.syntax.walk`. ``TYPE_CHECKING`` is
    known false only under a module, which says where it comes from."""
    false_names = _type_checking_names(node) if isinstance(node, ast.Module) else frozenset()
    stack: list[ast.AST] = _live_children(node, false_names)[::-1]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(_live_children(node, false_names)[::-1])


def _live_children(node: ast.AST, false_names: frozenset[str]) -> list[ast.AST]:
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        truth = constant_truth(node.test, false_names)
        if truth is not None:
            taken: ast.AST | list[ast.stmt] = node.body if truth else node.orelse
            branch: list[ast.AST] = list(taken) if isinstance(taken, list) else [taken]
            return [node.test, *_reachable(branch)]
    out: list[ast.AST] = []
    bodies = statement_fields(type(node))
    for field in node_fields(type(node)):
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            items = [item for item in value if isinstance(item, ast.AST)]
            # Only a body of statements can end early; an expression list never does.
            out.extend(_reachable(items) if field in bodies else items)
    return out


def _reachable(items: list[ast.AST]) -> list[ast.AST]:
    """``items`` up to and including the first statement after which the body ends."""
    for index, item in enumerate(items):
        if isinstance(item, _ENDS):
            return items[: index + 1]
    return items


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


def _type_checking_names(module: ast.Module) -> frozenset[str]:
    """The names under which ``module`` imports ``TYPE_CHECKING`` from typing at top level,
    unless it binds them again after (a binding before the import is the import's to replace)."""
    imports: dict[str, ast.stmt | None] = {}
    for node in module.body:
        if isinstance(node, ast.ImportFrom) and node.module in _TYPING and not node.level:
            for alias in node.names:
                if alias.name == "TYPE_CHECKING":
                    imports[alias.asname or alias.name] = node
    if not imports:
        return frozenset()
    return frozenset(imports.keys() - rebindings(module, imports).keys())
