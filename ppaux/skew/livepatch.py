"""Inside a running sglang process: are add and pop still the functions their file defines?

A plugin or a debugging session can replace ``add_auxiliary_output_to_pp_tensors`` (the most
likely cause of pop's non-tensor message, :data:`ppaux.sglang.POP_NON_TENSOR`, on a release
build) either where it is defined or where the scheduler imported it by name. The files on
disk then look stock while the process runs other code, so the analysis of
:mod:`ppaux.sglang_source` cannot see it. :func:`live_state` looks at the live function
objects in modules already imported (it imports nothing) and compares each with the definition
in its module's file: the file is compiled, never run.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Mapping

from ppaux.report import Finding, finding
from ppaux.sglang import ADD, POP, SCHEDULER_MODULE, TRANSPORT_MODULE

__all__ = [
    "NOT_LOADED",
    "ORIGINAL",
    "SCHEDULER_MODULE",
    "TRANSPORT_MODULE",
    "live_findings",
    "live_state",
]

#: Verdict for a function that is exactly the one its file defines.
ORIGINAL = "original"
#: Verdict when the module is not imported in this process (nothing to compare).
NOT_LOADED = "not loaded"


def _code_equal(a: types.CodeType, b: types.CodeType) -> bool:
    """Same bytecode, names and constants (nested code compared the same way); lines ignored."""
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars) != (
        b.co_code,
        b.co_names,
        b.co_varnames,
        b.co_freevars,
    ):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts, strict=True):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _code_equal(x, y):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


def _file_code(path: str, name: str) -> types.CodeType | str | None:
    """The code object ``path`` defines for top-level function ``name``; a string if unusable."""
    try:
        with open(path, "rb") as handle:
            source = handle.read()
        # Compiling runs nothing; the module's own __future__ flags apply, not ours.
        module_code = compile(source, path, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError) as exc:
        return f"its file {path} cannot be compiled: {exc}"
    found = None
    for const in module_code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            found = const  # the last one, as a later def rebinds the name
    return found


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _verdict(live: object, name: str, defined_in: types.ModuleType | None) -> str:
    if live is None:
        return "missing: the module has no such attribute"
    if hasattr(live, "__wrapped__"):
        from ppaux.capture import capture_original

        original = capture_original(live)
        if original is not None:  # ppaux's own capture wrapper passes calls through unchanged
            return _verdict(original, name, defined_in)
        inner = getattr(live, "__qualname__", type(live).__name__)
        return f"wrapped: {getattr(live, '__module__', '?')}.{inner} wraps the original"
    code = getattr(live, "__code__", None)
    if not isinstance(code, types.CodeType):
        return f"replaced: a {type(live).__name__}, not a Python function"
    path = getattr(defined_in, "__file__", None) if defined_in is not None else None
    if not path:
        return "unknown: the transport module has no file to compare with"
    if not _same_file(code.co_filename, path):
        where = f"{getattr(live, '__module__', '?')}.{getattr(live, '__qualname__', name)}"
        return f"replaced: by {where} from {code.co_filename}"
    if getattr(live, "__name__", None) != name:
        return f"replaced: by {getattr(live, '__qualname__', name)} from the same file"
    expected = _file_code(path, name)
    if isinstance(expected, str):
        return f"unknown: {expected}"
    if expected is None:
        return f"replaced: its file {path} defines no {name}"
    if not _code_equal(code, expected):
        return f"differs from its file: the code running is not the code in {path}"
    return ORIGINAL


def live_state(modules: Mapping[str, types.ModuleType] | None = None) -> dict[str, str]:
    """Verdict for add and pop where they are defined and where the scheduler bound them.

    Keys are ``module.function``; values are :data:`ORIGINAL`, :data:`NOT_LOADED`, or a
    sentence that starts with ``replaced``, ``wrapped``, ``differs from its file``, ``missing``
    or ``unknown``. ``modules`` defaults to ``sys.modules``; nothing is imported.
    """
    loaded = sys.modules if modules is None else modules
    transport = loaded.get(TRANSPORT_MODULE)
    state: dict[str, str] = {}
    for module_name in (TRANSPORT_MODULE, SCHEDULER_MODULE):
        module = loaded.get(module_name)
        for name in (ADD, POP):
            key = f"{module_name}.{name}"
            if module is None or (module is not transport and not hasattr(module, name)):
                # A scheduler without the name (0.5.18 and before) never calls it.
                state[key] = NOT_LOADED
            else:
                state[key] = _verdict(getattr(module, name, None), name, transport)
    return state


def live_findings(state: Mapping[str, str], path: str) -> list[Finding]:
    """A PP320 finding for each function in ``state`` that is not the file's own."""
    return [
        finding("PP320", path, f"{key} is {verdict}", key)
        for key, verdict in state.items()
        if verdict not in (ORIGINAL, NOT_LOADED)
    ]
