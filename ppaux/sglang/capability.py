"""What an sglang tree can do on the pipeline-parallel auxiliary path, read from its source.

:func:`analyse` reads four files of an sglang package (installed, unpacked or in a wheel; see
:mod:`ppaux.sglang.tree`) and inspects their syntax trees with :mod:`ast`, never running them:

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
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ppaux.sglang import releases
from ppaux.sglang.digest import definition_digests
from ppaux.sglang.names import ADD, POP, SCHEDULER_FILE, TRANSPORT_FILE
from ppaux.sglang.source_parts import parse_parts
from ppaux.sglang.tree import SglangTree, UnreadableFile, locate

__all__ = [
    "ADD",
    "LOGPROB_FILE",
    "POP",
    "SCHEDULER_FILE",
    "TRANSPORT_DEFINITIONS",
    "TRANSPORT_FILE",
    "WIRE_DEFINITIONS",
    "WIRE_FILE",
    "Capability",
    "SourceFile",
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

_SENDER_FUNCTION = "_pp_prepare_tensor_dict"
_LOGPROB_SENDER = "get_logprob_dict_from_result"
_LOGPROB_RECEIVER = "get_logprob_from_pp_outputs"

# Parse big files in parts (tests switch it off to compare with whole-file parses).
_SELECTIVE = True
# What each big file is read for: (definitions, strings whose mentions matter).
_SCHEDULER_PARTS = ((_SENDER_FUNCTION,), (ADD, POP))
_LOGPROB_PARTS = ((_LOGPROB_SENDER, _LOGPROB_RECEIVER), ())
_WIRE_PARTS = (WIRE_DEFINITIONS, ())


@dataclass(frozen=True)
class SourceFile:
    """One file the analysis read: ``status`` is ok, absent, unreadable or unparsable."""

    role: str
    path: str
    status: str
    sha256: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The file as a JSON object."""
        return {
            "role": self.role,
            "path": self.path,
            "status": self.status,
            "sha256": self.sha256,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Capability:
    """The verdicts about one sglang tree. ``None`` in a fact means unknown; see ``unknown``.

    ``transport`` is present, absent or unknown. ``match`` says whether the transport is a
    release's: ``release`` (the file's bytes are), ``functions`` (the file differs but add, pop
    and the Protocols are a release's), ``modified``, ``absent`` or ``unknown``; ``match_family``
    names the releases it matches. ``wire`` is release, modified, absent or unknown.
    """

    found: bool
    origin: str | None = None
    location: str | None = None
    version: str | None = None
    transport: str = "unknown"
    match: str = "unknown"
    match_family: str | None = None
    prefix: str | None = None
    receiver_prefix: str | None = None
    sender_checks: dict[str, bool] | None = None
    receiver_checks: dict[str, bool] | None = None
    scheduler_calls: dict[str, bool] | None = None
    logprob_keys: tuple[str, ...] | None = None
    receiver_logprob_keys: tuple[str, ...] | None = None
    receiver_sampling_mask_keys: tuple[str, ...] | None = None
    output_keys: tuple[str, ...] | None = None
    optional_output_keys: tuple[str, ...] | None = None
    wire: str = "unknown"
    wire_digest: str | None = None
    non_tensor_values: str = "unknown"
    digests: dict[str, str] = field(default_factory=dict)
    files: tuple[SourceFile, ...] = ()
    unknown: dict[str, str] = field(default_factory=dict)
    live: dict[str, str] | None = None

    @property
    def sender_validates(self) -> bool | None:
        """True when add refuses bad names, non-tensors and duplicates; None when unknown."""
        if self.sender_checks is None:
            return None
        return all(self.sender_checks.get(k, False) for k in ("names", "tensors", "duplicates"))

    @property
    def receiver_validates(self) -> bool | None:
        """True when pop refuses non-tensor values; None when unknown."""
        if self.receiver_checks is None:
            return None
        return bool(self.receiver_checks.get("tensors", False))

    def verdicts(self) -> dict[str, Any]:
        """The verdicts without the evidence (digests, files, key lists), for reports."""
        return {
            "found": self.found,
            "origin": self.origin,
            "location": self.location,
            "version": self.version,
            "transport": self.transport,
            "match": self.match,
            "match_family": self.match_family,
            "prefix": self.prefix,
            "receiver_prefix": self.receiver_prefix,
            "sender_validates": self.sender_validates,
            "sender_checks": self.sender_checks,
            "receiver_validates": self.receiver_validates,
            "receiver_checks": self.receiver_checks,
            "scheduler_calls": self.scheduler_calls,
            "logprob_key_count": None if self.logprob_keys is None else len(self.logprob_keys),
            "wire": self.wire,
            "non_tensor_values": self.non_tensor_values,
            "unknown": dict(self.unknown),
            "live": self.live,
        }

    def to_json(self) -> dict[str, Any]:
        """The verdicts as the fingerprint's ``sglang`` object (docs/check-skew.md)."""

        def keys(value: tuple[str, ...] | None) -> list[str] | None:
            return None if value is None else list(value)

        return {
            "found": self.found,
            "origin": self.origin,
            "location": self.location,
            "version": self.version,
            "transport": self.transport,
            "match": self.match,
            "match_family": self.match_family,
            "prefix": self.prefix,
            "receiver_prefix": self.receiver_prefix,
            "sender_checks": self.sender_checks,
            "receiver_checks": self.receiver_checks,
            "scheduler_calls": self.scheduler_calls,
            "logprob_keys": keys(self.logprob_keys),
            "receiver_logprob_keys": keys(self.receiver_logprob_keys),
            "receiver_sampling_mask_keys": keys(self.receiver_sampling_mask_keys),
            "output_keys": keys(self.output_keys),
            "optional_output_keys": keys(self.optional_output_keys),
            "wire": self.wire,
            "wire_digest": self.wire_digest,
            "non_tensor_values": self.non_tensor_values,
            "digests": dict(self.digests),
            "files": [f.to_json() for f in self.files],
            "unknown": dict(self.unknown),
            "live": self.live,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Capability:
        """Rebuild from :meth:`to_json` output that :mod:`ppaux.skew.fingerprint` has validated."""

        def keys(value: Any) -> tuple[str, ...] | None:
            return None if value is None else tuple(value)

        return cls(
            found=doc["found"],
            origin=doc.get("origin"),
            location=doc.get("location"),
            version=doc.get("version"),
            transport=doc.get("transport", "unknown"),
            match=doc.get("match", "unknown"),
            match_family=doc.get("match_family"),
            prefix=doc.get("prefix"),
            receiver_prefix=doc.get("receiver_prefix"),
            sender_checks=doc.get("sender_checks"),
            receiver_checks=doc.get("receiver_checks"),
            scheduler_calls=doc.get("scheduler_calls"),
            logprob_keys=keys(doc.get("logprob_keys")),
            receiver_logprob_keys=keys(doc.get("receiver_logprob_keys")),
            receiver_sampling_mask_keys=keys(doc.get("receiver_sampling_mask_keys")),
            output_keys=keys(doc.get("output_keys")),
            optional_output_keys=keys(doc.get("optional_output_keys")),
            wire=doc.get("wire", "unknown"),
            wire_digest=doc.get("wire_digest"),
            non_tensor_values=doc.get("non_tensor_values", "unknown"),
            digests=dict(doc.get("digests") or {}),
            files=tuple(
                SourceFile(
                    role=f["role"],
                    path=f["path"],
                    status=f["status"],
                    sha256=f.get("sha256"),
                    reason=f.get("reason"),
                )
                for f in doc.get("files") or ()
            ),
            unknown=dict(doc.get("unknown") or {}),
            live=doc.get("live"),
        )

    def with_live(self, live: dict[str, str] | None) -> Capability:
        """A copy carrying the verdict of :func:`ppaux.skew.livepatch.live_state`."""
        return replace(self, live=live)


def analyse(path: str | None = None) -> Capability:
    """Analyse the sglang at ``path`` (a directory or ``.whl``), or the installed one.

    Raises :class:`ppaux.sglang.tree.SglangPathError` only when an explicit ``path`` is not an
    sglang tree at all; every problem inside a tree becomes an "unknown" fact with its reason.
    """
    tree = locate(path)
    if tree is None:
        return Capability(
            found=False,
            transport="unknown",
            unknown={"sglang": "sglang is not installed in this Python environment"},
        )
    return analyse_tree(tree)


# ----------------------------------------------------------------------------------------------
# Reading and parsing


@dataclass
class _Parsed:
    """A file read and parsed, or the reason it could not be."""

    file: SourceFile
    module: ast.Module | None
    data: bytes | None = None

    @property
    def why(self) -> str:
        return f"{self.file.path}: {self.file.reason}"


def _parse(
    tree: SglangTree,
    role: str,
    relative: str,
    parts: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
) -> _Parsed:
    """Read and parse one file; with ``parts`` (names, mentions), only what is needed of it.

    Large files are parsed in parts (:mod:`ppaux.sglang.source_parts`), which is several times
    faster
    and gives the same syntax trees for what is read; a syntax error in a part that is not read
    then goes unreported, as it does not change what the transport does.
    """
    where = tree.describe(relative)
    try:
        data = tree.read(relative)
    except UnreadableFile as exc:
        return _Parsed(SourceFile(role, where, "unreadable", reason=exc.reason), None)
    if data is None:
        return _Parsed(SourceFile(role, where, "absent", reason="no such file"), None)
    digest = hashlib.sha256(data).hexdigest()
    if parts is not None and _SELECTIVE:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        selected = parse_parts(text, *parts) if text is not None else None
        if selected is not None:
            return _checked_depth(_Parsed(SourceFile(role, where, "ok", digest), selected, data))
    try:
        module = ast.parse(data, filename=where)
    except SyntaxError as exc:
        reason = f"not valid Python: {exc.msg} (line {exc.lineno})"
        return _Parsed(SourceFile(role, where, "unparsable", digest, reason), None, data)
    except (ValueError, RecursionError, MemoryError) as exc:
        # ValueError: NUL bytes or a bad coding cookie; RecursionError: absurd nesting.
        reason = f"not valid Python: {type(exc).__name__}: {exc}"
        return _Parsed(SourceFile(role, where, "unparsable", digest, reason), None, data)
    return _checked_depth(_Parsed(SourceFile(role, where, "ok", digest), module, data))


#: Deepest syntax tree analysed. Real sglang files stay under 40 levels; the analysis (and
#: ast.dump, behind the digests) recurses, so a tree that parses but nests past Python's
#: recursion limit is called unparsable here rather than crashing later.
MAX_SYNTAX_DEPTH = 300


def _checked_depth(parsed: _Parsed) -> _Parsed:
    if parsed.module is None:
        return parsed
    stack: list[tuple[ast.AST, int]] = [(parsed.module, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_SYNTAX_DEPTH:
            file = parsed.file
            reason = f"not analysable: its syntax nests deeper than {MAX_SYNTAX_DEPTH} levels"
            return _Parsed(
                SourceFile(file.role, file.path, "unparsable", file.sha256, reason),
                None,
                parsed.data,
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return parsed


# ----------------------------------------------------------------------------------------------
# Small AST helpers


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` in source order (``ast.walk`` is breadth-first).

    Iterative: a recursive generator costs each node one step per level above it, which a large
    source file turns into seconds.
    """
    stack = list(ast.iter_child_nodes(node))[::-1]
    while stack:
        child = stack.pop()
        yield child
        stack.extend(list(ast.iter_child_nodes(child))[::-1])


def _function(module: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The last top-level definition of ``name`` (the one Python binds)."""
    found = None
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
    return found


def _any_function(module: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The last definition of ``name`` at any depth (methods of mixins included)."""
    found = None
    for node in _walk(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
    return found


def _string_constants(module: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments."""
    consts: dict[str, str] = {}
    for node in module.body:
        targets: list[ast.expr] = []
        value = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for target in targets:
                if isinstance(target, ast.Name):
                    consts[target.id] = value.value
    return consts


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = func.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in _walk(node) if isinstance(n, ast.Name)} | (
        {node.id} if isinstance(node, ast.Name) else set()
    )


def _raising_ifs(scope: ast.AST) -> Iterator[ast.If]:
    """``if`` statements under ``scope`` whose own body raises."""
    for node in _walk(scope):
        if isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body):
            yield node


def _calls(test: ast.AST, name: str) -> list[ast.Call]:
    """Calls in ``test`` to a function or method called ``name``."""
    found = []
    for node in [test, *_walk(test)]:
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == name) or (
                isinstance(func, ast.Attribute) and func.attr == name
            ):
                found.append(node)
    return found


def _checks_tensor(test: ast.AST, var: str | None = None) -> bool:
    """True when ``test`` asks whether ``var`` (any value if None) is a tensor."""
    for call in _calls(test, "is_tensor"):
        if var is None or any(var in _names(a) for a in call.args):
            return True
    for call in _calls(test, "isinstance"):
        if len(call.args) == 2 and "Tensor" in ast.dump(call.args[1]):
            if var is None or var in _names(call.args[0]):
                return True
    return False


def _checks_isinstance_of(test: ast.AST, var: str, kind: str | None = None) -> bool:
    """True when ``test`` calls isinstance on ``var`` (against ``kind`` if given) or hasattr."""
    for call in _calls(test, "isinstance") + _calls(test, "hasattr"):
        if call.args and var in _names(call.args[0]):
            if kind is None or (len(call.args) == 2 and kind in _names(call.args[1])):
                return True
    return False


def _is_none_check(test: ast.AST, var: str | None = None) -> bool:
    """True when ``test`` compares ``var`` (any name if None) with None using ``is``."""
    for node in [test, *_walk(test)]:
        if isinstance(node, ast.Compare) and any(isinstance(o, (ast.Is, ast.Eq)) for o in node.ops):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and o.value is None for o in operands):
                names = set().union(*(_names(o) for o in operands))
                if var is None or var in names:
                    return True
    return False


def _negates(test: ast.AST, var: str) -> bool:
    """True when ``test`` contains ``not var`` (an emptiness or falsiness check)."""
    return any(
        isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and _names(n.operand) == {var}
        for n in [test, *_walk(test)]
    )


def _resolve(expr: ast.AST, consts: dict[str, str]) -> str | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name):
        return consts.get(expr.id)
    if isinstance(expr, ast.FormattedValue) and expr.conversion == -1 and expr.format_spec is None:
        return _resolve(expr.value, consts)
    return None


def _key_prefix(expr: ast.AST, name_var: str, consts: dict[str, str]) -> str | None:
    """The text before ``name_var`` in a key built as an f-string, ``prefix + name`` or a join."""
    if isinstance(expr, ast.JoinedStr):
        parts: list[str] = []
        for value in expr.values:
            if isinstance(value, ast.FormattedValue) and _names(value.value) == {name_var}:
                return "".join(parts)
            text = _resolve(value, consts)
            if text is None:
                return None
            parts.append(text)
        return None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        if _names(expr.right) == {name_var}:
            return _resolve(expr.left, consts)
    return None


# ----------------------------------------------------------------------------------------------
# The transport module


def _sender_checks(add: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, bool]:
    """What add refuses. The per-item checks live in the loop over ``to_pp_tensors().items()``."""
    params = _params(add)
    output = params[1] if len(params) > 1 else None
    checks = {
        "protocol": False,
        "non_empty": False,
        "names": False,
        "tensors": False,
        "duplicates": False,
    }
    loop = _items_loop(add)
    name_var, tensor_var = _loop_vars(loop) if loop is not None else (None, None)
    in_loop = {id(n) for n in _walk(loop)} if loop is not None else set()
    for node in _raising_ifs(add):
        test = node.test
        if id(node) in in_loop:
            if name_var and (
                _checks_isinstance_of(test, name_var, "str") or _negates(test, name_var)
            ):
                checks["names"] = True
            if tensor_var and _checks_tensor(test, tensor_var):
                checks["tensors"] = True
            if any(
                isinstance(n, ast.Compare) and any(isinstance(o, ast.In) for o in n.ops)
                for n in [test, *_walk(test)]
            ):
                checks["duplicates"] = True
        else:
            if output and _checks_isinstance_of(test, output):
                checks["protocol"] = True
            elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                checks["non_empty"] = True
    return checks


def _items_loop(func: ast.AST) -> ast.For | None:
    for node in _walk(func):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call):
            call = node.iter.func
            if isinstance(call, ast.Attribute) and call.attr == "items":
                return node
    return None


def _loop_vars(loop: ast.For) -> tuple[str | None, str | None]:
    target = loop.target
    if isinstance(target, ast.Tuple) and len(target.elts) == 2:
        first, second = target.elts
        return (
            first.id if isinstance(first, ast.Name) else None,
            second.id if isinstance(second, ast.Name) else None,
        )
    return None, None


def _receiver_checks(pop: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, bool]:
    """What pop refuses before it hands the tensors to the observer."""
    params = _params(pop)
    observer = params[1] if len(params) > 1 else None
    checks = {"observer": False, "protocol": False, "tensors": False, "reconstructed": False}
    for node in _raising_ifs(pop):
        test = node.test
        if _checks_tensor(test):
            checks["tensors"] = True
        elif observer and _is_none_check(test, observer):
            checks["observer"] = True
        elif observer and _checks_isinstance_of(test, observer):
            checks["protocol"] = True
        elif _is_none_check(test):
            checks["reconstructed"] = True
    return checks


def _sender_prefix(add: ast.AST, consts: dict[str, str]) -> str | None:
    loop = _items_loop(add)
    if loop is None:
        return None
    name_var, _ = _loop_vars(loop)
    if name_var is None:
        return None
    assigned: dict[str, ast.AST] = {}
    for node in _walk(add):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                assigned[target.id] = node.value
    for node in _walk(loop):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            key: ast.AST = node.slice
            if isinstance(key, ast.Name) and key.id in assigned:
                key = assigned[key.id]
            prefix = _key_prefix(key, name_var, consts)
            if prefix is not None:
                return prefix
    return None


def _receiver_prefix(pop: ast.AST, consts: dict[str, str]) -> str | None:
    for call in _calls(pop, "startswith"):
        if len(call.args) == 1:
            return _resolve(call.args[0], consts)
    return None


# ----------------------------------------------------------------------------------------------
# The scheduler and the logprob helpers


def _import_source(module: ast.Module, name: str) -> str | None:
    """The sglang-relative file that ``from X import name`` in the scheduler reads."""
    for node in _walk(module):
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            dotted = node.module or ""
            if node.level:
                # The scheduler lives in sglang.srt.managers.
                base = ["sglang", "srt", "managers"][: 3 - (node.level - 1)]
                dotted = ".".join([*base, *([dotted] if dotted else [])])
            if dotted.startswith("sglang."):
                return dotted[len("sglang.") :].replace(".", "/") + ".py"
    return None


def _calls_anywhere(module: ast.Module, names: tuple[str, ...]) -> dict[str, bool]:
    """For each of ``names``, whether ``module`` calls a function or method of that name (one
    walk over the module for all of them)."""
    found = dict.fromkeys(names, False)
    for node in _walk(module):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called in found:
                found[called] = True
    return found


def _dict_keys(func: ast.AST) -> tuple[list[str], list[str]]:
    """String keys a function puts in dicts it builds: (unconditional, under an ``if``)."""
    always: list[str] = []
    optional: list[str] = []

    def visit(node: ast.AST, conditional: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Dict):
                for key in child.keys:
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        (optional if conditional else always).append(key.value)
            if isinstance(child, ast.Subscript) and isinstance(child.ctx, ast.Store):
                key = child.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    (optional if conditional else always).append(key.value)
            inner = conditional or (isinstance(node, ast.If) and child is not node.test)
            visit(child, inner)

    visit(func, False)
    seen: set[str] = set()
    always = _first_of_each(always, seen)
    optional = _first_of_each(optional, seen)
    return always, optional


def _first_of_each(keys: list[str], seen: set[str]) -> list[str]:
    """``keys`` without those in ``seen`` or repeated, in order; adds them to ``seen``."""
    out = []
    for key in keys:
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def _indexed_keys(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[str], list[str]]:
    """Keys the function indexes on its first parameter: (always, only under an ``if``)."""
    params = _params(func)
    if not params:
        return [], []
    message = params[0]
    always: list[str] = []
    guarded: list[str] = []

    def visit(node: ast.AST, conditional: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.Subscript)
                and isinstance(child.value, ast.Name)
                and child.value.id == message
                and isinstance(child.slice, ast.Constant)
                and isinstance(child.slice.value, str)
            ):
                target = guarded if conditional else always
                if child.slice.value not in always and child.slice.value not in target:
                    target.append(child.slice.value)
            # The test of an if runs every time; its body only sometimes.
            inner = conditional or (
                isinstance(node, (ast.If, ast.IfExp)) and child is not node.test
            )
            visit(child, inner)

    visit(func, False)
    return always, [k for k in guarded if k not in always]


# ----------------------------------------------------------------------------------------------
# The wire


def _non_tensor_values(split: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """``pickled`` when the else branch of the tensor test keeps ``(key, value)`` as it is."""
    loop = _items_loop(split)
    if loop is None:
        return "other"
    key_var, value_var = _loop_vars(loop)
    for node in _walk(loop):
        if isinstance(node, ast.If) and _checks_tensor(node.test, value_var):
            for call in (n for s in node.orelse for n in [s, *_walk(s)] if isinstance(n, ast.Call)):
                if isinstance(call.func, ast.Attribute) and call.func.attr == "append":
                    arg = call.args[0] if call.args else None
                    if (
                        isinstance(arg, ast.Tuple)
                        and len(arg.elts) == 2
                        and _names(arg.elts[0]) == {key_var}
                        and isinstance(arg.elts[1], ast.Name)
                        and arg.elts[1].id == value_var
                    ):
                        return "pickled"
    return "other"


def _wire_digest(digests: dict[str, str]) -> str:
    joined = "\n".join(f"{name}={digests.get(name, '-')}" for name in WIRE_DEFINITIONS)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------------------------
# Putting it together


def analyse_tree(tree: SglangTree) -> Capability:
    """Analyse one located sglang tree (see :func:`analyse`)."""
    with tree.reading():
        return _analyse(tree)


def _analyse(tree: SglangTree) -> Capability:
    unknown: dict[str, str] = {}
    files: list[SourceFile] = []
    facts: dict[str, Any] = {}

    scheduler = _parse(tree, "scheduler", SCHEDULER_FILE, _SCHEDULER_PARTS)
    files.append(scheduler.file)
    transport_file = TRANSPORT_FILE
    if scheduler.module is not None:
        transport_file = (
            _import_source(scheduler.module, ADD)
            or _import_source(scheduler.module, POP)
            or TRANSPORT_FILE
        )
        calls = _calls_anywhere(scheduler.module, (ADD, POP))
        facts["scheduler_calls"] = {"add": calls[ADD], "pop": calls[POP]}
        sender = _any_function(scheduler.module, _SENDER_FUNCTION)
        if sender is not None:
            always, optional = _dict_keys(sender)
            facts["output_keys"] = tuple(always)
            facts["optional_output_keys"] = tuple(optional)
        else:
            unknown["output_keys"] = f"{scheduler.file.path}: defines no {_SENDER_FUNCTION}"
    else:
        unknown["scheduler_calls"] = unknown["output_keys"] = scheduler.why

    transport = _parse(tree, "transport", transport_file)
    files.append(transport.file)
    facts.update(_transport_facts(transport, unknown))

    logprobs = _parse(tree, "logprobs", LOGPROB_FILE, _LOGPROB_PARTS)
    files.append(logprobs.file)
    facts.update(_logprob_facts(logprobs, unknown))

    wire = _parse(tree, "wire", WIRE_FILE, _WIRE_PARTS)
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


def _transport_facts(parsed: _Parsed, unknown: dict[str, str]) -> dict[str, Any]:
    file = parsed.file
    if file.status == "absent":
        # No transport file: a release before 0.5.19, or a build that removed it.
        return {"transport": "absent", "match": "absent"}
    if parsed.module is None:
        for fact in ("transport", "prefix", "sender_checks", "receiver_checks", "match"):
            unknown[fact] = parsed.why
        return {"transport": "unknown", "match": "unknown"}
    module = parsed.module
    add = _function(module, ADD)
    pop = _function(module, POP)
    if add is None and pop is None:
        return {"transport": "absent", "match": "absent"}
    consts = _string_constants(module)
    facts: dict[str, Any] = {"transport": "present"}
    facts["transport_digests"] = definition_digests(module, TRANSPORT_DEFINITIONS)
    if add is not None:
        facts["sender_checks"] = _sender_checks(add)
        facts["prefix"] = _sender_prefix(add, consts)
        if facts["prefix"] is None:
            unknown["prefix"] = f"{file.path}: {ADD} builds its keys in a way ppaux cannot follow"
    else:
        unknown["sender_checks"] = unknown["prefix"] = f"{file.path}: defines no {ADD}"
    if pop is not None:
        facts["receiver_checks"] = _receiver_checks(pop)
        facts["receiver_prefix"] = _receiver_prefix(pop, consts)
    else:
        unknown["receiver_checks"] = f"{file.path}: defines no {POP}"
    facts["match"], facts["match_family"] = releases.match_transport(
        file.sha256 or "", facts["transport_digests"]
    )
    return facts


def _logprob_facts(parsed: _Parsed, unknown: dict[str, str]) -> dict[str, Any]:
    if parsed.module is None:
        unknown["logprob_keys"] = unknown["receiver_logprob_keys"] = parsed.why
        return {}
    facts: dict[str, Any] = {}
    sender = _function(parsed.module, _LOGPROB_SENDER)
    if sender is not None:
        always, optional = _dict_keys(sender)
        facts["logprob_keys"] = tuple(always + optional)
    else:
        unknown["logprob_keys"] = f"{parsed.file.path}: defines no {_LOGPROB_SENDER}"
    receiver = _function(parsed.module, _LOGPROB_RECEIVER)
    if receiver is not None:
        always, guarded = _indexed_keys(receiver)
        facts["receiver_logprob_keys"] = tuple(always)
        facts["receiver_sampling_mask_keys"] = tuple(guarded)
    else:
        unknown["receiver_logprob_keys"] = f"{parsed.file.path}: defines no {_LOGPROB_RECEIVER}"
    return facts


def _wire_facts(parsed: _Parsed, unknown: dict[str, str]) -> dict[str, Any]:
    if parsed.module is None:
        if parsed.file.status == "absent":
            unknown["wire"] = parsed.why
            return {"wire": "absent"}
        unknown["wire"] = parsed.why
        return {}
    digests = definition_digests(parsed.module, WIRE_DEFINITIONS)
    split = _function(parsed.module, "_split_tensor_dict")
    if split is None:
        unknown["non_tensor_values"] = f"{parsed.file.path}: defines no _split_tensor_dict"
        non_tensor = "unknown"
    else:
        non_tensor = _non_tensor_values(split)
    return {
        "wire": "release" if releases.wire_is_release(digests) else "modified",
        "wire_digest": _wire_digest(digests),
        "non_tensor_values": non_tensor,
        "wire_digests": digests,
    }
