"""Every Python name the documentation tells a user to import or call exists where it says:
``from ppaux.X import A, B`` lines in code blocks and ``ppaux.X.f(...)`` in the text."""

from __future__ import annotations

import importlib
import re

import pytest
from helpers import REPO

pytestmark = pytest.mark.torch

_IMPORT = re.compile(r"^\s*from (ppaux(?:\.\w+)*) import ([\w, ()]+)$", re.M)
_CALL = re.compile(r"`(ppaux(?:\.\w+)+)\(")
_PAGES = sorted([*REPO.glob("docs/*.md"), REPO / "README.md"])


def _names() -> list[tuple[str, str, str]]:
    found = []
    for page in _PAGES:
        text = page.read_text(encoding="utf-8")
        for module, names in _IMPORT.findall(text):
            for name in names.strip("()").split(","):
                if name.strip():
                    found.append((page.name, module, name.strip()))
        for dotted in _CALL.findall(text):
            module, _, name = dotted.rpartition(".")
            found.append((page.name, module, name))
    return found


def _resolve(module: str, name: str) -> object:
    """``module.name``, where ``module`` may itself be a module's attribute path."""
    parts = module.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        try:
            return getattr(found, name)
        except AttributeError:
            return importlib.import_module(f"{module}.{name}")
    raise ModuleNotFoundError(module)


def test_the_pages_name_python_at_all():
    # The scan reads what the pages hold: at least the library page's imports.
    assert len(_names()) >= 10, _names()


@pytest.mark.parametrize(("page", "module", "name"), _names())
def test_each_documented_name_exists(page, module, name):
    try:
        _resolve(module, name)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{page}: {module}.{name} does not exist ({exc})")
