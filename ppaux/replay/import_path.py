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

__all__ = ["BOOT", "environment_entries", "ordered_path", "runs_boot", "warning_options"]

#: What ppaux's own isolated helper process (a two-process wire's receiver) runs first:
#: ``python -I [-W ...] -c BOOT ROOT ENTRIES MODULE ...`` puts ppaux's folder (``ROOT``) on the
#: path, places the user's entries (``ENTRIES``, JSON: :func:`ordered_path`), then runs
#: ``MODULE`` as ``__main__`` with the arguments after it.
BOOT = """
import json, runpy, site, sys
if sys.argv[1] not in sys.path:
    sys.path.append(sys.argv[1])
from ppaux.replay.import_path import ordered_path
sys.path[:] = ordered_path(sys.path, json.loads(sys.argv[2]), site.getsitepackages())
module = sys.argv[3]
del sys.argv[1:4]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


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


def warning_options(value: str | None = None) -> list[str]:
    """The user's ``PYTHONWARNINGS`` (``value``; default: this process's) as the ``-W``
    options Python makes of it: isolated mode (``-I``) ignores the variable, and the warning
    filters are an interpreter setting the user chose, not code."""
    if value is None:
        value = os.environ.get("PYTHONWARNINGS", "")
    return [option for entry in value.split(",") if entry.strip() for option in ("-W", entry)]


def runs_boot(argv: Sequence[str]) -> bool:
    """Whether a command line (``argv``, as ``/proc/<pid>/cmdline`` lists it) is one of ppaux's
    own helper processes: an interpreter whose ``-c`` (after its other options) runs
    :data:`BOOT`."""
    index = 1
    while index < len(argv) - 1:
        arg = argv[index]
        if arg == "-c":
            return argv[index + 1] == BOOT
        if not arg.startswith("-"):
            return False  # a script: the interpreter's options end here
        # -W and -X take the next argument as their value.
        index += 2 if arg in ("-W", "-X") else 1
    return False
