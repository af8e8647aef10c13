"""The transport file ppaux reads is the one Python imports only where nothing beside it or in
the packages above it takes its place: a package folder of the same name, an extension module of
any suffix this Python loads, a package ``__init__.py`` that puts something in ``sys.modules`` or
binds an attribute of the module. Where one does, the transport is unknown, with the reason,
never "present"; a folder without ``__init__`` (a namespace portion) and a stale ``.pyc`` do not
win over the ``.py`` and change nothing."""

from __future__ import annotations

import importlib.machinery
from pathlib import PurePosixPath

import pytest
from skew_fixtures import TRANSPORT, copy_tree

from ppaux.sglang import ADD
from ppaux.sglang_source import analyse

NAME = PurePosixPath(TRANSPORT).name
STEM = NAME[: -len(".py")]


def _release(tmp_path):
    root = copy_tree("v0523", tmp_path)
    assert analyse(str(root)).transport == "present"
    return root


def _package_with(init_name):
    def make(folder):
        (folder / STEM).mkdir()
        (folder / STEM / init_name).write_bytes(b"")

    return make


def _extension(suffix):
    def make(folder):
        (folder / f"{STEM}{suffix}").write_bytes(b"\x7fELF")

    return make


SHADOWS = {
    "a package with __init__.py": (_package_with("__init__.py"), "the package"),
    "a package with only __init__.pyc": (_package_with("__init__.pyc"), "the package"),
    **{
        f"an extension module {suffix}": (_extension(suffix), "the extension module")
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
    },
}


@pytest.mark.parametrize("case", SHADOWS)
def test_a_module_that_python_imports_first_makes_the_transport_unknown(tmp_path, case):
    make, words = SHADOWS[case]
    root = _release(tmp_path)
    make((root / TRANSPORT).parent)
    cap = analyse(str(root))
    assert (cap.transport, cap.match) == ("unknown", "unknown")
    assert cap.sender_checks is None and cap.receiver_checks is None
    assert words in cap.unknown["transport"], cap.unknown["transport"]
    assert NAME in cap.unknown["transport"]


INITS = {
    "the transport's package puts its own module in sys.modules": (
        1,
        f'import sys, types\nsys.modules[__name__ + ".{STEM}"] = types.ModuleType("other")\n',
        "sys.modules",
    ),
    "sglang's own __init__ puts the module in sys.modules": (
        3,
        f'import sys, types\nsys.modules["sglang.srt.sampling.{STEM}"] = types.ModuleType("x")\n',
        "sys.modules",
    ),
    "the transport's package binds add on the module": (
        1,
        f"from . import {STEM}\n{STEM}.{ADD} = print\n",
        f"{STEM}.{ADD}",
    ),
}


@pytest.mark.parametrize("case", INITS)
def test_a_package_init_that_replaces_the_module_makes_the_transport_unknown(tmp_path, case):
    up, text, words = INITS[case]
    root = _release(tmp_path)
    init = (root / TRANSPORT).parents[up - 1] / "__init__.py"
    init.write_text((init.read_text() if init.exists() else "") + "\n" + text)
    cap = analyse(str(root))
    assert (cap.transport, cap.match) == ("unknown", "unknown")
    assert words in cap.unknown["transport"], cap.unknown["transport"]
    assert "__init__.py" in cap.unknown["transport"]


@pytest.mark.parametrize(
    "make",
    [
        lambda folder: (folder / STEM).mkdir(),
        lambda folder: (folder / f"{STEM}.pyc").write_bytes(b"stale"),
        lambda folder: (folder / f"{STEM}.so.bak").write_bytes(b"\x7fELF"),
    ],
    ids=["a folder without __init__", "a stale .pyc", "a file that is no extension suffix"],
)
def test_what_python_does_not_import_first_changes_nothing(tmp_path, make):
    root = _release(tmp_path)
    before = analyse(str(root))
    make((root / TRANSPORT).parent)
    after = analyse(str(root))
    assert after.transport == "present" and after.match == before.match
    assert "transport" not in after.unknown
