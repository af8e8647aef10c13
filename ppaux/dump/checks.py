"""The payload and security checks behind ``ppaux inspect``: a dump in, findings out.

Each check mirrors what sglang 0.5.19 - 0.5.23 does with the dict on PP rank 0
(``pop_auxiliary_output_from_pp_tensors``) or on the wire (``send_tensor_dict``), and names the
key it is about. :func:`predict_pop` gives the outcome pop would have with a PP-capable observer.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from contextvars import ContextVar
from typing import Any

from ppaux.dump.dumpfile import Dump
from ppaux.dump.model import DTYPE_ITEMSIZE, GlobalRef, Opaque, TensorRef, TorchValue
from ppaux.dump.payload import (
    LEAF_TYPES,
    Payload,
    Tally,
    key_text,
    quoted,
    safe_repr,
    type_name,
    value_phrase,
    walk,
)
from ppaux.limits import Limits
from ppaux.report import Finding, Severity, cap_per_code, finding
from ppaux.sglang import (
    ADD_BAD_NAME,
    ADD_DUPLICATE,
    ADD_NOT_TENSOR,
    MSG_TYPE_KEY,
    OUTPUT_MSG_TYPE,
    OUTPUT_PREFIX,
    POP_NON_TENSOR,
    PROXY_KEYS,
)
from ppaux.text import shown, with_article

__all__ = ["check_dump", "check_payload", "predict_pop"]

_NEAR_MISS = re.compile(r"[\s_.\-]")
_SQUASHED_PREFIX = "samplingobserveroutput"
#: Letters of other scripts drawn like the Latin ones of the prefix (Cyrillic, Greek, IPA), which
#: NFKC leaves alone: a key spelled with one looks right and is ignored by pop.
_LOOK_ALIKES = str.maketrans(
    {
        "а": "a",
        "е": "e",
        "о": "o",
        "р": "p",
        "с": "c",
        "у": "y",
        "х": "x",
        "і": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ɡ": "g",
        "ӏ": "l",
        "ո": "n",
        "ս": "u",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "ι": "i",
        "κ": "k",
        "α": "a",
        "ε": "e",
        "ɩ": "i",
        "ʋ": "v",
        "ᴠ": "v",
        "ⅰ": "i",
        "ⅼ": "l",
        "ɑ": "a",
        "ɪ": "i",
        "ʀ": "r",
        "ꜱ": "s",
        "ᴏ": "o",
        "ᴜ": "u",
        "ᴛ": "t",
    }
)
#: Characters of a key looked at for a near miss: the prefix is 29; separators may pad it.
_NEAR_MISS_SPAN = 256


def _squashed(key: str) -> str:
    # What a reader sees: compatibility forms folded (fullwidth, ligatures), case and look-alike
    # letters folded, invisible format characters (zero-width space, joiners) and separators
    # dropped.
    head = key[:_NEAR_MISS_SPAN]
    if head.isascii():
        # ASCII is its own NFKC form, casefolds as lower() does, has no look-alike of the table
        # and no format character: the same answer, without a look at each character.
        return _NEAR_MISS.sub("", head.lower())
    text = unicodedata.normalize("NFKC", head).casefold().translate(_LOOK_ALIKES)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return _NEAR_MISS.sub("", text)


def _python_type_name(key: Any) -> str:
    # The name Python's own AttributeError would print for this key's type.
    if isinstance(key, Opaque):
        return key.name.rsplit(".", 1)[-1]
    if isinstance(key, TensorRef):
        return "Tensor"
    if isinstance(key, TorchValue):
        return key.type_name  # torch's C types print their dotted name
    return type(key).__name__


def predict_pop(mapping: dict[str, Any]) -> dict[str, Any]:
    """What pop does with ``mapping`` given a PP-capable observer, in sglang's order of checks."""
    for key in mapping:
        if not isinstance(key, str):
            return {
                "outcome": "error",
                "error_type": "AttributeError",
                "error": f"'{_python_type_name(key)}' object has no attribute 'startswith'",
            }
    aux = {k: v for k, v in mapping.items() if k.startswith(OUTPUT_PREFIX)}
    if not aux:
        return {"outcome": "no-aux", "error_type": None, "error": None}
    if any(not isinstance(v, TensorRef) for v in aux.values()):
        return {"outcome": "error", "error_type": "RuntimeError", "error": POP_NON_TENSOR.text}
    return {"outcome": "ok", "error_type": None, "error": None}


