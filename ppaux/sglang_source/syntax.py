"""Queries over a Python syntax tree (:mod:`ast`), as the capability analysis asks them of
sglang's source: find a function, follow a string constant, tell whether a test checks that a
value is a tensor, is None or is of a type. Nothing here runs or imports the code it reads.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ppaux.sglang_source.live_code import constant_truth, live_nodes, reachable
from ppaux.sglang_source.node_fields import node_fields, statement_fields

__all__ = [
    "any_function_named",
    "calls_to",
    "checks_isinstance_of",
    "checks_tensor",
    "function_named",
    "is_none_check",
    "key_prefix",
    "names_in",
    "negates",
    "parameters",
    "raising_ifs",
    "refusing_parts",
    "resolve",
    "statements",
    "string_constants",
    "suspended_call",
    "walk",
    "yield_line",
]


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` in source order (``ast.walk`` is breadth-first).

    Iterative: a recursive generator costs each node one step per level above it, which a large
    source file turns into seconds. Each node's fields are read directly, which costs about a
    third of what :func:`ast.iter_child_nodes` does.
    """
    stack = _children(node)[::-1]
    while stack:
        child = stack.pop()
        yield child
        stack.extend(_children(child)[::-1])


def _children(node: ast.AST) -> list[ast.AST]:
    """The nodes directly under ``node``, in the order of its fields (as
    :func:`ast.iter_child_nodes` gives them)."""
    out: list[ast.AST] = []
    for name in node_fields(type(node)):
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend(item for item in value if isinstance(item, ast.AST))
    return out


def statements(node: ast.AST) -> Iterator[ast.stmt]:
    """Every statement under ``node`` in source order (those in the bodies of ``except`` and
    ``case`` clauses included), never looking inside an expression, where no statement lies:
    a definition or an import is found at a fraction of what :func:`walk` costs."""
    stack = _statements_under(node)[::-1]
    while stack:
        statement = stack.pop()
        yield statement
        stack.extend(_statements_under(statement)[::-1])


def _statements_under(node: ast.AST) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for name in statement_fields(type(node)):
        value = getattr(node, name, None)
        if not isinstance(value, list):
            continue
        for item in value:
            if isinstance(item, ast.stmt):
                out.append(item)
            elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                out.extend(item.body)
    return out


