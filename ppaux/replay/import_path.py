"""The import path of ppaux's isolated processes (``python -I``).

An isolated interpreter reads no ``PYTHON*`` variable and puts neither the current directory nor
a script's folder on ``sys.path``: its path is the standard library, then site-packages and what
their ``.pth`` files add. The user's own entries (``PYTHONPATH``, or the path of the process that
asked for the check) go ahead of site-packages, as in the user's own runs, so a project run with
``PYTHONPATH=src`` is the code that runs, never an older installed copy; but after the standard
library (Python puts ``PYTHONPATH`` before it), so no entry can stand in for a standard module.

This module imports nothing of ppaux's: an isolated process imports it first to find the rest.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

__all__ = ["environment_entries", "ordered_path"]


def ordered_path(
    isolated: Sequence[str], given: Iterable[object], site_dirs: Iterable[str]
) -> list[str]:
    """``isolated`` (the path an isolated interpreter starts with) with the ``given`` entries
    after its standard library (the entries before the first of ``site_dirs``) and ahead of the
    rest. The given entries keep their order; no entry appears twice; entries that are not
    non-empty strings are left out."""
    sites = {os.path.normcase(os.path.abspath(d)) for d in site_dirs}
    head: list[str] = []
    for entry in isolated:
        if os.path.normcase(os.path.abspath(entry)) in sites:
            break
        head.append(entry)
    out = list(head)
    seen = set(head)
    for item in [*given, *isolated[len(head) :]]:
        if isinstance(item, str) and item and item not in seen:
            out.append(item)
            seen.add(item)
    return out


def environment_entries(value: str | None, cwd: str) -> list[str]:
    """The entries of a ``PYTHONPATH`` value as absolute paths (relative ones from ``cwd``),
    empty entries left out."""
    if not value:
        return []
    return [os.path.join(cwd, entry) for entry in value.split(os.pathsep) if entry]