def check_dump(
    dump: Dump, payloads: list[Payload], limits: Limits, tally: Tally | None = None
) -> list[Finding]:
    """Every finding for one dump: security first, then each payload, then storage records.

    ``tally`` is shared with the description of the same dump (see :class:`Tally`).
    """
    if tally is None:
        tally = Tally(limits, dump.path)
    budget = _Budget(limits.max_findings_per_code)
    token = _BUDGET.set(budget)
    try:
        found = _security(dump, limits)
        if dump.deviation is not None:
            found.append(
                finding(
                    "PP118",
                    dump.path,
                    f"not as torch.save writes it: {dump.deviation.text()}",
                    severity=Severity.ERROR if dump.deviation.severe else None,
                    extra={"where": dump.deviation.where},
                )
            )
        if dump.weights_only_refusal is not None:
            found.append(
                finding(
                    "PP119",
                    dump.path,
                    "torch.load's default (weights_only=True) refuses this file: "
                    f"{dump.weights_only_refusal}; torch.load(weights_only=False) would read "
                    "it, but that loader runs code from any file",
                    extra={"where": dump.weights_only_refusal},
                )
            )
        if not payloads:
            found.append(finding("PP114", dump.path, "no tensor dict found in the file"))
        for payload in payloads:
            if payload.role == "output":
                found += _check_add_output(dump.path, payload, payloads, limits, tally)
            else:
                found += check_payload(dump.path, payload, limits, tally)
        found += _storage_records(dump, payloads, limits)
        found += _tensor_views(dump, payloads, limits)
    finally:
        _BUDGET.reset(token)
    kept = [f for f in found if f is not _OMITTED]
    # One finding per code stands for those counted and not built; cap_per_code words it.
    for code, omitted in budget.omitted.items():
        kept.append(
            finding(
                code,
                dump.path,
                f"{omitted} more {code} findings in this file are not listed",
                extra={"omitted": omitted},
            )
        )
    return cap_per_code(kept, limits.max_findings_per_code, "max_findings_per_code")


class _Budget:
    """Findings of each code built for one dump: past ``per_code``, a finding is only counted,
    never built (the report's cut, :func:`ppaux.report.findings.cap_per_code`, words the
    count)."""

    def __init__(self, per_code: int) -> None:
        self.per_code = per_code
        self.built: dict[str, int] = {}
        self.omitted: dict[str, int] = {}

    def take(self, code: str) -> bool:
        n = self.built.get(code, 0)
        if n < self.per_code:
            self.built[code] = n + 1
            return True
        self.omitted[code] = self.omitted.get(code, 0) + 1
        return False


_BUDGET: ContextVar[_Budget | None] = ContextVar("ppaux_findings_budget", default=None)
#: What :func:`_at` gives in place of a finding past the budget; dropped by :func:`check_dump`.
_OMITTED: Any = object()


def _at(code: str, path: str, message: str, payload: Payload, key: Any, **kw: Any) -> Finding:
    # Findings name the dict key itself; where the dict sits in the file goes to extra.payload.
    budget = _BUDGET.get()
    if budget is not None and not budget.take(code):
        return _OMITTED  # type: ignore[no-any-return]
    extra = dict(kw.pop("extra", None) or {})
    if payload.locator:
        extra["payload"] = payload.locator
    return finding(code, path, message, key_text(key), extra=extra, **kw)