def function_named(module: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The last top-level definition of ``name`` (the one Python binds)."""
    found = None
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
    return found


def any_function_named(
    module: ast.Module, name: str
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The last definition of ``name`` at any depth (methods of mixins included)."""
    found = None
    for node in statements(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
    return found


def suspended_call(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """Why calling ``func`` runs none of its body, or None: an ``async def`` (a call makes a
    coroutine) or a generator (a call makes a generator object). A function is a generator
    when any ``yield`` or ``yield from`` lies in its own scope, reachable or not (``if False:
    yield`` is enough): the bodies of nested functions, lambdas and classes are their own
    scopes, while their decorators, defaults, annotations and bases are the function's."""
    if isinstance(func, ast.AsyncFunctionDef):
        return "is an async def: a call makes a coroutine and runs none of its body"
    line = yield_line(func)
    if line is not None:
        return (
            f"is a generator (yield at line {line}): a call makes a generator "
            "object and runs none of its body"
        )
    return None


def yield_line(func: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """The line of a ``yield`` or ``yield from`` in ``func``'s own scope (see
    :func:`suspended_call`), which makes it a generator; None when there is none."""
    pending: list[ast.AST] = [*func.body]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return node.lineno
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending += [*node.decorator_list, node.args]
            pending += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.Lambda):
            pending.append(node.args)
        elif isinstance(node, ast.ClassDef):
            pending += [*node.decorator_list, *node.bases, *node.keywords]
        else:
            pending += ast.iter_child_nodes(node)
    return None


def string_constants(module: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments."""
    consts: dict[str, str] = {}
    for node in module.body:
        targets: list[ast.expr] = []
        value = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for target in targets:
                if isinstance(target, ast.Name):
                    consts[target.id] = value.value
    return consts


def parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The names of ``func``'s parameters, positional-only and keyword-only ones included."""
    args = func.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def names_in(node: ast.AST) -> set[str]:
    """Every bare name that ``node`` is or holds."""
    return {n.id for n in walk(node) if isinstance(n, ast.Name)} | (
        {node.id} if isinstance(node, ast.Name) else set()
    )


def raising_ifs(
    scope: ast.AST, passes_on: Callable[[ast.expr], bool] | None = None
) -> Iterator[ast.If]:
    """``if`` statements under ``scope`` whose own body raises, in code that can run (an ``if``
    under ``if False:`` or after a ``return`` checks nothing, nor a ``raise`` after a
    ``continue``), and whose error reaches the caller: one inside a ``try`` with a handler
    that may catch it and go on (one that does not always raise again), inside a ``try``
    whose ``finally`` holds a ``return``, ``break`` or ``continue`` (which drops the error), or
    inside a ``with`` whose context manager may swallow it (``contextlib.suppress`` does)
    checks nothing either. ``passes_on(manager)`` says of a ``with``'s context manager that it
    never swallows an error; without it, every one may."""
    nodes = list(live_nodes(scope))
    dead = {
        id(node)
        for node in nodes
        if isinstance(node, ast.If) and constant_truth(node.test) is False
    }
    guarded = {
        id(inner)
        for node in nodes
        for statement in _swallowing_parts(node, passes_on)
        for inner in [statement, *walk(statement)]
    }
    for node in nodes:
        if (
            isinstance(node, ast.If)
            and id(node) not in guarded
            and id(node) not in dead  # ``if 0 and ...:`` refuses nothing
            and any(isinstance(s, ast.Raise) for s in reachable(node.body))
        ):
            yield node


def _swallowing_parts(node: ast.AST, passes_on: Callable[[ast.expr], bool] | None) -> list[ast.AST]:
    """The statements under ``node`` whose error may stop there and not reach the caller: the
    body of a ``try`` with a handler that may not raise again; the body, handlers and ``else``
    of a ``try`` whose ``finally`` may leave it (a ``return``, ``break`` or ``continue`` in it
    drops the error being raised); the body of a ``with`` one of whose context managers may
    swallow an error."""
    if isinstance(node, (ast.With, ast.AsyncWith)):
        if passes_on is not None and all(passes_on(item.context_expr) for item in node.items):
            return []
        return list(node.body)
    if not isinstance(node, _TRIES):
        return []
    parts: list[ast.AST] = []
    handlers = getattr(node, "handlers", ())
    if handlers and not all(_raises_again(handler) for handler in handlers):
        parts += getattr(node, "body", ())
    if _may_leave(getattr(node, "finalbody", [])):
        parts += [*getattr(node, "body", ()), *getattr(node, "handlers", ())]
        parts += getattr(node, "orelse", ())
    return parts


def _raises_again(handler: ast.ExceptHandler) -> bool:
    """Whether an ``except`` clause always raises (the error it caught, ``raise``, or another,
    ``raise X from error``): its last statement that runs is a ``raise`` of its own, and no
    ``return``, ``break`` or ``continue`` in it can leave first."""
    body = reachable(handler.body)
    return bool(body) and isinstance(body[-1], ast.Raise) and not _may_leave(handler.body)


def _may_leave(body: list[ast.stmt]) -> bool:
    """Whether a ``finally`` body holds a ``return``, ``break`` or ``continue`` of its own (those
    of a nested function or class are not its)."""
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Return, ast.Break, ast.Continue)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    pending.append(child)
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    pending += child.body
    return False


#: ``try`` statements, with ``except*`` clauses too (Python 3.11).
_TRIES: tuple[type, ...] = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))


def refusing_parts(test: ast.AST) -> list[ast.AST]:
    """The parts of an ``if``'s test each of which alone makes it true: the operands of an
    ``or`` (and of ``not (a and b)``, read as ``not a or not b``), each read so in turn; a
    conjunction (``a and b``) is true only with both, so no check of ``a`` or ``b`` alone lies
    in it, and is left out."""
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.Or):
            return [part for value in test.values for part in refusing_parts(value)]
        return []
    if (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and isinstance(test.operand, ast.BoolOp)
        and isinstance(test.operand.op, ast.And)
    ):
        negated = [ast.UnaryOp(op=ast.Not(), operand=value) for value in test.operand.values]
        return [part for value in negated for part in refusing_parts(value)]
    return [test]


