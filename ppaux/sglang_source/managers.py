"""Whether a ``with`` statement's context manager may swallow the error raised in its body: a
manager swallows it when its ``__exit__`` returns a true value, as ``contextlib.suppress``
does. Read from the syntax tree only, by what the expression names: a manager of the standard
library or torch whose ``__exit__`` returns nothing passes every error on; ``suppress``
swallows; any other (a manager of the file's own, an attribute such as ``self._lock``, a
name the file binds again) may do either, so a check inside it makes the reading unknown.
"""

from __future__ import annotations

import ast
from typing import Literal

from ppaux.sglang_source.bindings import bindings_anywhere
from ppaux.sglang_source.live_code import is_the_module
from ppaux.sglang_source.syntax import raising_ifs

__all__ = ["Managers", "swallow_doubt"]

Kind = Literal["passes", "swallows", "unknown"]

#: Managers whose ``__exit__`` returns None, so that an error raised inside goes on: (module,
#: name) as the module defines them (CPython 3.10-3.13, torch 2.x).
_PASSING = frozenset(
    {
        ("builtins", "open"),
        ("io", "open"),
        ("contextlib", "nullcontext"),
        ("contextlib", "closing"),
        ("threading", "Lock"),
        ("threading", "RLock"),
        ("threading", "Condition"),
        ("threading", "Semaphore"),
        ("threading", "BoundedSemaphore"),
        ("torch", "no_grad"),
        ("torch", "enable_grad"),
        ("torch", "inference_mode"),
    }
)
#: Managers whose ``__exit__`` returns True for the errors they are given.
_SWALLOWING = frozenset({("contextlib", "suppress")})


class Managers:
    """The context managers of one module, told apart by what they name (see the module's
    docstring); each name's bindings are read once."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self._origins: dict[str, tuple[str, str] | None] = {}

    def kind(self, manager: ast.expr) -> Kind:
        """'passes', 'swallows' or 'unknown' for the expression after ``with``."""
        origin = self._origin(manager)
        if origin in _PASSING:
            return "passes"
        if origin in _SWALLOWING:
            return "swallows"
        return "unknown"

    def passes_on(self, manager: ast.expr) -> bool:
        """Whether ``manager`` never swallows an error (for :func:`raising_ifs`)."""
        return self.kind(manager) == "passes"

    def _origin(self, manager: ast.expr) -> tuple[str, str] | None:
        """(module, name) of the manager ``manager`` makes: a call of a name the module imports
        (``open``, ``nullcontext``) or of a module's attribute (``threading.Lock``), or a name
        bound once, at the top of the module, to such a call (``_LOCK = threading.Lock()``)."""
        if isinstance(manager, ast.Name):
            if manager.id not in self._origins:
                self._origins[manager.id] = self._bound_once(manager.id)
            return self._origins[manager.id]
        if not isinstance(manager, ast.Call):
            return None
        func = manager.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if is_the_module(self.module, func.value.id):
                return (func.value.id, func.attr)
            return None
        if isinstance(func, ast.Name):
            return self._imported(func.id)
        return None

    def _imported(self, name: str) -> tuple[str, str] | None:
        """Where the bare name ``name`` comes from: the builtin when the module binds it nowhere;
        ``module.name`` when one top-level ``from module import name`` binds it and nothing
        else does."""
        imports = [
            (statement, statement.module or "")
            for statement in self.module.body
            if isinstance(statement, ast.ImportFrom)
            and statement.level == 0
            and any(a.name == name and a.asname is None for a in statement.names)
        ]
        if not imports:
            if bindings_anywhere(self.module, (name,)) is None:
                return ("builtins", name)
            return None
        if len(imports) != 1 or bindings_anywhere(self.module, (name,), skip=imports[0][0]):
            return None
        return (imports[0][1], name)

    def _bound_once(self, name: str) -> tuple[str, str] | None:
        assigns = [
            statement
            for statement in self.module.body
            if isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == name
        ]
        if len(assigns) != 1:
            return None
        if bindings_anywhere(self.module, (name,), skip=assigns[0].targets[0]):
            return None
        value = assigns[0].value
        return self._origin(value) if isinstance(value, ast.Call) else None


def swallow_doubt(func: ast.FunctionDef | ast.AsyncFunctionDef, managers: Managers) -> str | None:
    """Why what ``func`` refuses cannot be told: a check whose error reaches the caller unless
    a ``with``'s context manager, which may or may not swallow it, does; None when there is
    none."""

    def not_known_to_swallow(manager: ast.expr) -> bool:
        return managers.kind(manager) != "swallows"

    counted = {id(node) for node in raising_ifs(func, managers.passes_on)}
    for node in raising_ifs(func, not_known_to_swallow):
        if id(node) not in counted:
            return (
                f"the check at line {node.lineno} lies in a with statement whose context "
                "manager ppaux cannot tell swallows its error or not"
            )
    return None
