"""What the functions of sglang's source say, one question each: what the sender's add and the
receiver's pop refuse and the key prefix they build, where the scheduler imports the transport
from and whether it calls it, the keys a message dict is built with or indexed by, what the wire
does with a non-tensor value. Each takes a function's (or a module's) syntax tree; the queries
underneath are :mod:`ppaux.sglang_source.syntax`'s.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from ppaux.sglang_source.live_code import live_nodes
from ppaux.sglang_source.syntax import (
    calls_to,
    checks_isinstance_of,
    checks_tensor,
    is_none_check,
    key_prefix,
    names_in,
    negates,
    parameters,
    raising_ifs,
    refusing_parts,
    resolve,
    statements,
    walk,
)

#: Whether a ``with``'s context manager never swallows an error (see raising_ifs).
PassesOn = Callable[[ast.expr], bool]

__all__ = [
    "calls_anywhere",
    "dict_keys",
    "import_source",
    "import_statement",
    "indexed_keys",
    "non_tensor_values",
    "receiver_checks",
    "receiver_prefix",
    "sender_checks",
    "sender_prefix",
]


def sender_checks(
    add: ast.FunctionDef | ast.AsyncFunctionDef, passes_on: PassesOn | None = None
) -> dict[str, bool]:
    """What add refuses. The per-item checks live in the loop over ``to_pp_tensors().items()``.
    ``passes_on`` tells the ``with`` statements whose error reaches the caller (see
    :func:`ppaux.sglang_source.syntax.raising_ifs`)."""
    params = parameters(add)
    output = params[1] if len(params) > 1 else None
    checks = {
        "protocol": False,
        "non_empty": False,
        "names": False,
        "tensors": False,
        "duplicates": False,
    }
    loop = _items_loop(add)
    name_var, tensor_var = _loop_vars(loop) if loop is not None else (None, None)
    in_loop = {id(n) for n in walk(loop)} if loop is not None else set()
    written = params[0] if params else None
    for node, test in _refusing_tests(add, passes_on):
        if id(node) in in_loop:
            if name_var and (
                checks_isinstance_of(test, name_var, "str") or negates(test, name_var)
            ):
                checks["names"] = True
            if tensor_var and checks_tensor(test, tensor_var):
                checks["tensors"] = True
            if written and _asks_membership_in(test, written):
                checks["duplicates"] = True
        else:
            if output and checks_isinstance_of(test, output):
                checks["protocol"] = True
            elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                checks["non_empty"] = True
    return checks


def _refusing_tests(
    func: ast.FunctionDef | ast.AsyncFunctionDef, passes_on: PassesOn | None
) -> list[tuple[ast.If, ast.AST]]:
    """Each ``if`` of :func:`raising_ifs` with each part of its test that alone makes it raise
    (:func:`ppaux.sglang_source.syntax.refusing_parts`)."""
    return [
        (node, part) for node in raising_ifs(func, passes_on) for part in refusing_parts(node.test)
    ]


def _asks_membership_in(test: ast.AST, container: str) -> bool:
    """Whether ``test`` asks if something is in the dict named ``container`` (``key in
    tensors``): a key looked for in another dict is no check on the one written."""
    return any(
        isinstance(n, ast.Compare)
        and any(
            isinstance(op, ast.In) and isinstance(right, ast.Name) and right.id == container
            for op, right in zip(n.ops, n.comparators, strict=True)
        )
        for n in [test, *walk(test)]
    )


def _items_loop(func: ast.AST) -> ast.For | None:
    for node in walk(func):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call):
            call = node.iter.func
            if isinstance(call, ast.Attribute) and call.attr == "items":
                return node
    return None


def _loop_vars(loop: ast.For) -> tuple[str | None, str | None]:
    target = loop.target
    if isinstance(target, ast.Tuple) and len(target.elts) == 2:
        first, second = target.elts
        return (
            first.id if isinstance(first, ast.Name) else None,
            second.id if isinstance(second, ast.Name) else None,
        )
    return None, None


def receiver_checks(
    pop: ast.FunctionDef | ast.AsyncFunctionDef, passes_on: PassesOn | None = None
) -> dict[str, bool]:
    """What pop refuses before it hands the tensors to the observer (``passes_on`` as
    :func:`sender_checks` takes it)."""
    params = parameters(pop)
    observer = params[1] if len(params) > 1 else None
    checks = {"observer": False, "protocol": False, "tensors": False, "reconstructed": False}
    for _, test in _refusing_tests(pop, passes_on):
        if checks_tensor(test):
            checks["tensors"] = True
        elif observer and is_none_check(test, observer):
            checks["observer"] = True
        elif observer and checks_isinstance_of(test, observer):
            checks["protocol"] = True
        elif is_none_check(test):
            checks["reconstructed"] = True
    return checks


def sender_prefix(add: ast.AST, consts: dict[str, str]) -> str | None:
    """The prefix add puts before each name it stores (its ``f"{PREFIX}{name}"`` key), or None
    where the keys are built in a way this cannot follow."""
    loop = _items_loop(add)
    if loop is None:
        return None
    name_var, _ = _loop_vars(loop)
    if name_var is None:
        return None
    assigned: dict[str, ast.AST] = {}
    for node in walk(add):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                assigned[target.id] = node.value
    for node in walk(loop):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            key: ast.AST = node.slice
            if isinstance(key, ast.Name) and key.id in assigned:
                key = assigned[key.id]
            prefix = key_prefix(key, name_var, consts)
            if prefix is not None:
                return prefix
    return None


def receiver_prefix(pop: ast.AST, consts: dict[str, str]) -> str | None:
    """The prefix pop looks for (its ``key.startswith(PREFIX)``), or None."""
    for call in calls_to(pop, "startswith"):
        if len(call.args) == 1:
            return resolve(call.args[0], consts)
    return None


# ----------------------------------------------------------------------------------------------
# The scheduler and the logprob helpers


def import_statement(module: ast.Module, name: str) -> ast.ImportFrom | None:
    """The scheduler's first ``from X import name``."""
    for node in statements(module):
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            return node
    return None