def calls_to(test: ast.AST, name: str) -> list[ast.Call]:
    """Calls in ``test`` to a function or method called ``name``."""
    found = []
    for node in [test, *walk(test)]:
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == name) or (
                isinstance(func, ast.Attribute) and func.attr == name
            ):
                found.append(node)
    return found


def _is_var(expr: ast.AST, var: str | None) -> bool:
    """True when ``expr`` is the name ``var`` itself (any expression if None)."""
    return var is None or (isinstance(expr, ast.Name) and expr.id == var)


def _types_named(expr: ast.AST) -> set[str]:
    """The type names an isinstance second argument gives: ``T``, ``mod.T`` (as ``T`` and
    ``mod.T``) or a tuple of them; a call or any other expression gives none."""
    if isinstance(expr, ast.Tuple):
        return set().union(*(_types_named(e) for e in expr.elts)) if expr.elts else set()
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        return {expr.attr, f"{expr.value.id}.{expr.attr}"}
    return set()


def checks_tensor(test: ast.AST, var: str | None = None) -> bool:
    """True when ``test`` asks whether ``var`` (any value if None) is a tensor: calls
    ``torch.is_tensor(var)`` (or ``is_tensor``), or ``isinstance(var, torch.Tensor)`` (``Tensor``,
    or a tuple holding it). A call that makes a tensor (``torch.Tensor()``) or a type whose name
    only holds the word (``TensorMetadata``) is no such test."""
    for call in calls_to(test, "is_tensor"):
        func = call.func
        if isinstance(func, ast.Attribute) and not (
            isinstance(func.value, ast.Name) and func.value.id == "torch"
        ):
            continue
        if len(call.args) == 1 and _is_var(call.args[0], var):
            return True
    for call in calls_to(test, "isinstance"):
        if isinstance(call.func, ast.Name) and len(call.args) == 2 and _is_var(call.args[0], var):
            if {"torch.Tensor", "Tensor"} & _types_named(call.args[1]):
                return True
    return False


def checks_isinstance_of(test: ast.AST, var: str, kind: str | None = None) -> bool:
    """True when ``test`` calls ``isinstance(var, kind)`` (any type if ``kind`` is None; a tuple
    holding it too), or ``hasattr(var, ...)`` when ``kind`` is None."""
    for call in calls_to(test, "isinstance"):
        if isinstance(call.func, ast.Name) and len(call.args) == 2 and _is_var(call.args[0], var):
            named = _types_named(call.args[1])
            if named and (kind is None or kind in named):
                return True
    if kind is None:
        for call in calls_to(test, "hasattr"):
            if isinstance(call.func, ast.Name) and call.args and _is_var(call.args[0], var):
                return True
    return False


def is_none_check(test: ast.AST, var: str | None = None) -> bool:
    """True when ``test`` compares ``var`` (any name if None) with None using ``is``."""
    for node in [test, *walk(test)]:
        if isinstance(node, ast.Compare) and any(isinstance(o, (ast.Is, ast.Eq)) for o in node.ops):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and o.value is None for o in operands):
                names = set().union(*(names_in(o) for o in operands))
                if var is None or var in names:
                    return True
    return False


def negates(test: ast.AST, var: str) -> bool:
    """True when ``test`` contains ``not var`` (an emptiness or falsiness check)."""
    return any(
        isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and names_in(n.operand) == {var}
        for n in [test, *walk(test)]
    )


def resolve(expr: ast.AST, consts: dict[str, str]) -> str | None:
    """The string ``expr`` stands for: a literal, or a name of ``consts``; else None."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name):
        return consts.get(expr.id)
    if isinstance(expr, ast.FormattedValue) and expr.conversion == -1 and expr.format_spec is None:
        return resolve(expr.value, consts)
    return None


def key_prefix(expr: ast.AST, name_var: str, consts: dict[str, str]) -> str | None:
    """The text before ``name_var`` in a key built as an f-string, ``prefix + name`` or a join."""
    if isinstance(expr, ast.JoinedStr):
        parts: list[str] = []
        for value in expr.values:
            if isinstance(value, ast.FormattedValue) and names_in(value.value) == {name_var}:
                return "".join(parts)
            text = resolve(value, consts)
            if text is None:
                return None
            parts.append(text)
        return None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        if names_in(expr.right) == {name_var}:
            return resolve(expr.left, consts)
    return None
