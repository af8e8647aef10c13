"""PP119's data against another torch release's weights-only unpickler, read from its wheel.

Opt-in: ``PPAUX_TORCH_WHEEL`` names a torch wheel (``pip download torch==2.14.1 --no-deps``,
sglang 0.5.23's pin). The wheel's ``torch/_weights_only_unpickler.py``, ``torch/_utils.py`` and
``torch/storage.py`` are read as text and their syntax trees inspected, never run: the opcodes
the unpickler runs, its blocked modules, torch's Python 2 renames and the dtypes it allows must
be ppaux's, apart from the differences ``ppaux/dump/weights_only.py`` documents.
"""

from __future__ import annotations

import _compat_pickle
import ast
import os
import zipfile

import pytest

import ppaux.dump.weights_only as wo

WHEEL_ENV = "PPAUX_TORCH_WHEEL"

pytestmark = pytest.mark.skipif(
    not os.environ.get(WHEEL_ENV), reason=f"{WHEEL_ENV} names no torch wheel"
)


def _module(name: str) -> ast.Module:
    with zipfile.ZipFile(os.environ[WHEEL_ENV]) as wheel:
        return ast.parse(wheel.read(name))


def _assigned(module: ast.Module, name: str) -> ast.expr:
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id == name and node.value is not None:
                return node.value
    raise AssertionError(f"no {name} in the wheel's file")


def test_the_unpickler_runs_ppauxs_opcodes():
    module = _module("torch/_weights_only_unpickler.py")
    (unpickler,) = [n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "Unpickler"]
    (load,) = [n for n in unpickler.body if isinstance(n, ast.FunctionDef) and n.name == "load"]
    # Every opcode load() dispatches on is written NAME[0] (pickle's one-byte constant).
    named = {
        node.value.id
        for node in ast.walk(load)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id.isupper()
        and isinstance(node.slice, ast.Constant)
        and node.slice.value == 0
    }
    assert named == set(wo.OPCODES.values())


def test_the_blocked_modules_are_ppauxs():
    module = _module("torch/_weights_only_unpickler.py")
    assert set(ast.literal_eval(_assigned(module, "_blocklisted_modules"))) == wo.BLOCKED_MODULES


def test_the_python2_renames_are_ppauxs_but_for_the_exception_names():
    module = _module("torch/_utils.py")
    assert ast.literal_eval(_assigned(module, "IMPORT_MAPPING")) == wo.IMPORT_MAPPING
    assert ast.literal_eval(_assigned(module, "NAME_MAPPING")) == wo.NAME_MAPPING
    # 2.14 adds ('exceptions', X) -> ('builtins', X) for _compat_pickle's Python 2 exceptions:
    # a refused global is then named builtins.X where 2.13 names exceptions.X. No exception
    # class is allowed by default, so the verdict is the same (see weights_only.py).
    updates = [
        node
        for node in module.body
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "update"
        and isinstance(node.value.func.value, ast.Name)
        and node.value.func.value.id == "NAME_MAPPING"
    ]
    assert len(updates) <= 1
    if updates:
        assert "PYTHON2_EXCEPTIONS" in ast.dump(updates[0])
        exceptions = {f"builtins.{name}" for name in _compat_pickle.PYTHON2_EXCEPTIONS}
        assert not exceptions & wo.ALLOWED_GLOBALS


def test_the_new_dtypes_are_allowed_or_named_with_their_release():
    module = _module("torch/storage.py")
    (function,) = [
        n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "_new_dtypes"
    ]
    dtypes = {
        f"torch.{node.attr}"
        for node in ast.walk(function)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "torch"
    }
    assert dtypes and dtypes <= wo.ALLOWED_GLOBALS | wo.ALLOWED_FROM_2_14
    assert not wo.ALLOWED_FROM_2_14 & wo.ALLOWED_GLOBALS