def import_source(module: ast.Module, name: str, package: str = "srt/managers") -> str | None:
    """The sglang-relative file (``a/b.py``) that the first ``from X import name`` of
    ``module``, a module of sglang's ``package`` (the scheduler's by default), names; None when
    X lies outside sglang."""
    for node in statements(module):
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            dotted = node.module or ""
            if node.level:
                base = ["sglang", *package.split("/")]
                if node.level - 1 >= len(base):
                    return None
                base = base[: len(base) - (node.level - 1)]
                dotted = ".".join([*base, *([dotted] if dotted else [])])
            if dotted.startswith("sglang."):
                return dotted[len("sglang.") :].replace(".", "/") + ".py"
            return None
    return None


def calls_anywhere(
    module: ast.Module,
    names: tuple[str, ...],
    false_names: frozenset[str] | None = None,
    rows: Sequence[int] | None = None,
    *,
    methods: bool = True,
) -> dict[str, bool]:
    """For each of ``names``, whether ``module`` calls a function (or a method, where
    ``methods``) of that name in code that can run (one walk over the module for all of them):
    a call under ``if False:``, ``if TYPE_CHECKING:``, after a ``return`` or after ``False and``
    is none. ``false_names`` and ``rows`` are :func:`ppaux.sglang_source.bindings.live_nodes`'s
    (``rows``: the lines that spell a name)."""
    found = dict.fromkeys(names, False)
    if not names:
        return found
    for node in live_nodes(module, false_names, rows):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                called: str | None = func.id
            else:
                called = getattr(func, "attr", None) if methods else None
            if called in found:
                found[called] = True
    return found


