"""What an sglang tree can do on the pipeline-parallel auxiliary path, read from its source.

:func:`analyse` reads four files of an sglang package (installed, unpacked or in a wheel; see
:mod:`.tree`) and inspects their syntax trees with :mod:`ast`, never running them:

* ``srt/managers/scheduler_pp_mixin.py``: does the scheduler call the transport's add and pop,
  where does it import them from, which keys the last stage's output message carries;
* the transport module (``srt/sampling/sampling_observer_pp.py`` in 0.5.19 - 0.5.23): its
  prefix, what the sender's add and the receiver's pop refuse, and whether both match a known
  release (:mod:`ppaux.sglang.releases`) or were modified;
* ``srt/managers/utils.py``: the logprob keys the sender puts in the message and those the
  receiver indexes;
* ``srt/distributed/parallel_state.py``: whether the wire code (``_split_tensor_dict`` and the
  send and receive of tensor dicts) is a release's, and what it does with non-tensor values.

A release is recognised by its code, never by its version number, so a future or patched build
is judged from what its files say. A file that is missing, unreadable or not valid Python makes
the facts that depend on it "unknown", with the reason; nothing here raises for a bad tree.
"""

from __future__ import annotations

import ast
import gc
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ppaux.limits import Limits
from ppaux.sglang import Presence, TransportMatch, WireMatch, match_transport, wire_is_release
from ppaux.sglang.names import ADD, POP, SCHEDULER_FILE, TRANSPORT_FILE
from ppaux.sglang_source.bindings import (
    BINDING_WORDS,
    CHECK_BUILTINS,
    DYNAMIC_WORDS,
    Rebinding,
    check_names_rebound,
    dynamic_write,
    rebindings,
)
from ppaux.sglang_source.capability import Capability, SourceFile
from ppaux.sglang_source.check_doubts import changed_after_check
from ppaux.sglang_source.digest import definition_digests
from ppaux.sglang_source.managers import Managers, swallow_doubt
from ppaux.sglang_source.scheduler_calls import scheduler_calls
from ppaux.sglang_source.shadows import shadowing
from ppaux.sglang_source.source_facts import (
    PassesOn,
    dict_keys,
    import_source,
    indexed_keys,
    non_tensor_values,
    receiver_checks,
    receiver_prefix,
    sender_checks,
    sender_prefix,
)
from ppaux.sglang_source.source_files import (
    INVALID_PYTHON,
    MAX_SYNTAX_DEPTH,
    WALKABLE_DEPTH,
    Parsed,
    ParsedFiles,
)
from ppaux.sglang_source.syntax import (
    any_function_named,
    function_named,
    string_constants,
    suspended_call,
)
from ppaux.sglang_source.text_rows import rows_naming
from ppaux.sglang_source.tree import SglangTree, locate

__all__ = [
    "ANALYSIS_LIMITS",
    "INVALID_PYTHON",
    "LOGPROB_FILE",
    "MAX_SYNTAX_DEPTH",
    "REEXPORT_HOPS",
    "TRANSPORT_DEFINITIONS",
    "WALKABLE_DEPTH",
    "WIRE_DEFINITIONS",
    "WIRE_FILE",
    "analyse",
    "analyse_tree",
]

#: Files read, relative to the ``sglang`` package directory (and TRANSPORT_FILE, SCHEDULER_FILE).
LOGPROB_FILE = "srt/managers/utils.py"
WIRE_FILE = "srt/distributed/parallel_state.py"

#: Definitions whose digests identify a release's transport.
TRANSPORT_DEFINITIONS = (
    ADD,
    POP,
    "PipelineParallelAuxiliaryOutput",
    "PipelineParallelSamplingObserver",
)
#: Definitions whose digests identify a release's wire code.
WIRE_DEFINITIONS = (
    "_split_tensor_dict",
    "GroupCoordinator.send_tensor_dict",
    "GroupCoordinator.recv_tensor_dict",
)

#: The limits the analysis of a tree uses.
ANALYSIS_LIMITS = (
    "max_source_bytes",
    "max_analysed_source_bytes",
    "max_statement_tokens",
    "max_syntax_depth",
)

_SENDER_FUNCTION = "_pp_prepare_tensor_dict"
_LOGPROB_SENDER = "get_logprob_dict_from_result"
_LOGPROB_RECEIVER = "get_logprob_from_pp_outputs"


def analyse(path: str | None = None, limits: Limits = Limits()) -> Capability:
    """Analyse the sglang at ``path`` (a directory or ``.whl``), or the installed one (each file
    read up to ``limits.max_source_bytes``).

    Raises :class:`~ppaux.sglang_source.SglangPathError` only when an explicit ``path`` is not an
    sglang tree at all; every problem inside a tree becomes an "unknown" fact with its reason.
    """
    tree = locate(path, limits)
    if tree is None:
        return Capability(
            found=False,
            transport=Presence.UNKNOWN,
            unknown={"sglang": "sglang is not installed in this Python environment"},
        )
    return analyse_tree(tree, limits)


