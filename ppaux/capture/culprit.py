"""The culprit: the code that ran between a message's last clean hop and its first dirty one.

Resolved on the live objects, once, at the first dirty message: the functions that really run
at each hop (a subclass override, a wrapper found through ``__wrapped__`` or closures, a
monkeypatched function, another plugin's ``HookRegistry`` hook), each with its qualified name,
source file and first line, and whether its code is the release's (the digests of the release
table, :mod:`ppaux.sglang.releases`). The first function that is not sglang's release code is
the culprit. When the line tracer of :mod:`ppaux.capture.checkpoints` saw the write, its line
and function are given as well.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

from ppaux.capture.markers import HOOK_MARK, WRAPPER_MARK
from ppaux.sglang import ADD, SCHEDULER_MODULE

__all__ = ["layers", "provenance", "resolve"]

_REGISTRY_FILE = "srt/plugins/hook_registry.py"
# Scheduler methods on the way from a prepared message to its send (sglang 0.5.19 - 0.5.23).
_QUEUE_PATH = (
    "_pp_launch_batch",
    "_pp_send_output_to_next_stage",
    "_pp_send_recv_and_preprocess_output_tensors",
    "_pp_commit_send_output_work_and_preprocess_output_tensors",
    "event_loop_pp",
)
_ORDER = ("add", "prepare", "send_dict", "send", "sent")


def _cells(function: object) -> dict[str, Any]:
    code = getattr(function, "__code__", None)
    closure = getattr(function, "__closure__", None) or ()
    if code is None:
        return {}
    out = {}
    for name, cell in zip(code.co_freevars, closure, strict=False):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return out


def _plain_function(obj: object) -> Any:
    obj = getattr(obj, "__func__", obj)  # bound methods, classmethod, staticmethod
    return obj


def layers(function: object) -> list[tuple[Any, str]]:
    """(callable, kind) for each layer that runs when ``function`` is called, outermost first.

    kind: 'ppaux' (ppaux's own hook or wrapper), 'hook' (another ``HookRegistry`` hook),
    'wrapper' (a function that calls another one it holds), 'function' (the innermost code).
    """
    out: list[tuple[Any, str]] = []
    seen: set[int] = set()
    current = _plain_function(function)
    while current is not None and id(current) not in seen and len(out) < 32:
        seen.add(id(current))
        if getattr(current, WRAPPER_MARK, False):
            out.append((current, "ppaux"))
            current = _plain_function(getattr(current, "__wrapped__", None))
            continue
        code = getattr(current, "__code__", None)
        if code is not None and code.co_filename.replace("\\", "/").endswith(_REGISTRY_FILE):
            cells = _cells(current)
            hook = cells.get("hook")
            if hook is not None:
                out.append((hook, "ppaux" if getattr(hook, HOOK_MARK, False) else "hook"))
            current = _plain_function(
                cells.get("original_fn", getattr(current, "__wrapped__", None))
            )
            continue
        inner = getattr(current, "__wrapped__", None)
        if inner is None:
            inner = next(
                (v for v in _cells(current).values() if callable(v) and hasattr(v, "__code__")),
                None,
            )
        out.append((current, "wrapper" if inner is not None else "function"))
        current = _plain_function(inner)
    return out


def _outer(function: object) -> list[tuple[Any, str]]:
    """The layers above ppaux's own (all of them when ppaux is not in the chain)."""
    found = layers(function)
    for index, (_, kind) in enumerate(found):
        if kind == "ppaux":
            return found[:index]
    return found


def _release_digests(name: str) -> set[str]:
    from ppaux.sglang import families, release, release_versions

    out = set()
    for family in families():
        for table in (family.transport_digests, family.wire_digests):
            if name in table:
                out.add(table[name])
    for version in release_versions():
        digest = release(version).scheduler_digests.get(name)
        if digest is not None:
            out.add(digest)
    return out


def _digest(function: Callable[..., object]) -> str | None:
    from ppaux.sglang_source import node_digest

    try:
        source = textwrap.dedent(inspect.getsource(function))
        node = ast.parse(source).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return None
    return node_digest(node)


def provenance(function: object) -> dict[str, Any]:
    """Where ``function`` comes from: name, module, file, first line, and ``code``:
    'release' (its digest is the release table's), 'modified' (the table knows it and the
    digest differs), 'sglang' (sglang's package, no digest to compare), 'outside' (other code),
    'ppaux' (ppaux's own)."""
    target: Any = function if hasattr(function, "__code__") else None
    if target is None and callable(function):  # an object with a __call__ method
        target = type(function).__call__
    code = getattr(target, "__code__", None)
    module = getattr(target, "__module__", None) or ""
    qualname = getattr(target, "__qualname__", None) or getattr(code, "co_name", repr(function))
    where = {
        "function": f"{module}.{qualname}" if module else qualname,
        "file": code.co_filename if code is not None else None,
        "line": code.co_firstlineno if code is not None else None,
    }
    if module == "ppaux" or module.startswith("ppaux."):
        kind = "ppaux"
    elif module == "sglang" or module.startswith("sglang."):
        known = _release_digests(str(qualname))
        digest = _digest(target) if known else None
        if digest is None:  # no digest in the table, or the source cannot be read
            kind = "sglang"
        else:
            kind = "release" if digest in known else "modified"
    else:
        kind = "outside"
    where["code"] = kind
    return where


def _class_attr(owner: type | None, name: str) -> Any:
    if owner is None:
        return None
    for klass in owner.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _segments(
    hop: str,
    original: Callable[..., Any] | None,
    scheduler: type | None,
    group: type | None,
    reached: bool,
) -> Iterator[tuple[str, Any, list[Any]]]:
    """(how, where, layers) for the code that runs after the previous hop and up to ``hop``.

    ``original`` is what ppaux's hook wraps at the dirty hop; ``reached`` is True when the
    previous hop was seen (else the whole of the previous hop's target is a suspect).
    """
    if hop == "add":
        yield "inside add", original, layers(original)
    elif hop == "prepare":
        mixin = sys.modules.get(SCHEDULER_MODULE)
        add = getattr(mixin, ADD, None) if mixin is not None else None
        if add is not None:
            yield "add as the scheduler calls it", add, (_outer(add) if reached else layers(add))
        yield "_pp_prepare_tensor_dict", original, layers(original)
    elif hop == "send_dict":
        prepare = _class_attr(scheduler, "_pp_prepare_tensor_dict")
        if prepare is not None:
            yield "_pp_prepare_tensor_dict of the running scheduler", prepare, _outer(prepare)
        for name in _QUEUE_PATH:
            method = _class_attr(scheduler, name)
            if method is not None:
                yield f"{name} of the running scheduler", method, layers(method)[:1]
        send_dict = _class_attr(scheduler, "_pp_send_dict_to_next_stage")
        if send_dict is not None:
            yield (
                "_pp_send_dict_to_next_stage of the running scheduler",
                send_dict,
                _outer(send_dict),
            )
    elif hop == "send":
        yield "_pp_send_dict_to_next_stage", original, layers(original)[:1]
        send = _class_attr(group, "send_tensor_dict")
        if send is not None:
            yield "send_tensor_dict of the PP group", send, _outer(send)
    elif hop == "sent":
        yield "inside send_tensor_dict", original, layers(original)


def resolve(
    last_clean: str | None,
    dirty: str,
    original: Callable[..., Any],
    scheduler: type | None,
    group: type | None,
    traced: tuple[Any, int, Any] | None = None,
) -> dict[str, Any]:
    """The culprit of a message clean at ``last_clean`` (None: no earlier hop seen) and dirty
    at ``dirty``; plain data for the capture file. Never raises."""
    out: dict[str, Any] = {
        "between": [last_clean, dirty],
        "function": None,
        "file": None,
        "line": None,
        "code": None,
        "how": None,
        "suspects": [],
    }
    try:
        start = _ORDER.index(last_clean) + 1 if last_clean in _ORDER else 0
        hops = _ORDER[start : _ORDER.index(dirty) + 1] if dirty in _ORDER else (dirty,)
        suspects: list[dict[str, Any]] = []
        for hop in hops:
            # Only the dirty hop's own target is known as `original`; earlier hops' targets
            # were passed clean, so only what runs after their looks is a suspect.
            inner = original if hop == dirty else None
            for how, _, found in _segments(
                hop, inner, scheduler, group, reached=last_clean is not None
            ):
                for layer, kind in found:
                    if kind == "ppaux" or layer is None:
                        continue
                    where = provenance(layer)
                    where["how"] = f"{how} ({kind})"
                    suspects.append(where)
        out["suspects"] = suspects
        chosen = next((s for s in suspects if s["code"] in ("outside", "modified")), None)
        if chosen is None:
            # sglang's own code without a digest to compare (a modified scheduler file looks
            # like this): named only when it is the one such function between the two hops.
            unverified = [s for s in suspects if s["code"] == "sglang"]
            if len(unverified) == 1:
                chosen = unverified[0]
        if chosen is not None:
            out.update({k: chosen[k] for k in ("function", "file", "line", "code", "how")})
        if traced is not None:
            code, line, module = traced
            qualname = getattr(code, "co_qualname", code.co_name)
            name = f"{module}.{qualname}" if isinstance(module, str) else qualname
            out["write_line"] = line
            out["write_file"] = code.co_filename
            out["write_function"] = name
            if chosen is None or chosen["file"] != code.co_filename:
                inside = isinstance(module, str) and module.split(".")[0] in ("sglang", "ppaux")
                out.update(
                    {
                        "function": name,
                        "file": code.co_filename,
                        "line": code.co_firstlineno,
                        "code": module.split(".")[0] if inside else "outside",
                        "how": "the traced write",
                    }
                )
    except Exception as error:  # the culprit is a bonus: never into the host
        out["error"] = f"{type(error).__name__}: {error}"
    return out
