"""The payload and security checks behind ``ppaux inspect``: a dump in, findings out.

Each check mirrors what sglang 0.5.19 - 0.5.23 does with the dict on PP rank 0
(``pop_auxiliary_output_from_pp_tensors``) or on the wire (``send_tensor_dict``), and names the
key it is about. :func:`predict_pop` gives the outcome pop would have with a PP-capable observer.
"""

from __future__ import annotations

from typing import Any

from ppaux.dump.findings_budget import at
from ppaux.dump.model import GlobalRef, Opaque, TensorRef, TorchValue
from ppaux.dump.near_miss import looks_like_prefix
from ppaux.dump.payload import (
    Payload,
    Tally,
    key_text,
    quoted,
    safe_repr,
    type_name,
    value_phrase,
)
from ppaux.dump.structure import Dump
from ppaux.dump.tensor_checks import (
    UNSENDABLE_KINDS,
    device_checks,
    numpy_refusals,
    storage_records,
    tensor_checks,
    tensor_views,
    unsendable_fails,
    unsendable_kind,
)
from ppaux.dump.value_walk import LEAF_TYPES, walk
from ppaux.limits import Limits
from ppaux.report import DumpExtra, Finding, FindingsBudget, Severity, finding
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
from ppaux.text import with_article

__all__ = ["check_dump", "check_payload", "predict_pop"]


def _python_type_name(key: object) -> str:
    # The name Python's own AttributeError would print for this key's type.
    if isinstance(key, Opaque):
        return key.name.rsplit(".", 1)[-1]
    if isinstance(key, TensorRef):
        return "Tensor"
    if isinstance(key, TorchValue):
        return key.type_name  # torch's C types print their dotted name
    return type(key).__name__


def predict_pop(mapping: dict[str, Any]) -> dict[str, Any]:
    """What pop does with ``mapping`` given a PP-capable observer, in sglang's order of checks;
    ``waits`` where pop never runs: a tensor sglang cannot send (sparse, quantized or nested,
    PP107), under any key of the dict, makes the sender fail, and rank 0 waits."""
    if any(
        isinstance(value, TensorRef) and value.kind in UNSENDABLE_KINDS
        for value in mapping.values()
    ):
        return {"outcome": "waits", "error_type": None, "error": None}
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


def _default_refusal(dump: Dump, found: list[Finding]) -> Finding:
    """PP119: torch.load's default reader refuses the file; whether the other reader reads it
    is said only where no value fails it (a tensor past its storage, a numpy array numpy
    refuses: PP116)."""
    codes = {f.code for f in found}
    refused = next((code for code in ("PP116", "PP117") if code in codes), None)
    other = (
        f"torch.load(weights_only=False) fails on it too ({refused})"
        if refused is not None
        else "torch.load(weights_only=False) would read it, but that loader runs code from any file"
    )
    return finding(
        "PP119",
        dump.path,
        f"torch.load's default (weights_only=True) refuses this file: "
        f"{dump.weights_only_refusal}; {other}",
        extra=_refusal_extra(dump.weights_only_refusal),
    )


def _refusal_extra(refusal: str | None) -> DumpExtra:
    """``where`` the reader stops, and ``"kind": "protocol"`` where it stops at the FRAME that a
    pickler of protocol 4 or later writes first (torch.save was given a pickle_protocol): its
    fix is the default."""
    if "opcode 0x95 (FRAME)" in (refusal or ""):
        return {"where": refusal, "kind": "protocol"}
    return {"where": refusal}


def check_dump(
    dump: Dump,
    payloads: list[Payload],
    limits: Limits,
    tally: Tally | None = None,
    *,
    default_reader: bool = True,
) -> list[Finding]:
    """Every finding for one dump: security first, then each payload, then storage records.

    ``tally`` is shared with the description of the same dump (see :class:`Tally`);
    ``default_reader=False`` leaves out what torch.load's default reader refuses (PP119), and
    the walk of the pickle that finds it.
    """
    if tally is None:
        tally = Tally(limits, dump.path)
    budget = FindingsBudget(limits)
    found = _security(dump, limits)
    if dump.deviation is not None:
        found.append(
            finding(
                "PP118/deviation",
                dump.path,
                f"not as torch.save writes it: {dump.deviation.text()}",
                severity=Severity.ERROR if dump.deviation.severe else None,
                extra={"where": dump.deviation.where},
            )
        )
    default_refusal = len(found) if default_reader and dump.weights_only_refusal else None
    if not payloads:
        found.append(finding("PP114", dump.path, "no tensor dict found in the file"))
    for payload in payloads:
        if payload.role == "output":
            found += _check_add_output(dump.path, payload, payloads, limits, tally, budget)
        else:
            found += check_payload(dump.path, payload, limits, tally, budget)
    found += storage_records(dump, payloads, limits)
    found += tensor_views(dump, payloads, limits, budget)
    found += numpy_refusals(dump, payloads, limits, budget)
    if default_refusal is not None:
        found.insert(default_refusal, _default_refusal(dump, found))
    # One finding per code stands for those counted and not built; the cap words it.
    found += budget.counted(dump.path)
    return budget.cap(found)


