"""Whether Python would import the module file ppaux reads, or something else in its place.

CPython's path finder looks, for a module ``a/b``, first for a package ``a/b/__init__.*``, then
for an extension module ``a/b.<suffix>`` (any of ``importlib.machinery.EXTENSION_SUFFIXES``),
and only then for ``a/b.py``. A package ``__init__.py`` on the way can also put another object
in ``sys.modules`` under the module's name, or bind an attribute of the module after loading it.
Any of these means a call may not reach the code ppaux reads; :func:`shadowing` names it.
"""

from __future__ import annotations

import ast
import importlib.machinery

from ppaux.sglang_source.bounded_parse import StatementTooLarge, parse_source
from ppaux.sglang_source.tree import SglangTree, UnreadableFile

__all__ = ["shadowing"]


def _package_suffixes() -> tuple[str, ...]:
    return (
        *importlib.machinery.SOURCE_SUFFIXES,
        *importlib.machinery.BYTECODE_SUFFIXES,
        *importlib.machinery.EXTENSION_SUFFIXES,
    )


def shadowing(tree: SglangTree, relative: str) -> str | None:
    """The reason the module file ``relative`` (``a/b.py``) is not what ``import`` loads, or
    None when nothing in the tree says so."""
    if not relative.endswith(".py"):
        return None
    stem = relative[: -len(".py")]
    is_init = stem.endswith("/__init__")
    if not is_init:
        for suffix in _package_suffixes():
            if tree.has(f"{stem}/__init__{suffix}"):
                return (
                    f"{tree.describe(relative)}: the package {tree.describe(stem + '/')} beside"
                    " it is what Python imports under this name, not this file"
                )
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if tree.has(stem + suffix):
            return (
                f"{tree.describe(relative)}: the extension module {tree.describe(stem + suffix)}"
                " beside it is what Python imports under this name, not this file"
            )
    module_name = stem.rpartition("/")[2] if not is_init else ""
    parts = stem.split("/")[:-1] if not is_init else stem.split("/")[:-2]
    for depth in range(len(parts) + 1):
        init = "/".join([*parts[:depth], "__init__.py"])
        reason = _init_rebinds(tree, init, module_name)
        if reason is not None:
            target = tree.describe(relative)
            return f"{tree.describe(init)}: {reason}, so a call may not reach {target}"
    return None


def _init_rebinds(tree: SglangTree, init: str, module_name: str) -> str | None:
    """What in package file ``init`` may replace the module (a ``sys.modules`` entry) or one of
    its attributes, or None."""
    try:
        data = tree.read(init)
    except UnreadableFile:
        return None
    if data is None or (
        b"modules" not in data and (not module_name or module_name.encode() not in data)
    ):
        return None
    try:
        module = parse_source(data, tree.describe(init))
    except (StatementTooLarge, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(module):
        if isinstance(node, ast.Assign):
            targets, line = list(node.targets), node.lineno
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets, line = [node.target], node.lineno
        else:
            continue
        for target in targets:
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Attribute)
                and target.value.attr == "modules"
            ):
                return f"line {line} puts an entry in sys.modules"
            if (
                module_name
                and isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == module_name
            ):
                return f"line {line} binds {module_name}.{target.attr}"
    return None