def check_payload(
    path: str, payload: Payload, limits: Limits, tally: Tally | None = None
) -> list[Finding]:
    """Findings for one tensor dict as rank 0 would receive it."""
    if tally is None:
        tally = Tally(limits, path)
    mapping = payload.mapping
    found: list[Finding] = []
    pop_error: str | None = None  # worked out once: it scans the dict to its first bad key
    for key in mapping:
        if not isinstance(key, str):
            if pop_error is None:
                pop_error = predict_pop(mapping)["error"]
            found.append(
                _at(
                    "PP103",
                    path,
                    f"key {safe_repr(key, 60)} is {with_article(_python_type_name(key))}, not a "
                    "string; pop calls key.startswith on every key and fails",
                    payload,
                    key,
                    sglang_error=pop_error,
                )
            )
    aux = [(k, v) for k, v in mapping.items() if isinstance(k, str) and k.startswith(OUTPUT_PREFIX)]
    for key, value in aux:
        name = key[len(OUTPUT_PREFIX) :]
        where = payload, key
        if name == "":
            found.append(
                _at(
                    "PP102",
                    path,
                    "key is the bare auxiliary prefix: the observer receives a "
                    "tensor named '' (empty)",
                    *where,
                )
            )
        elif name.startswith(OUTPUT_PREFIX) or name != name.strip():
            found.append(
                _at(
                    "PP104",
                    path,
                    f"auxiliary name {quoted(name)} carries a doubled prefix or stray "
                    "whitespace: the observer receives that name as it is",
                    *where,
                )
            )
        if not isinstance(value, TensorRef):
            found.append(
                _at(
                    "PP101",
                    path,
                    f"auxiliary entry {quoted(name)} holds {value_phrase(value, limits, tally)}, "
                    "not a tensor",
                    *where,
                    extra={"type": type_name(value)},
                )
            )
            continue
        found += _tensor_checks(path, where, name, value)
    found += _device_checks(path, payload, aux)
    for key, value in mapping.items():
        if isinstance(key, str) and not key.startswith(OUTPUT_PREFIX):
            if _squashed(key).startswith(_SQUASHED_PREFIX):
                found.append(
                    _at(
                        "PP104",
                        path,
                        f"key {quoted(key)} looks like the auxiliary prefix "
                        f"{OUTPUT_PREFIX!r} but does not start with it exactly; pop ignores it and "
                        "its output is lost",
                        payload,
                        key,
                    )
                )
        is_aux = isinstance(key, str) and key.startswith(OUTPUT_PREFIX)
        if not is_aux and value.__class__ not in LEAF_TYPES and not isinstance(value, TensorRef):
            nested = tally.tensors(value)
            if nested:
                found.append(
                    _at(
                        "PP110",
                        path,
                        f"{nested} tensor{'s' if nested != 1 else ''} nested inside "
                        f"{value_phrase(value, limits, tally)}: they travel pickled in the "
                        "metadata",
                        payload,
                        key,
                    )
                )
    if aux:
        message_type = mapping.get(MSG_TYPE_KEY)
        proxy = [k for k in PROXY_KEYS if k in mapping]
        if isinstance(message_type, str) and message_type != OUTPUT_MSG_TYPE:
            found.append(
                _at(
                    "PP111",
                    path,
                    f"auxiliary keys in a message of type {quoted(message_type)}; rank 0 "
                    f"pops them only from {OUTPUT_MSG_TYPE!r} messages",
                    payload,
                    aux[0][0],
                )
            )
        elif proxy:
            found.append(
                _at(
                    "PP111",
                    path,
                    f"auxiliary keys next to {', '.join(proxy)}: this is a proxy "
                    "(hidden-state) message, which rank 0 never pops",
                    payload,
                    aux[0][0],
                )
            )
    return found