def dict_keys(func: ast.AST) -> tuple[list[str], list[str]]:
    """String keys a function puts in dicts it builds: (unconditional, under an ``if``).

    A dict is a ``{...}`` literal that is not an argument of a call other than ``dict(...)``
    or ``.update(...)`` (``Counter({...})`` builds no message), and an item stored on a name
    not made by such a call (``counts = Counter(); counts["k"] += 1`` stores no key)."""
    always: list[str] = []
    optional: list[str] = []
    others = _made_by_other_calls(func)

    def visit(node: ast.AST, conditional: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and not _builds_dict(child):
                visit(child.func, conditional)  # its arguments are another object's
                continue
            if isinstance(child, ast.Dict):
                for key in child.keys:
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        (optional if conditional else always).append(key.value)
            if (
                isinstance(child, ast.Subscript)
                and isinstance(child.ctx, ast.Store)
                and not (isinstance(child.value, ast.Name) and child.value.id in others)
            ):
                key = child.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    (optional if conditional else always).append(key.value)
            inner = conditional or (isinstance(node, ast.If) and child is not node.test)
            visit(child, inner)

    visit(func, False)
    seen: set[str] = set()
    always = _first_of_each(always, seen)
    optional = _first_of_each(optional, seen)
    return always, optional


def _builds_dict(call: ast.Call) -> bool:
    """``dict(...)`` or ``x.update(...)``: a call whose literal arguments are the dict's."""
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "dict") or (
        isinstance(func, ast.Attribute) and func.attr == "update"
    )


def _made_by_other_calls(func: ast.AST) -> set[str]:
    """Names only ever assigned the result of a call other than ``dict(...)``."""
    made: set[str] = set()
    other: set[str] = set()
    for node in walk(func):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    value = node.value
                    is_other = isinstance(value, ast.Call) and not _builds_dict(value)
                    (made if is_other else other).add(target.id)
    return made - other


def _first_of_each(keys: list[str], seen: set[str]) -> list[str]:
    """``keys`` without those in ``seen`` or repeated, in order; adds them to ``seen``."""
    out = []
    for key in keys:
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def indexed_keys(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[str], list[str]]:
    """Keys the function indexes on its first parameter: (always, only under an ``if``)."""
    params = parameters(func)
    if not params:
        return [], []
    message = params[0]
    always: list[str] = []
    guarded: list[str] = []

    def visit(node: ast.AST, conditional: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.Subscript)
                and isinstance(child.value, ast.Name)
                and child.value.id == message
                and isinstance(child.slice, ast.Constant)
                and isinstance(child.slice.value, str)
            ):
                target = guarded if conditional else always
                if child.slice.value not in always and child.slice.value not in target:
                    target.append(child.slice.value)
            # The test of an if runs every time; its body only sometimes.
            inner = conditional or (
                isinstance(node, (ast.If, ast.IfExp)) and child is not node.test
            )
            visit(child, inner)

    visit(func, False)
    return always, [k for k in guarded if k not in always]


# ----------------------------------------------------------------------------------------------
# The wire


def non_tensor_values(split: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """``pickled`` when the else branch of the tensor test keeps ``(key, value)`` as it is."""
    loop = _items_loop(split)
    if loop is None:
        return "other"
    key_var, value_var = _loop_vars(loop)
    for node in walk(loop):
        if isinstance(node, ast.If) and checks_tensor(node.test, value_var):
            for call in (n for s in node.orelse for n in [s, *walk(s)] if isinstance(n, ast.Call)):
                if isinstance(call.func, ast.Attribute) and call.func.attr == "append":
                    arg = call.args[0] if call.args else None
                    if (
                        isinstance(arg, ast.Tuple)
                        and len(arg.elts) == 2
                        and names_in(arg.elts[0]) == {key_var}
                        and isinstance(arg.elts[1], ast.Name)
                        and arg.elts[1].id == value_var
                    ):
                        return "pickled"
    return "other"
