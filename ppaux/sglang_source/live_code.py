"""Which code of a module can never run, read from its syntax tree: the walks that look for a
call the program can make pass over the rest.

Code that never runs: the body of an ``if``/``while`` whose test is constant-false (``False``,
``0``, ``None``, an empty string, ``TYPE_CHECKING`` imported from :mod:`typing`, and ``not`` /
``and`` / ``or`` of those), the ``else`` of a constant-true ``if``, the branch of a
constant-tested conditional expression not taken (``sys.version_info < (3,)`` is one, where
``sys`` is the module), statements after a ``return``, ``raise``,
``break`` or ``continue`` in the same body, or after an ``if`` or ``try`` every way through
which ends so; the body of a ``for`` over an empty literal (``()``, ``[]``, ``{}``, ``""``), and
of a comprehension's element over one; a ``case`` whose constant cannot equal the ``match``'s
constant subject.

A call after ``assert False`` is one that can run: under ``python -O`` the assertion is not
there.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence

from ppaux.sglang_source.bindings import bindings_anywhere, rebindings
from ppaux.sglang_source.node_fields import node_fields, statement_fields
from ppaux.sglang_source.text_rows import on_rows, spans_a_row

__all__ = [
    "constant_truth",
    "is_the_module",
    "live_nodes",
    "reachable",
    "type_checking_false",
    "type_checking_imports",
]

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
    module's docstring). Iterative, like :func:`.syntax.walk`. ``TYPE_CHECKING`` is
    known false only under a module, which says where it comes from (``false_names``, when the
    caller has read them already: :func:`type_checking_imports`).

    ``rows`` (sorted), when given, are the only lines a node sought can be on: a node whose
    lines hold none of them is left out with everything under it (a definition's lines start at
    its first decorator's)."""
    if false_names is None:
        false_names = _type_checking_names(node) if isinstance(node, ast.Module) else frozenset()
    root = node
    known = _Known(node, false_names)
    children = _live_children(node, known)
    if isinstance(node, ast.Module):
        children = on_rows(children, rows)
    in_function = isinstance(node, _FUNCTIONS)
    stack: list[tuple[ast.AST, bool]] = [(child, in_function) for child in children[::-1]]
    read: list[frozenset[str] | None] = []  # the names the root reads, once a local def asks
    dead: set[int] = set()
    while stack:
        node, in_function = stack.pop()
        if id(node) in dead or (rows is not None and not spans_a_row(node, rows)):
            continue
        yield node
        below = _live_children(node, known)
        bodies = _local_function_bodies(node) if in_function else []
        if bodies:
            if not read:
                read.append(_names_read(root))
            names, bound = read[0], _bound_names(node)
            if names is not None and not (bound & names):
                # A function of a function that nothing reads by its name: never called.
                dead.update(id(part) for part in bodies)
        inner = in_function or isinstance(node, _FUNCTIONS)
        if isinstance(node, ast.ClassDef):
            inner = False  # its methods are the class's: called through it
        stack.extend((child, inner) for child in below[::-1])


def _live_children(node: ast.AST, known: _Known) -> list[ast.AST]:
    if isinstance(node, ast.BoolOp):
        # ``a and b`` never runs ``b`` once ``a`` is known false (``or``: true).
        stops = isinstance(node.op, ast.Or)
        values: list[ast.AST] = []
        for operand in node.values:
            values.append(operand)
            if constant_truth(operand, known.false_names, known.module_named) is stops:
                break
        return values
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        truth = constant_truth(node.test, known.false_names, known.module_named)
        if truth is not None:
            taken: ast.AST | list[ast.stmt] = node.body if truth else node.orelse
            branch: list[ast.AST] = list(taken) if isinstance(taken, list) else [taken]
            return [node.test, *reachable(branch)]
    if isinstance(node, (ast.For, ast.AsyncFor)) and _empty(node.iter):
        # Nothing to iterate: the target is never bound and the body never runs.
        return [node.iter, *reachable(node.orelse)]
    if isinstance(node, _COMPREHENSIONS):
        return _live_comprehension(node)
    if isinstance(node, ast.Match):
        return [node.subject, *(case for case in node.cases if _may_match(node.subject, case))]
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


#: Definitions whose bodies run only when they are called.
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
#: Names through which a function's local names are read without being spelled.
_DYNAMIC_READS = frozenset({"locals", "vars", "eval", "exec", "globals", "f_locals", "__dict__"})


