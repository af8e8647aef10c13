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
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from ppaux.sglang.node_fields import node_fields, push_children, statement_fields

__all__ = [
    "BINDING_WORDS",
    "DYNAMIC_WORDS",
    "Rebinding",
    "bindings_anywhere",
    "constant_truth",
    "dynamic_write",
    "live_nodes",
    "reachable",
    "rebinding_after",
    "rebindings",
    "type_checking_imports",
]

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


def rebindings(
    module: ast.Module,
    definitions: dict[str, ast.stmt | None],
    rows: Sequence[int] | None = None,
) -> dict[str, Rebinding]:
    """:func:`rebinding_after` for each name of ``definitions`` (name to its statement), in one
    walk over the module's own scope; names nothing rebinds are left out. ``rows`` (sorted),
    when given, are the only lines a binding can be on (:data:`BINDING_WORDS` and the names
    spelled there): nodes on none of them are passed over."""
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
        if rows is not None and not _spans_a_row(node, rows):
            continue
        kind = type(node)
        named = _named(node, kind) if kind in _MAY_BIND else None
        if named is not None and (named == "*" or named in definitions):
            for name, after in definitions.items():
                if name in found or node is after:
                    continue
                line = getattr(node, "lineno", 0)
                place = (line, getattr(node, "col_offset", 0))
                how = _binds(node, name) if place > last[name] else None
                if how is not None:
                    found[name] = Rebinding(line, how)
        if kind is ast.AnnAssign and node.value is None:  # type: ignore[attr-defined]
            stack.append(node.annotation)  # type: ignore[attr-defined]
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
        push_children(stack, node, kind)
    return found


def _named(node: ast.AST, kind: type) -> str | None:
    """The one name ``node`` (of a :data:`_MAY_BIND` type) may bind, read cheaply (``"*"``
    where it may bind any, or several); None where it binds none: most nodes of a module are
    names and attributes read, not stored, and need no closer look."""
    if kind is ast.Name:
        return None if type(node.ctx) is ast.Load else node.id  # type: ignore[attr-defined]
    if kind is ast.Attribute:
        return None if type(node.ctx) is ast.Load else node.attr  # type: ignore[attr-defined]
    if kind is ast.Subscript:
        return None if type(node.ctx) is ast.Load else "*"  # type: ignore[attr-defined]
    if isinstance(node, ast.Call):
        return "*" if _called(node) in ("setattr", "delattr") else None
    return "*"


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
    if isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Del):
        return "an attribute del"
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        key = node.slice
        if isinstance(key, ast.Constant) and key.value == name:
            return "an item assignment"
    if isinstance(node, ast.Call) and _called(node) in ("setattr", "delattr"):
        if len(node.args) >= 2:
            key = node.args[1]
            if isinstance(key, ast.Constant) and key.value == name:
                return f"a {_called(node)} call"
    return None


def bindings_anywhere(
    module: ast.Module,
    names: Iterable[str],
    skip: ast.AST | None = None,
    rows: Sequence[int] | None = None,
) -> Rebinding | None:
    """The first binding of one of ``names`` anywhere in ``module``, in any scope (a function's
    assignment or parameter of the name shadows the module's name in it), other than ``skip``;
    None when there is none. ``rows`` as :func:`rebindings` takes them."""
    wanted = tuple(names)
    stack: list[ast.AST] = [module]
    while stack:
        node = stack.pop()
        if rows is not None and not _spans_a_row(node, rows):
            continue
        kind = type(node)
        if node is not skip:
            if kind is ast.arg and node.arg in wanted:  # type: ignore[attr-defined]
                return Rebinding(getattr(node, "lineno", 0), "a parameter")
            named = _named(node, kind) if kind in _MAY_BIND else None
            if named is not None and (named == "*" or named in wanted):
                for name in wanted:
                    how = _binds(node, name)
                    if how is not None:
                        return Rebinding(getattr(node, "lineno", 0), how)
        push_children(stack, node, kind)
    return None


def _called(call: ast.Call) -> str | None:
    """The name a call calls: ``f`` of ``f(...)`` and of ``x.f(...)``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


#: Words a binding of a name not spelled on its line is written with: ``import *``, a
#: ``setattr`` or ``delattr`` whose key is built (with :data:`DYNAMIC_WORDS`).
BINDING_WORDS = ("import", "setattr", "delattr")
#: Calls that write a module's names by a key or a text the syntax does not spell out.
_DYNAMIC_CALLS = frozenset({"globals", "vars", "locals", "exec", "eval", "__import__"})
#: Attributes through which a module's names are written by a key.
_DYNAMIC_ATTRIBUTES = frozenset({"__dict__", "__setattr__", "__delattr__", "modules"})
#: Words those writes are spelled with (``sys.modules[...]`` included).
DYNAMIC_WORDS = (*sorted(_DYNAMIC_CALLS), *sorted(_DYNAMIC_ATTRIBUTES), "setattr", "delattr")


def dynamic_write(
    module: ast.Module, names: Iterable[str], rows: Sequence[int] | None = None
) -> Rebinding | None:
    """The first place in ``module`` (its functions included: they may run at import) that may
    bind a name of the module by a key or a text its syntax does not spell: ``globals()``,
    ``vars()``, ``locals()``, ``exec``, ``eval``, ``__import__``, a ``__dict__``, ``sys.modules``,
    ``__setattr__``, or a ``setattr``/``delattr`` whose key is not a constant or is one of
    ``names``. None when there is none. ``rows`` (sorted) are
    the only lines one can be on (:data:`DYNAMIC_WORDS` spelled there), when given."""
    wanted = frozenset(names)
    stack: list[ast.AST] = [module]
    while stack:
        node = stack.pop()
        if rows is not None and not _spans_a_row(node, rows):
            continue
        how = _dynamic(node, wanted)
        if how is not None:
            return Rebinding(getattr(node, "lineno", 0), how)
        push_children(stack, node, type(node))
    return None


def _dynamic(node: ast.AST, names: frozenset[str]) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr in _DYNAMIC_ATTRIBUTES:
        if node.attr != "modules" or (isinstance(node.value, ast.Name) and node.value.id == "sys"):
            return f"a write through .{node.attr}"
    if not isinstance(node, ast.Call):
        return None
    called = _called(node)
    if isinstance(node.func, ast.Name) and called in _DYNAMIC_CALLS:
        return f"a {called}() call"
    if called in ("setattr", "delattr"):
        key = node.args[1] if len(node.args) >= 2 else None
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return f"a {called} call with a key built when it runs"
        if key.value in names:
            return f"a {called} call of {key.value}"
    return None


# ----------------------------------------------------------------------------------------------
# Code that never runs


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
    stack: list[ast.AST] = _live_children(node, false_names)[::-1]
    while stack:
        node = stack.pop()
        if rows is not None and not _spans_a_row(node, rows):
            continue
        yield node
        stack.extend(_live_children(node, false_names)[::-1])


def _spans_a_row(node: ast.AST, rows: Sequence[int]) -> bool:
    """Whether ``node``'s lines hold one of ``rows`` (True for a node without lines)."""
    first = getattr(node, "lineno", None)
    last = getattr(node, "end_lineno", None)
    if first is None or last is None:
        return True
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        first = min(first, *(d.lineno for d in decorators))
    at = bisect_left(rows, first)
    return at < len(rows) and rows[at] <= last


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