def _tensor_checks(
    path: str, where: tuple[Any, ...], name: str, tensor: TensorRef
) -> list[Finding]:
    found = []
    if tensor.kind in ("sparse", "quantized"):
        found.append(
            _at(
                "PP107",
                path,
                f"auxiliary tensor {quoted(name)} is {tensor.kind} ({tensor.layout}); the "
                "receiver rebuilds a dense tensor from dtype and size",
                *where,
            )
        )
    elif tensor.kind == "meta" or tensor.device == "meta":
        found.append(
            _at("PP108", path, f"auxiliary tensor {quoted(name)} is a meta tensor", *where)
        )
    elif not tensor.contiguous:
        found.append(
            _at(
                "PP106",
                path,
                f"auxiliary tensor {quoted(name)} is not contiguous (shape "
                f"{list(tensor.shape)}, stride {list(tensor.stride or ())})",
                *where,
            )
        )
    if tensor.subclass is not None:
        found.append(
            _at(
                "PP109",
                path,
                f"auxiliary tensor {quoted(name)} is a {tensor.subclass}; the receiver "
                "gets a plain torch.Tensor",
                *where,
            )
        )
    if tensor.numel == 0 and tensor.kind == "dense":
        found.append(
            _at(
                "PP112",
                path,
                f"auxiliary tensor {quoted(name)} has no elements (shape {list(tensor.shape)})",
                *where,
            )
        )
    return found


def _device_checks(path: str, payload: Payload, aux: list[tuple[str, Any]]) -> list[Finding]:
    aux_tensors = [(k, v) for k, v in aux if isinstance(v, TensorRef) and v.kind != "meta"]
    if not aux_tensors:
        return []
    others = Counter(
        v.device
        for k, v in payload.mapping.items()
        if isinstance(v, TensorRef)
        and v.kind != "meta"
        and not (isinstance(k, str) and k.startswith(OUTPUT_PREFIX))
    )
    if others:
        reference, what = others.most_common(1)[0][0], "the message's other tensors are"
    else:
        reference, what = aux_tensors[0][1].device, f"{quoted(aux_tensors[0][0])} is"
    found = []
    for key, tensor in aux_tensors:
        if tensor.device != reference:
            found.append(
                _at(
                    "PP105",
                    path,
                    f"auxiliary tensor {quoted(key[len(OUTPUT_PREFIX) :])} is on "
                    f"{tensor.device} but {what} on {reference}; the wire sends only the device "
                    "type and the receiver allocates on its own current device, dropping the index",
                    payload,
                    key,
                )
            )
    return found


def _check_add_output(
    path: str, payload: Payload, payloads: list[Payload], limits: Limits, tally: Tally
) -> list[Finding]:
    # A capture of a failing add: what add would refuse, in its order of checks.
    existing = next((p.mapping for p in payloads if p.role == "capture"), {})
    found = []
    for name, value in payload.mapping.items():
        where = (payload, name)
        if not isinstance(name, str) or not name:
            found.append(
                _at(
                    "PP115",
                    path,
                    f"output name {safe_repr(name, 40)} is not a non-empty string",
                    *where,
                    sglang_error=ADD_BAD_NAME.text,
                )
            )
            break
        if not isinstance(value, TensorRef):
            found.append(
                _at(
                    "PP115",
                    path,
                    f"output {quoted(name)} holds {value_phrase(value, limits, tally)}, not a "
                    "tensor",
                    *where,
                    sglang_error=ADD_NOT_TENSOR.format(name, quoted),
                )
            )
            break
        if f"{OUTPUT_PREFIX}{name}" in existing:
            found.append(
                _at(
                    "PP115",
                    path,
                    f"output {quoted(name)} is already in the tensor dict",
                    *where,
                    sglang_error=ADD_DUPLICATE.format(name, quoted),
                )
            )
            break
    return found


def _security(dump: Dump, limits: Limits) -> list[Finding]:
    unsafe = [name for name, allowed in dump.globals_seen.items() if not allowed]
    if not unsafe:
        return []
    where: dict[str, tuple[str | None, Any]] = {}
    root = dump.root
    top = root.items() if isinstance(root, dict) else [(None, root)]
    wanted = set(unsafe)
    # One walk over all entries: each node is credited to the first entry that reaches it.
    seen: set[int] = set()
    for key, value in top:
        for node in walk(value, limits, dump.path, seen):
            if isinstance(node, (Opaque, GlobalRef)) and node.name in wanted:
                where.setdefault(node.name, (key_text(key) if key is not None else None, node))
    found = []
    for name in unsafe:
        key, node = where.get(name, (None, None))
        action = "import it"
        if isinstance(node, Opaque):
            args = ", ".join(safe_repr(a, 60) for a in node.args)
            action = (
                f"import it and create a {name} object"
                if node.via == "new"
                else f"import it and call {name}({args})"
            )
        found.append(
            finding(
                "PP201",
                dump.path,
                f"the pickle references {name}, which is not on the tensor "
                f"allowlist; torch.load(weights_only=False) would {action}",
                key,
                extra={"global": name},
            )
        )
    return found


