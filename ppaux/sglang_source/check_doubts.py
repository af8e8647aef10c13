"""Why what a function's checks refuse cannot be read from their text: a name a check reads is
bound again or deleted after the check (``tensor = torch.zeros(1)``, ``del tensors[key]``), so
the value the function goes on to use is not the one the check looked at. Read from the syntax
tree only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ppaux.sglang_source.syntax import names_in, parameters, raising_ifs, walk

__all__ = ["changed_after_check"]


def changed_after_check(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    passes_on: Callable[[ast.expr], bool] | None = None,
) -> str | None:
    """Why ``func``'s checks (its ``if`` statements that raise) may not hold for the values it
    uses, in a few words naming the line; None when each name a check reads is bound once in
    the function (a parameter, an assignment or a loop's target) and neither bound again nor
    deleted after the check. A binding counts wherever it lies (in a loop, a nested function),
    so a reading that cannot tell is never taken for one that can. ``passes_on`` as
    :func:`ppaux.sglang_source.syntax.raising_ifs` takes it."""
    checks = list(raising_ifs(func, passes_on))
    if not checks:
        return None
    read = [(_end(check), names_in(check.test), check.lineno) for check in checks]
    checked = set().union(*(names for _, names, _ in read))
    bound: dict[str, list[int]] = {}
    for name in parameters(func):
        bound.setdefault(name, []).append(func.lineno)
    own = _comprehension_targets(func)
    for node in walk(func):
        if id(node) in own:
            continue
        place = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        for name, how in _changes(node):
            if name not in checked:
                continue
            for end, names, line in read:
                if name in names and place > end:
                    return (
                        f"line {place[0]} ({how}) changes {name}, which the check at line"
                        f" {line} reads, so what the check refuses may not be what the code"
                        " after it uses"
                    )
            if how != "a del of a part of it":
                bound.setdefault(name, []).append(place[0])
    for name in sorted(bound):
        lines = bound[name]
        if len(lines) > 1:
            return (
                f"{name}, which a check reads, is bound at line {lines[0]} and again at line"
                f" {lines[1]}, so what the check refuses may not be what the code uses"
            )
    return None


def _comprehension_targets(func: ast.AST) -> set[int]:
    """The nodes of the targets of comprehensions under ``func``: names of their own scope."""
    return {
        id(node)
        for comprehension in walk(func)
        if isinstance(comprehension, ast.comprehension)
        for node in [comprehension.target, *walk(comprehension.target)]
    }


def _end(node: ast.stmt) -> tuple[int, int]:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)


def _changes(node: ast.AST) -> list[tuple[str, str]]:
    """The names ``node`` binds, deletes or deletes an item or attribute of, each with how."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [(node.id, "a del" if isinstance(node.ctx, ast.Del) else "an assignment")]
    if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Del):
        base = node.value
        while isinstance(base, (ast.Subscript, ast.Attribute)):
            base = base.value
        return [(base.id, "a del of a part of it")] if isinstance(base, ast.Name) else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(node.name, "a definition")]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [(node.name, "an except clause")]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [(node.name, "a match capture")]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [(node.rest, "a match capture")]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [((a.asname or a.name.split(".")[0]), "an import") for a in node.names]
    return []
