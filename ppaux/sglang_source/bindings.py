"""What a module binds to a name after it defines or imports it: the reading that decides
whether a ``def`` (or an import) is what a call reaches (which code can never run is
:mod:`ppaux.sglang_source.live_code`'s). Read from the syntax tree only.

A module-level name is rebound by an assignment (plain, augmented, annotated with a value, or a
walrus), ``del``, a ``def`` or ``class`` of the name, an import that binds it (``import *``
included), a ``for``, ``with`` or ``except`` target, a ``match`` capture, ``type`` alias, a
``global`` declaration inside a function, or by its text: ``setattr(x, "name", ...)``,
``x["name"] = ...`` and ``x.name = ...`` written at module level.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from ppaux.sglang_source.node_fields import push_children, statement_fields
from ppaux.sglang_source.text_rows import on_rows, spans_a_row

__all__ = [
    "BINDING_WORDS",
    "CHECK_BUILTINS",
    "DYNAMIC_WORDS",
    "Rebinding",
    "bindings_anywhere",
    "check_names_rebound",
    "dynamic_write",
    "rebinding_after",
    "rebindings",
]

#: Definitions whose body and arguments run in their own scope (or later, when called).
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


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
    stack: list[ast.AST] = list(reversed(on_rows(module.body, rows)))
    while stack and len(found) < len(definitions):
        node = stack.pop()
        if rows is not None and not spans_a_row(node, rows):
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
    stack: list[ast.AST] = list(reversed(on_rows(module.body, rows)))
    while stack:
        node = stack.pop()
        if rows is not None and not spans_a_row(node, rows):
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
DYNAMIC_WORDS = (
    *sorted(_DYNAMIC_CALLS),
    *sorted(_DYNAMIC_ATTRIBUTES),
    "setattr",
    "delattr",
    "sys",  # its imports under other names
)


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
    places = on_rows(module.body, rows)
    found = _sys_modules_import(places, rows)
    if found is not None:
        return found
    for node in _nodes_on(places, rows):
        how = _dynamic(node, wanted)
        if how is not None:
            return Rebinding(getattr(node, "lineno", 0), how)
    return None


def _nodes_on(places: list[ast.AST], rows: Sequence[int] | None) -> Iterator[ast.AST]:
    stack = places[::-1]
    while stack:
        node = stack.pop()
        if rows is not None and not spans_a_row(node, rows):
            continue
        yield node
        push_children(stack, node, type(node))


def _sys_modules_import(places: list[ast.AST], rows: Sequence[int] | None) -> Rebinding | None:
    """An import that makes ``sys.modules`` reachable under another name: ``import sys as s``
    (``s.modules[...]`` spells no ``sys``) or ``from sys import modules``."""
    for node in _nodes_on(places, rows):
        if isinstance(node, ast.Import) and any(
            alias.name == "sys" and alias.asname not in (None, "sys") for alias in node.names
        ):
            return Rebinding(node.lineno, "sys imported under another name")
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "sys"
            and not node.level
            and any(alias.name in ("modules", "*") for alias in node.names)
        ):
            return Rebinding(node.lineno, "sys.modules imported by name")
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


#: The builtins the checks of add and pop are read through: a module that binds one of these
#: names (in any scope) makes a check mean what its binding does, not what the text says.
CHECK_BUILTINS = ("isinstance", "hasattr", "str", "any", "all", "len")


def check_names_rebound(module: ast.Module, rows: Sequence[int] | None = None) -> Rebinding | None:
    """Where ``module`` binds a name its checks are read through: one of
    :data:`CHECK_BUILTINS`, ``torch`` other than by its first top-level ``import torch``, or an
    attribute of ``torch`` (``torch.is_tensor = ...``, anywhere). None when it binds none.
    ``rows`` as :func:`rebindings` takes them (with ``torch`` and those names spelled there)."""
    first_import = next(
        (
            statement
            for statement in module.body
            if isinstance(statement, ast.Import)
            and any(alias.name == "torch" and alias.asname is None for alias in statement.names)
        ),
        None,
    )
    found = bindings_anywhere(module, CHECK_BUILTINS, rows=rows)
    if found is None:
        found = bindings_anywhere(module, ("torch",), skip=first_import, rows=rows)
    if found is not None:
        return found
    for node in on_rows(module.body, rows):
        for inner in ast.walk(node):
            targets = getattr(inner, "targets", None) or [getattr(inner, "target", None)]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "torch"
                ):
                    return Rebinding(target.lineno, f"torch.{target.attr} set")
    return None
