"""Count the function parameters typed ``Any`` (bare, ``Any | None`` or ``Optional[Any]``), by
package, in the library or the folders named::

    python scripts/any_parameters.py [FOLDER ...] [--list]

``--list`` prints each one too (file, line, function and parameter). A parameter that takes any
value and only looks at it is ``object``; ``Any`` is left for values whose attributes are used
as they come (a torch object, a target's own).
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path


def _is_any(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Name):
        return annotation.id == "Any"
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "Any"
    if isinstance(annotation, ast.BinOp):
        return _is_any(annotation.left) or _is_any(annotation.right)
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return _is_any(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return False
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value).endswith("Optional"):
        return _is_any(annotation.slice)
    return False


def any_parameters(path: Path) -> list[tuple[int, str, str]]:
    """(line, function, parameter) of each parameter typed Any in the file ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            extra = [x for x in (a.vararg, a.kwarg) if x is not None]
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, *extra]:
                if _is_any(arg.annotation):
                    found.append((arg.lineno, node.name, arg.arg))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", default=["ppaux"])
    parser.add_argument("--list", action="store_true", help="print each parameter too")
    args = parser.parse_args()
    by_package: Counter[str] = Counter()
    for folder in args.folders:
        for path in sorted(Path(folder).rglob("*.py")):
            found = any_parameters(path)
            package = path.parts[1] if len(path.parts) > 2 else path.name
            by_package[f"{path.parts[0]}/{package}"] += len(found)
            if args.list:
                for line, function, parameter in found:
                    print(f"{path}:{line} {function}({parameter})")
    print(f"{sum(by_package.values())} parameters typed Any")
    for package, count in sorted(by_package.items()):
        if count:
            print(f"{count:5}  {package}")


if __name__ == "__main__":
    main()