_INT64_MAX = 2**63 - 1


def _view_problem(tensor: TensorRef) -> str | None:
    """Why torch could not set this tensor's view on its storage (None when it can)."""
    storage = tensor.storage
    if storage is None or tensor.stride is None or tensor.kind != "dense":
        return None
    if len(tensor.stride) != len(tensor.shape):
        return None
    numel = tensor.numel
    if numel > _INT64_MAX:
        return f"shape {tuple(tensor.shape)} holds {numel} elements, more than int64 counts"
    if numel == 0:
        return None
    end = (
        tensor.offset
        + 1
        + sum((size - 1) * step for size, step in zip(tensor.shape, tensor.stride, strict=True))
    )
    if end > storage.numel and tensor.dtype == storage.dtype:
        return (
            f"shape {tuple(tensor.shape)} at offset {tensor.offset} reaches element {end} "
            f"of a storage of {storage.numel}"
        )
    reach = end * DTYPE_ITEMSIZE.get(tensor.dtype, 1)
    if tensor.dtype != storage.dtype and reach > storage.nbytes:
        # _rebuild_tensor_v3: a typed view over an untyped (byte) storage.
        return (
            f"{tensor.dtype} shape {tuple(tensor.shape)} at offset {tensor.offset} reaches "
            f"byte {reach} of a storage of {storage.nbytes} bytes"
        )
    return None


def _nodes(value: Any, limits: Limits, path: str, seen: set[int]) -> Any:
    """What ``walk(value, limits, path, seen)`` yields; a plain tensor (the usual entry) without
    a walk: it holds nothing else."""
    if value.__class__ is TensorRef and value.state is None:
        if id(value) in seen:
            return ()
        seen.add(id(value))
        return (value,)
    return walk(value, limits, path, seen)


def _tensor_views(dump: Dump, payloads: list[Payload], limits: Limits) -> list[Finding]:
    found = []
    seen: set[int] = set()
    for payload in payloads:
        for key, value in payload.mapping.items():
            if value.__class__ in LEAF_TYPES:
                continue  # holds no tensor
            for node in _nodes(value, limits, dump.path, seen):
                if isinstance(node, TensorRef):
                    problem = _view_problem(node)
                    if problem is not None:
                        found.append(
                            _at(
                                "PP116",
                                dump.path,
                                f"tensor {problem}; torch.load fails on it",
                                payload,
                                key,
                            )
                        )
    return found


def _storage_records(dump: Dump, payloads: list[Payload], limits: Limits) -> list[Finding]:
    if dump.container != "zip":
        return []
    bad = [s for s in dump.storages if s.record_size is None or s.record_size < s.nbytes]
    if not bad:
        return []
    keys: dict[int, str] = {}
    seen: set[int] = set()  # each node is credited to the first entry that reaches it
    for payload in payloads:
        for key, value in payload.mapping.items():
            if value.__class__ in LEAF_TYPES:
                continue  # holds no tensor
            for node in _nodes(value, limits, dump.path, seen):
                if isinstance(node, TensorRef) and node.storage is not None:
                    keys.setdefault(id(node.storage), key_text(key))
    found = []
    for storage in bad:
        state = (
            "missing"
            if storage.record_size is None
            else f"{storage.record_size} bytes, {storage.nbytes} declared"
        )
        found.append(
            finding(
                "PP113",
                dump.path,
                f"storage record {shown(storage.record or '')} is {state}",
                keys.get(id(storage)),
            )
        )
    return found