def _local_function_bodies(node: ast.AST) -> list[ast.AST]:
    """The bodies of the functions ``node`` (met inside a function) binds to names: an
    undecorated ``def``'s, or a ``lambda``'s assigned to plain names; none for anything else."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list:
        return list(node.body)
    if (
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Lambda)
        and all(isinstance(target, ast.Name) for target in node.targets)
    ):
        return [node.value.body]
    return []


def _bound_names(node: ast.AST) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {node.name}
    return {target.id for target in getattr(node, "targets", ()) if isinstance(target, ast.Name)}


def _names_read(root: ast.AST) -> frozenset[str] | None:
    """Every name ``root`` reads, declares ``global`` or ``nonlocal``, anywhere under it (more
    than the scope of a local function reads: a name read elsewhere keeps it alive); None when
    it may read its names in ways the syntax does not spell (``locals()``, ``vars()``, ``eval``,
    a frame's ``f_locals``)."""
    read: set[str] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.Name):
            if node.id in _DYNAMIC_READS:
                return None
            if not isinstance(node.ctx, ast.Store):
                read.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in _DYNAMIC_READS:
            return None
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            read.update(node.names)
    return frozenset(read)


#: Expressions that build their values by iterating over their generators.
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _empty(node: ast.AST) -> bool:
    """Whether ``node`` is a literal with nothing to iterate over: ``()``, ``[]``, ``{}``,
    ``set()`` is not one (a name that may be bound to anything), ``""`` and ``b""`` are."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return not node.elts
    if isinstance(node, ast.Dict):
        return not node.keys
    return isinstance(node, ast.Constant) and node.value in ("", b"")


def _live_comprehension(
    node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
) -> list[ast.AST]:
    """The parts of a comprehension that can run: all of them, or, where a generator iterates
    over an empty literal, the generators before it and that literal (the element, that
    generator's target and conditions, and the generators after it never run)."""
    for index, generator in enumerate(node.generators):
        if _empty(generator.iter):
            return [*node.generators[:index], generator.iter]
    parts: list[ast.AST] = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    return [*parts, *node.generators]


def _may_match(subject: ast.AST, case: ast.match_case) -> bool:
    """Whether a ``case`` of a ``match`` over ``subject`` may match: False only where both the
    subject and the case's value are constants that cannot compare equal (``case 2:`` over
    ``1``), or identical for ``None``, ``True`` and ``False``."""
    if not isinstance(subject, ast.Constant):
        return True
    pattern = case.pattern
    if isinstance(pattern, ast.MatchSingleton):
        return subject.value is pattern.value
    if isinstance(pattern, ast.MatchValue) and isinstance(pattern.value, ast.Constant):
        try:
            return bool(subject.value == pattern.value.value)
        except Exception:  # a comparison Python may refuse: it may match for all ppaux knows
            return True
    return True


def reachable(items: Sequence[ast.AST]) -> list[ast.AST]:
    """``items`` up to and including the first statement after which the body ends."""
    for index, item in enumerate(items):
        if type(item) in _MAY_END and _always_ends(item):
            return list(items[: index + 1])
    return list(items)


def _always_ends(statement: ast.AST) -> bool:
    """Whether running ``statement`` never goes on to the next one: a ``return``, ``raise``,
    ``break`` or ``continue``; an ``if`` both of whose branches end so; a ``try`` whose
    ``finally`` ends so, or whose body (or ``else``) and every handler do. (A ``with`` never
    counts: its context manager may swallow the exception a ``raise`` in it throws.)"""
    if isinstance(statement, _ENDS):
        return True
    if isinstance(statement, ast.If):
        return bool(statement.orelse) and _ends(statement.body) and _ends(statement.orelse)
    if isinstance(statement, _TRIES):
        handlers = statement.handlers  # type: ignore[attr-defined]
        return _ends(statement.finalbody) or (  # type: ignore[attr-defined]
            (_ends(statement.body) or _ends(statement.orelse))  # type: ignore[attr-defined]
            and all(_ends(handler.body) for handler in handlers)
        )
    return False


def _ends(body: Sequence[ast.AST]) -> bool:
    """Whether a body of statements never finishes: one of them never goes on."""
    return any(_always_ends(statement) for statement in body)


#: ``try`` statements, with ``except*`` clauses too (Python 3.11).
_TRIES: tuple[type, ...] = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
#: The statements :func:`_always_ends` may find end a body (looked up before it is asked).
_MAY_END = frozenset({*_ENDS, ast.If, *_TRIES})


class _Known:
    """What a walk under ``root`` knows of its names: those known false (``false_names``), and,
    asked once a name at the first test that needs it, whether a name (``sys``, ``typing``) is
    the module of that name everywhere in it (:func:`is_the_module`)."""

    def __init__(self, root: ast.AST, false_names: frozenset[str]) -> None:
        self.root = root
        self.false_names = false_names
        self._modules: dict[str, bool] = {}

    def module(self, name: str) -> bool:
        if name not in self._modules:
            self._modules[name] = is_the_module(self.root, name)
        return self._modules[name]

    @property
    def module_named(self) -> Callable[[str], bool] | None:
        """:meth:`module` under a module; None under anything else, which says nothing of
        where its names come from."""
        return self.module if isinstance(self.root, ast.Module) else None


def is_the_module(root: ast.AST, name: str) -> bool:
    """Whether ``name`` is the module ``name`` wherever ``root`` (a module) reads it: one
    top-level ``import name`` binds it, and nothing else does, in any scope."""
    if not isinstance(root, ast.Module):
        return False
    imports = [
        statement
        for statement in root.body
        if isinstance(statement, ast.Import)
        and any(alias.name == name and alias.asname is None for alias in statement.names)
    ]
    if len(imports) != 1:
        return False
    return bindings_anywhere(root, (name,), skip=imports[0]) is None


def _version_truth(test: ast.Compare, module_named: Callable[[str], bool] | None) -> bool | None:
    """The truth of ``sys.version_info OP (a, ...)`` that holds on every Python 3: a tuple whose
    first item is not 3, or is ``(3,)`` or ``()``; None for any other comparison (one that
    depends on the minor version) or where ``sys`` may be another object."""
    left = test.left
    if not (
        len(test.ops) == 1
        and isinstance(left, ast.Attribute)
        and left.attr == "version_info"
        and isinstance(left.value, ast.Name)
        and left.value.id == "sys"
        and isinstance(test.comparators[0], ast.Tuple)
    ):
        return None
    items = test.comparators[0].elts
    if not all(isinstance(item, ast.Constant) and type(item.value) is int for item in items[:1]):
        return None
    first = items[0].value if items else None  # type: ignore[attr-defined]
    if first == 3 and len(items) > 1:
        return None  # depends on the minor version
    if module_named is None or not module_named("sys"):
        return None
    # (3, minor, ...) against (first, ...): decided by 3 against first, or longer than (3,).
    order = 1 if first is None or first == 3 else (first < 3) - (first > 3)
    compare = {ast.Lt: order < 0, ast.LtE: order <= 0, ast.Gt: order > 0, ast.GtE: order >= 0}
    compare.update({ast.Eq: order == 0, ast.NotEq: order != 0})
    return compare.get(type(test.ops[0]))


def constant_truth(
    test: ast.AST,
    false_names: frozenset[str] = frozenset(),
    module_named: Callable[[str], bool] | None = None,
) -> bool | None:
    """True or False when ``test`` is the same every time it runs, as far as its syntax says;
    None when it depends on anything else. ``false_names`` are names known to be false
    (``TYPE_CHECKING`` imported from :mod:`typing`); ``module_named`` says whether a name is
    the module of that name: ``sys.version_info`` compared with ``(3,)`` or a tuple whose first
    item is not 3 is decided where ``sys`` is :mod:`sys`, and ``typing.TYPE_CHECKING`` is false
    where ``typing`` is :mod:`typing` (or nothing says where the names come from)."""
    if isinstance(test, ast.Compare):
        return _version_truth(test, module_named)
    if isinstance(test, (ast.Tuple, ast.List, ast.Set)):
        # A display's truth is its length: known where no ``*x`` may add or take items.
        return None if any(isinstance(e, ast.Starred) for e in test.elts) else bool(test.elts)
    if isinstance(test, ast.Dict):
        return None if None in test.keys else bool(test.keys)
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
        and (module_named is None or module_named(test.value.id))
    ):
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = constant_truth(test.operand, false_names, module_named)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [constant_truth(v, false_names, module_named) for v in test.values]
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
    binding before the import is the import's to replace), nor in any function."""
    return type_checking_false(module, type_checking_imports(module))


def type_checking_false(
    module: ast.Module,
    imports: dict[str, ast.stmt | None],
    rows: Sequence[int] | None = None,
) -> frozenset[str]:
    """Those of ``imports`` (:func:`type_checking_imports`) false wherever ``module`` reads
    them: bound again by no statement after the import at its top level, and in no function
    (a method's own ``TYPE_CHECKING = True`` makes it true there). ``rows`` as
    :func:`ppaux.sglang_source.bindings.rebindings` takes them."""
    if not imports:
        return frozenset()
    again = rebindings(module, imports, rows)
    return frozenset(
        name
        for name, imported in imports.items()
        if name not in again and bindings_anywhere(module, (name,), imported, rows) is None
    )