# ----------------------------------------------------------------------------------------------
# Putting it together


def analyse_tree(tree: SglangTree, limits: Limits = Limits()) -> Capability:
    """Analyse one located sglang tree (see :func:`analyse`), parsing within ``limits``."""
    with tree.reading(), _collector_paused():
        return _analyse(tree, limits)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while the files are parsed and walked: syntax trees
    hold no reference cycles, and the collector, which the hundreds of thousands of nodes of a
    large file start again and again, finds nothing in them (on a megabyte of source, a third
    of the analysis's time). On again after, if it was on."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _analyse(tree: SglangTree, limits: Limits) -> Capability:
    unknown: dict[str, str] = {}
    files: list[SourceFile] = []
    facts: dict[str, Any] = {}

    parsed = ParsedFiles(tree, limits)
    scheduler = parsed.parse("scheduler", SCHEDULER_FILE)
    files.append(scheduler.file)
    imported_from = None
    if scheduler.module is not None:
        named = _may_name(scheduler.data, (ADD, POP, _SENDER_FUNCTION))
        wanted = tuple(name for name in (ADD, POP) if name in named)
        imported_from = next(
            filter(None, (import_source(scheduler.module, n) for n in wanted)), None
        )
        calls, doubt = scheduler_calls(
            scheduler.module, scheduler.data, wanted, scheduler.file.path
        )
        if doubt is None:
            facts["scheduler_calls"] = {"add": calls.get(ADD, False), "pop": calls.get(POP, False)}
        else:
            unknown["scheduler_calls"] = doubt
        sender = None
        if _SENDER_FUNCTION in named:
            sender = any_function_named(scheduler.module, _SENDER_FUNCTION)
        if sender is not None:
            always, optional = dict_keys(sender)
            facts["output_keys"] = tuple(always)
            facts["optional_output_keys"] = tuple(optional)
        else:
            unknown["output_keys"] = f"{scheduler.file.path}: defines no {_SENDER_FUNCTION}"
    else:
        unknown["scheduler_calls"] = unknown["output_keys"] = scheduler.why

    transport, unfollowed = _transport(parsed, imported_from or TRANSPORT_FILE)
    files.append(transport.file)
    if imported_from is not None and transport.file.status == "absent":
        # The scheduler's own import names a module the tree does not hold: it fails.
        unfollowed = (
            f"{scheduler.file.path}: imports {ADD} or {POP} from {transport.file.path}, which"
            " this tree does not hold, so the import fails when it runs"
        )
    if unfollowed is None:
        facts.update(_transport_facts(transport, unknown, shadowing(tree, transport.relative)))
    else:
        for fact in _TRANSPORT_FACTS:
            unknown[fact] = unfollowed
        facts.update(transport=Presence.UNKNOWN, match=TransportMatch.UNKNOWN)

    logprobs = parsed.parse("logprobs", LOGPROB_FILE)
    files.append(logprobs.file)
    facts.update(_logprob_facts(logprobs, unknown))

    wire = parsed.parse("wire", WIRE_FILE)
    files.append(wire.file)
    facts.update(_wire_facts(wire, unknown))

    digests = {**facts.pop("transport_digests", {}), **facts.pop("wire_digests", {})}
    return Capability(
        found=True,
        origin=tree.origin,
        location=tree.location,
        version=tree.version(),
        digests=digests,
        files=tuple(files),
        unknown=unknown,
        **facts,
    )


#: The most modules followed from the scheduler's import to the transport's definitions (a
#: package's ``__init__.py`` that imports them from a module of its own, and so on).
REEXPORT_HOPS = 4


def _transport(files: ParsedFiles, relative: str) -> tuple[Parsed, str | None]:
    """The module that defines the add and pop the scheduler imports from ``relative``: the
    module itself, a package's ``__init__.py``, or a module that one imports them from, up to
    :data:`REEXPORT_HOPS` modules on; with the reason no verdict can be given where the chain
    of imports comes back to a module it passed (the import fails when it runs) or goes on
    past the last module followed (None when it ends at a module)."""
    parsed = _module_file(files, relative)
    passed = [parsed.relative]
    for hop in range(REEXPORT_HOPS + 1):
        module = parsed.module
        if module is None or function_named(module, ADD) or function_named(module, POP):
            return parsed, None
        package = parsed.relative.rpartition("/")[0]
        source = next(
            filter(None, (import_source(module, name, package) for name in (ADD, POP))), None
        )
        if source is None:
            return parsed, None
        where = "itself" if source == parsed.relative else files.tree.describe(source)
        if source in passed or source.removesuffix(".py") + "/__init__.py" in passed:
            return parsed, (
                f"{parsed.file.path}: imports {ADD} or {POP} from {where}, which the chain of"
                " imports that leads here has passed, and no module on it defines them: the"
                " import fails when it runs"
            )
        if hop == REEXPORT_HOPS:
            return parsed, (
                f"{parsed.file.path}: imports {ADD} or {POP} from {where}, past the"
                f" {REEXPORT_HOPS} modules ppaux follows from the scheduler's import"
            )
        parsed = _module_file(files, source)
        passed.append(parsed.relative)
    return parsed, None  # not reached: the last hop returns


#: The facts about the transport that have no value when it is not known.
_TRANSPORT_FACTS = ("transport", "prefix", "sender_checks", "receiver_checks", "match")


def _module_file(files: ParsedFiles, relative: str) -> Parsed:
    """The parsed transport file of module ``relative`` (``a/b.py``), or its package's
    ``__init__.py`` where there is no such file."""
    parsed = files.parse("transport", relative)
    if parsed.file.status == "absent" and relative.endswith(".py"):
        init = relative[: -len(".py")] + "/__init__.py"
        package = files.parse("transport", init)
        if package.file.status != "absent":
            return package
    return parsed


def _transport_facts(
    parsed: Parsed, unknown: dict[str, str], shadow: str | None = None
) -> dict[str, Any]:
    file = parsed.file
    if file.status == "absent":
        # No transport file: a release before 0.5.19, or a build that removed it.
        return {"transport": Presence.ABSENT, "match": TransportMatch.ABSENT}
    if parsed.module is None:
        for fact in _TRANSPORT_FACTS:
            unknown[fact] = parsed.why
        return {"transport": Presence.UNKNOWN, "match": TransportMatch.UNKNOWN}
    module = parsed.module
    add = function_named(module, ADD)
    pop = function_named(module, POP)
    if add is None and pop is None:
        return {"transport": Presence.ABSENT, "match": TransportMatch.ABSENT}
    consts = string_constants(module)
    facts: dict[str, Any] = {"transport": Presence.PRESENT}
    facts["transport_digests"] = definition_digests(module, TRANSPORT_DEFINITIONS)
    defined: dict[str, ast.stmt | None] = {
        name: definition for name, definition in ((ADD, add), (POP, pop)) if definition
    }
    rebound = [shadow, *_not_as_written(parsed, module, defined)]
    if any(rebound):
        # What a call reaches is not what the def says: no verdict on either function.
        reason = "; ".join(r for r in rebound if r)
        for fact in _TRANSPORT_FACTS:
            unknown[fact] = reason
        return {
            "transport": Presence.UNKNOWN,
            "match": TransportMatch.UNKNOWN,
            "transport_digests": facts["transport_digests"],
        }
    managers = Managers(module)
    if add is not None:
        _read_checks(
            add, f"{file.path}: {ADD}", "sender_checks", sender_checks, managers, facts, unknown
        )
        facts["prefix"] = sender_prefix(add, consts)
        if facts["prefix"] is None:
            unknown["prefix"] = f"{file.path}: {ADD} builds its keys in a way ppaux cannot follow"
    else:
        unknown["sender_checks"] = unknown["prefix"] = f"{file.path}: defines no {ADD}"
    if pop is not None:
        _read_checks(
            pop, f"{file.path}: {POP}", "receiver_checks", receiver_checks, managers, facts, unknown
        )
        facts["receiver_prefix"] = receiver_prefix(pop, consts)
    else:
        unknown["receiver_checks"] = f"{file.path}: defines no {POP}"
    facts["match"], facts["match_family"] = match_transport(
        file.sha256 or "", facts["transport_digests"]
    )
    return facts


def _read_checks(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    where: str,
    fact: str,
    read: Callable[[ast.FunctionDef | ast.AsyncFunctionDef, PassesOn | None], dict[str, bool]],
    managers: Managers,
    facts: dict[str, Any],
    unknown: dict[str, str],
) -> None:
    """``facts[fact]``: the checks ``read`` finds in ``func`` (add or pop, ``where`` naming the
    file and the function), trusted only where no checked value changes after its check and no
    ``with`` may swallow the check's error; otherwise ``unknown[fact]`` says which."""
    doubt = changed_after_check(func, managers.passes_on) or swallow_doubt(func, managers)
    if doubt is None:
        facts[fact] = read(func, managers.passes_on)
    else:
        unknown[fact] = f"{where}: {doubt}"


def _not_as_written(
    parsed: Parsed, module: ast.Module, defined: dict[str, ast.stmt | None]
) -> list[str]:
    """Why a call of add or pop (``defined``) may not reach the code ppaux reads in the
    transport file: a name rebound, a check's name rebound, a dynamic write, a decorator, a
    body that does not run at the call; empty where none is."""
    file = parsed.file
    again = rebindings(module, defined, rows_naming(parsed.data, (*defined, *BINDING_WORDS)))
    rebound: list[str] = [
        reason
        for name, definition in defined.items()
        if definition is not None
        and (reason := _rebound_reason(file.path, name, definition, again.get(name)))
    ]
    relied = check_names_rebound(
        module, rows_naming(parsed.data, (*CHECK_BUILTINS, "torch", *BINDING_WORDS))
    )
    if relied is not None:
        rebound.append(
            f"{file.path}: line {relied.line} ({relied.how}) binds a name the checks of"
            f" {' and '.join(defined)} are read through, so a check may not do what its text says"
        )
    dynamic = dynamic_write(module, defined, rows_naming(parsed.data, DYNAMIC_WORDS))
    if dynamic is not None:
        rebound.append(
            f"{file.path}: line {dynamic.line} ({dynamic.how}) may bind"
            f" {' or '.join(defined)} in a way ppaux cannot follow, so a call may not reach"
            " the code ppaux reads"
        )
    rebound += [
        f"{file.path}: {name} is decorated (line {definition.lineno}): a call reaches what"
        " its decorator returns, not the code ppaux reads"
        for name, definition in defined.items()
        if definition is not None and getattr(definition, "decorator_list", None)
    ]
    rebound += [
        f"{file.path}: {name} {why}"
        for name, definition in defined.items()
        if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (why := suspended_call(definition)) is not None
    ]
    return rebound


def _rebound_reason(
    path: str, name: str, definition: ast.stmt, rebinding: Rebinding | None
) -> str | None:
    if rebinding is None:
        return None
    return (
        f"{path}: {name} is bound again at line {rebinding.line} ({rebinding.how}) after its"
        f" def at line {definition.lineno}, so a call may not reach the code ppaux reads"
    )


def _may_name(data: bytes | None, names: tuple[str, ...]) -> set[str]:
    """Those of ``names`` that a file's source may use. In an ASCII file without a coding
    declaration (whose every other codec could spell a name in other bytes), a name it uses is
    written out whole, so a name whose text the file does not hold is one it never uses, and
    the walks that look for it are skipped; any other file may use every name."""
    if data is None or not data.isascii() or b"coding" in data:
        return set(names)
    return {name for name in names if name.encode("ascii") in data}


def _logprob_facts(parsed: Parsed, unknown: dict[str, str]) -> dict[str, Any]:
    if parsed.module is None:
        unknown["logprob_keys"] = unknown["receiver_logprob_keys"] = parsed.why
        return {}
    facts: dict[str, Any] = {}
    sender = function_named(parsed.module, _LOGPROB_SENDER)
    if sender is not None:
        always, optional = dict_keys(sender)
        facts["logprob_keys"] = tuple(always + optional)
    else:
        unknown["logprob_keys"] = f"{parsed.file.path}: defines no {_LOGPROB_SENDER}"
    receiver = function_named(parsed.module, _LOGPROB_RECEIVER)
    if receiver is not None:
        always, guarded = indexed_keys(receiver)
        facts["receiver_logprob_keys"] = tuple(always)
        facts["receiver_sampling_mask_keys"] = tuple(guarded)
    else:
        unknown["receiver_logprob_keys"] = f"{parsed.file.path}: defines no {_LOGPROB_RECEIVER}"
    return facts


def _wire_facts(parsed: Parsed, unknown: dict[str, str]) -> dict[str, Any]:
    if parsed.module is None:
        if parsed.file.status == "absent":
            unknown["wire"] = parsed.why
            return {"wire": WireMatch.ABSENT}
        unknown["wire"] = parsed.why
        return {}
    digests = definition_digests(parsed.module, WIRE_DEFINITIONS)
    split = function_named(parsed.module, "_split_tensor_dict")
    if split is None:
        unknown["non_tensor_values"] = f"{parsed.file.path}: defines no _split_tensor_dict"
        non_tensor = "unknown"
    else:
        non_tensor = non_tensor_values(split)
    return {
        "wire": WireMatch.RELEASE if wire_is_release(digests) else WireMatch.MODIFIED,
        "wire_digest": _wire_digest(digests),
        "non_tensor_values": non_tensor,
        "wire_digests": digests,
    }


def _wire_digest(digests: dict[str, str]) -> str:
    joined = "\n".join(f"{name}={digests.get(name, '-')}" for name in WIRE_DEFINITIONS)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()