def check_payload(
    path: str,
    payload: Payload,
    limits: Limits,
    tally: Tally | None = None,
    budget: FindingsBudget | None = None,
) -> list[Finding]:
    """Findings for one tensor dict as rank 0 would receive it: its keys, its auxiliary entries
    and their tensors, the other entries, and the message it travels in; at most ``budget``'s
    bound of each code are built, the rest counted in it (a budget of its own by default: the
    caller words what it counted, :meth:`~ppaux.report.FindingsBudget.counted`)."""
    if tally is None:
        tally = Tally(limits, path)
    if budget is None:
        budget = FindingsBudget(limits)
    mapping = payload.mapping
    aux = [(k, v) for k, v in mapping.items() if isinstance(k, str) and k.startswith(OUTPUT_PREFIX)]
    found = _key_types(path, payload, budget)
    found += _aux_entries(path, payload, aux, limits, tally, budget)
    found += device_checks(path, payload, aux, budget)
    found += _other_entries(path, payload, limits, tally, budget)
    if aux:
        found += _message_kind(path, payload, aux[0][0], budget)
    return found


def _key_types(path: str, payload: Payload, budget: FindingsBudget) -> list[Finding]:
    # Every key that is not a string: pop calls startswith on each.
    mapping = payload.mapping
    found: list[Finding] = []
    pop_error: str | None = None  # worked out once: it scans the dict to its first bad key
    for key in mapping:
        if not isinstance(key, str):
            if pop_error is None:
                pop_error = predict_pop(mapping)["error"]
            found += at(
                budget,
                "PP103",
                path,
                f"key {safe_repr(key, 60)} is {with_article(_python_type_name(key))}, not a "
                "string; pop calls key.startswith on every key and fails",
                payload,
                key,
                sglang_error=pop_error,
            )
    return found


def _aux_entries(
    path: str,
    payload: Payload,
    aux: list[tuple[str, Any]],
    limits: Limits,
    tally: Tally,
    budget: FindingsBudget,
) -> list[Finding]:
    # Each auxiliary entry: its name as the observer receives it, and its value.
    found: list[Finding] = []
    for key, value in aux:
        name = key[len(OUTPUT_PREFIX) :]
        where = payload, key
        if name == "":
            found += at(
                budget,
                "PP102",
                path,
                "key is the bare auxiliary prefix: the observer receives a tensor named '' (empty)",
                *where,
            )
        elif name.startswith(OUTPUT_PREFIX) or name != name.strip():
            found += at(
                budget,
                "PP104/doubled-prefix",
                path,
                f"auxiliary name {quoted(name)} carries a doubled prefix or stray "
                "whitespace: the observer receives that name as it is",
                *where,
            )
        if not isinstance(value, TensorRef):
            found += at(
                budget,
                "PP101",
                path,
                f"auxiliary entry {quoted(name)} holds {value_phrase(value, limits, tally)}, "
                "not a tensor",
                *where,
                extra={"type": type_name(value)},
            )
            continue
        found += tensor_checks(budget, path, where, name, value)
    return found


