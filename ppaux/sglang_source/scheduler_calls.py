"""Whether sglang's scheduler calls the transport's add and pop, read from its syntax tree and
said only where the reading is sound: "calls" where a call that can run names the function the
scheduler imports from sglang at its top level and binds nowhere else; "never calls" where the
file does not call it at all; and where neither can be told (an import from outside sglang, or
only inside a block; the name bound again anywhere, a function's own variable of the name
included; a write to the module's names through ``globals()``, ``exec`` and the like; a call in
a generator function, whose body a call of it does not run), the reason.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ppaux.sglang_source.bindings import (
    BINDING_WORDS,
    DYNAMIC_WORDS,
    bindings_anywhere,
    dynamic_write,
)
from ppaux.sglang_source.live_code import type_checking_false, type_checking_imports
from ppaux.sglang_source.source_facts import calls_anywhere, import_source, import_statement
from ppaux.sglang_source.syntax import statements, walk, yield_line
from ppaux.sglang_source.text_rows import rows_naming, spans_a_row

__all__ = ["scheduler_calls"]


def scheduler_calls(
    module: ast.Module, data: bytes | None, names: tuple[str, ...], path: str
) -> tuple[dict[str, bool], str | None]:
    """For each of ``names`` (those the file may spell), whether the scheduler ``module`` (whose
    bytes are ``data``, read at ``path``) calls the transport's function of that name; or ({},
    the reason) when that cannot be told."""
    checking = type_checking_imports(module)
    false_names = type_checking_false(
        module, checking, rows_naming(data, (*checking, *BINDING_WORDS))
    )
    if names:
        dynamic = dynamic_write(module, names, rows_naming(data, DYNAMIC_WORDS))
        if dynamic is not None:
            return {}, (
                f"{path}: line {dynamic.line} ({dynamic.how}) may bind"
                f" {' or '.join(names)} in a way ppaux cannot follow, so a call may not reach"
                " the transport"
            )
    found: dict[str, bool] = {}
    for name in names:
        imported = import_statement(module, name)
        rows = rows_naming(data, (name,))
        if imported is None:
            # Nothing imports it from sglang: a call of the name reaches something else.
            if calls_anywhere(module, (name,), false_names, rows)[name]:
                return {}, (
                    f"{path}: calls {name} without importing it from sglang, so ppaux cannot"
                    " tell what the call reaches"
                )
            found[name] = False
            continue
        why = _import_doubt(module, imported, name, path)
        if why is not None:
            return {}, why
        bound = next(a.asname or a.name for a in imported.names if a.name == name)
        spelled = (bound, name) if bound != name else (name,)
        binding = bindings_anywhere(
            module, spelled, imported, rows_naming(data, (*spelled, *BINDING_WORDS))
        )
        if binding is not None:
            side = "after" if binding.line >= imported.lineno else "before"
            return {}, (
                f"{path}: {bound} is bound again at line {binding.line} ({binding.how})"
                f" {side} its import at line {imported.lineno}, so a call may not reach the"
                " transport"
            )
        rows = rows_naming(data, (bound,))
        found[name] = calls_anywhere(module, (bound,), false_names, rows, methods=False)[bound]
        if found[name]:
            generator = _generator_calling(module, bound, rows)
            if generator is not None:
                return {}, (
                    f"{path}: {generator.name} calls {bound} and is a generator (yield at line"
                    f" {yield_line(generator)}): a call of it runs none of its body, so the"
                    " call of the transport runs only if something iterates it"
                )
    return found, None


def _generator_calling(
    module: ast.Module, name: str, rows: Sequence[int] | None
) -> ast.FunctionDef | None:
    """A generator function of ``module`` (at any depth) that holds a call of ``name``, looked
    for on the lines that spell it (``rows``); None when there is none."""
    for node in statements(module):
        if (
            isinstance(node, ast.FunctionDef)
            and (rows is None or spans_a_row(node, rows))
            and yield_line(node) is not None
            and any(
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Name)
                and inner.func.id == name
                for inner in walk(node)
            )
        ):
            return node
    return None


def _import_doubt(module: ast.Module, imported: ast.ImportFrom, name: str, path: str) -> str | None:
    """Why the import of ``name`` may not bind it to sglang's function when the module runs."""
    if not any(statement is imported for statement in module.body):
        return (
            f"{path}: imports {name} only inside a block (line {imported.lineno}), which may"
            " not run, so a call may not reach the transport"
        )
    if import_source(module, name) is None:
        where = "." * imported.level + (imported.module or "")
        return (
            f"{path}: imports {name} from {where}, not from sglang, so ppaux cannot tell what"
            " a call reaches"
        )
    return None