def _other_entries(
    path: str, payload: Payload, limits: Limits, tally: Tally, budget: FindingsBudget
) -> list[Finding]:
    # The entries that are not auxiliary: a near miss of the prefix, tensors nested in metadata.
    found: list[Finding] = []
    for key, value in payload.mapping.items():
        is_aux = isinstance(key, str) and key.startswith(OUTPUT_PREFIX)
        if isinstance(key, str) and not is_aux and looks_like_prefix(key):
            found += at(
                budget,
                "PP104/near-prefix",
                path,
                f"key {quoted(key)} looks like the auxiliary prefix "
                f"{OUTPUT_PREFIX!r} but does not start with it exactly; pop ignores it and "
                "its output is lost",
                payload,
                key,
            )
        if not is_aux and isinstance(value, TensorRef) and value.kind in UNSENDABLE_KINDS:
            # send_tensor_dict sends every tensor of the dict's top level on its own.
            found += at(
                budget,
                "PP107/tensor",
                path,
                f"tensor {quoted(key) if isinstance(key, str) else key_text(key)} is "
                f"{unsendable_kind(value)}; "
                f"the sender fails on it {unsendable_fails(value)}, and rank 0 waits "
                "forever",
                payload,
                key,
            )
        if not is_aux and value.__class__ not in LEAF_TYPES and not isinstance(value, TensorRef):
            nested = tally.tensors(value)
            if nested:
                found += at(
                    budget,
                    "PP110",
                    path,
                    f"{nested} tensor{'s' if nested != 1 else ''} nested inside "
                    f"{value_phrase(value, limits, tally)}: they travel pickled in the "
                    f"metadata{_devices_phrase(value, limits, path)}",
                    payload,
                    key,
                )
    return found


def _devices_phrase(value: object, limits: Limits, path: str) -> str:
    """The devices other than the CPU that tensors nested in ``value`` were saved on: the
    receiver's torch.load needs each (a CUDA device, or the module of hpu, privateuseone and
    the like), as for a tensor at the top level."""
    devices = sorted(
        {
            node.device
            for node in walk(value, limits, path)
            if isinstance(node, TensorRef)
            and node is not value
            and node.device not in ("cpu", "meta")
        }
    )
    if not devices:
        return ""
    shown = ", ".join(devices[:4]) + (", ..." if len(devices) > 4 else "")
    return f"; saved on {shown}, which torch.load needs present where it loads them"


def _message_kind(
    path: str, payload: Payload, first_aux: str, budget: FindingsBudget
) -> list[Finding]:
    # Auxiliary keys in a message rank 0 never pops them from.
    mapping = payload.mapping
    message_type = mapping.get(MSG_TYPE_KEY)
    proxy = [k for k in PROXY_KEYS if k in mapping]
    if isinstance(message_type, str) and message_type != OUTPUT_MSG_TYPE:
        return at(
            budget,
            "PP111/message-type",
            path,
            f"auxiliary keys in a message of type {quoted(message_type)}; rank 0 "
            f"pops them only from {OUTPUT_MSG_TYPE!r} messages",
            payload,
            first_aux,
        )
    if proxy:
        return at(
            budget,
            "PP111/proxy",
            path,
            f"auxiliary keys next to {', '.join(proxy)}: this is a proxy "
            "(hidden-state) message, which rank 0 never pops",
            payload,
            first_aux,
        )
    return []


def _check_add_output(
    path: str,
    payload: Payload,
    payloads: list[Payload],
    limits: Limits,
    tally: Tally,
    budget: FindingsBudget,
) -> list[Finding]:
    # A capture of a failing add: what add would refuse, in its order of checks.
    existing = next((p.mapping for p in payloads if p.role == "capture"), {})
    found = []
    for name, value in payload.mapping.items():
        where = (payload, name)
        if not isinstance(name, str) or not name:
            found += at(
                budget,
                "PP115/bad-name",
                path,
                f"output name {safe_repr(name, 40)} is not a non-empty string",
                *where,
                sglang_error=ADD_BAD_NAME.text,
            )
            break
        if not isinstance(value, TensorRef):
            found += at(
                budget,
                "PP115/not-tensor",
                path,
                f"output {quoted(name)} holds {value_phrase(value, limits, tally)}, not a tensor",
                *where,
                sglang_error=ADD_NOT_TENSOR.format(name, quoted),
            )
            break
        if f"{OUTPUT_PREFIX}{name}" in existing:
            found += at(
                budget,
                "PP115/duplicate",
                path,
                f"output {quoted(name)} is already in the tensor dict",
                *where,
                sglang_error=ADD_DUPLICATE.format(name, quoted),
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
                "PP201/not-allowed",
                dump.path,
                f"the pickle references {name}, which is not on the tensor "
                f"allowlist; torch.load(weights_only=False) would {action}",
                key,
                extra={"global": name},
            )
        )
    return found
