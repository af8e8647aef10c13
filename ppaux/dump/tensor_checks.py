"""The checks on a dump's tensors: each auxiliary tensor as the receiver rebuilds it, their
devices, every tensor's view on its storage, and the storage records a zip dump holds."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ppaux.dump.findings_budget import at
from ppaux.dump.model import DTYPE_ITEMSIZE, NdArrayRef, NumpyDtype, TensorRef
from ppaux.dump.numpy_writer import NUMPY_REFUSES
from ppaux.dump.payload import Payload, key_text, quoted, tensor_attributes
from ppaux.dump.structure import Dump
from ppaux.dump.value_walk import LEAF_TYPES, walk
from ppaux.errors import CAUSE_EDITED
from ppaux.limits import Limits
from ppaux.report import DumpExtra, Finding, FindingsBudget, Severity, finding
from ppaux.sglang import OUTPUT_PREFIX
from ppaux.text import cut

__all__ = [
    "UNSENDABLE_FAILS",
    "UNSENDABLE_KINDS",
    "device_checks",
    "numpy_refusals",
    "storage_records",
    "tensor_checks",
    "tensor_views",
    "unsendable_fails",
    "unsendable_kind",
    "view_problem",
]

#: Tensor kinds sglang's send_tensor_dict cannot send (PP107), and where the sender fails on
#: each: the scheduler passes its attention-TP group, whose reshape comes after the metadata.
#: Rank 0 waits forever in every case.
UNSENDABLE_FAILS = {
    "sparse": "after the metadata went out, at the attention-TP group's reshape, which has no "
    "sparse kernel",
    "quantized": "after the metadata went out, in torch.distributed's send, which has no "
    "kernel for it",
    "nested": "before anything went out, where sglang reads each tensor's size for the "
    "metadata (a nested tensor has none)",
}
UNSENDABLE_KINDS = tuple(UNSENDABLE_FAILS)


def unsendable_fails(tensor: TensorRef) -> str:
    """Where the sender fails on a tensor of an unsendable kind. A nested jagged tensor has a
    size (its ragged dimension symbolic), so the strided nested tensor's failure point is not
    its own; where sglang fails on it is not modelled."""
    if tensor.layout == "torch.jagged":
        return (
            "at a step ppaux does not model for a nested jagged tensor (torch.distributed "
            "sends strided tensors only)"
        )
    return UNSENDABLE_FAILS[tensor.kind]


def unsendable_kind(tensor: TensorRef) -> str:
    """What a tensor sglang cannot send is, for PP107: its kind and layout, and for a quantized
    tensor saved without a quantizer (a plain rebuild over a quantized dtype) what torch.load
    gives."""
    if _no_quantizer(tensor):
        return (
            f"quantized with no quantizer (a {tensor.dtype} tensor saved by a plain rebuild: "
            "torch.load gives a quantized tensor on which str, clone, item and torch.save fail)"
        )
    return f"{tensor.kind} ({tensor.layout})"


def tensor_checks(
    budget: FindingsBudget, path: str, where: tuple[Any, ...], name: str, tensor: TensorRef
) -> list[Finding]:
    found = []
    if tensor.kind in UNSENDABLE_KINDS:
        found += at(
            budget,
            "PP107/auxiliary",
            path,
            f"auxiliary tensor {quoted(name)} is {unsendable_kind(tensor)}; "
            f"the sender fails on it {unsendable_fails(tensor)}, and rank 0 waits "
            "forever",
            *where,
        )
    elif tensor.kind == "meta" or tensor.device == "meta":
        found += at(
            budget, "PP108", path, f"auxiliary tensor {quoted(name)} is a meta tensor", *where
        )
    elif not tensor.contiguous:
        found += at(
            budget,
            "PP106",
            path,
            f"auxiliary tensor {quoted(name)} is not contiguous (shape "
            f"{list(tensor.shape)}, stride {list(tensor.stride or ())})",
            *where,
        )
    if tensor.subclass is not None:
        found += at(
            budget,
            "PP109/subclass",
            path,
            f"auxiliary tensor {quoted(name)} is a {tensor.subclass}; the receiver "
            "gets a plain torch.Tensor",
            *where,
        )
    elif tensor.state and (attributes := tensor_attributes(tensor)):
        names = ", ".join(a["name"] for a in attributes[:3])
        found += at(
            budget,
            "PP109/attributes",
            path,
            f"auxiliary tensor {quoted(name)} has attributes set on it ({names}"
            f"{', ...' if len(attributes) > 3 else ''}); the receiver rebuilds a plain "
            "tensor from its dtype and size, without them",
            *where,
        )
    if tensor.numel == 0 and tensor.kind == "dense":
        found += at(
            budget,
            "PP112",
            path,
            f"auxiliary tensor {quoted(name)} has no elements (shape {list(tensor.shape)})",
            *where,
        )
    return found


def device_checks(
    path: str, payload: Payload, aux: list[tuple[str, Any]], budget: FindingsBudget
) -> list[Finding]:
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
            found += at(
                budget,
                "PP105",
                path,
                f"auxiliary tensor {quoted(key[len(OUTPUT_PREFIX) :])} is on "
                f"{tensor.device} but {what} on {reference}; the wire sends only the device "
                "type and the receiver allocates on its own current device, dropping the index",
                payload,
                key,
            )
    return found


_INT64_MAX = 2**63 - 1


def view_problem(tensor: TensorRef) -> str | None:
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


def _nodes(value: object, limits: Limits, path: str, seen: set[int]) -> Any:
    """What ``walk(value, limits, path, seen)`` yields; a plain tensor (the usual entry) without
    a walk: it holds nothing else."""
    if value.__class__ is TensorRef and value.state is None:
        if id(value) in seen:
            return ()
        seen.add(id(value))
        return (value,)
    return walk(value, limits, path, seen)


def _places(dump: Dump, payloads: list[Payload]) -> list[tuple[Payload | None, Any, Any]]:
    """Where a value of the file sits, for a check on every tensor and array it holds: each
    payload's entries, then the file's top-level entries (a payload's key, else the file's own
    key; None for a file that is one value). A node reached from a payload is credited to it."""
    places: list[tuple[Payload | None, Any, Any]] = [
        (payload, key, value) for payload in payloads for key, value in payload.mapping.items()
    ]
    root = dump.root
    places += [
        (None, k, v) for k, v in (root.items() if isinstance(root, dict) else [(None, root)])
    ]
    return places


def _at(
    budget: FindingsBudget,
    code: str,
    dump: Dump,
    text: str,
    payload: Payload | None,
    key: object,
    extra: DumpExtra | None = None,
) -> list[Finding]:
    """A finding on a value of a payload (:func:`at`) or of the file's top level; none where
    ``budget`` has listed enough of its code."""
    if payload is not None:
        return at(budget, code, dump.path, text, payload, key, extra=extra)
    if not budget.take(code.partition("/")[0]):
        return []
    where = key_text(key) if key is not None else None
    return [finding(code, dump.path, text, where, extra=extra)]


def tensor_views(
    dump: Dump, payloads: list[Payload], limits: Limits, budget: FindingsBudget
) -> list[Finding]:
    """Every tensor's view on its storage and every numpy array's state, wherever they sit in
    the file (in a payload or not): torch.load fails on the file at the first it cannot make."""
    if not dump.globals_seen:
        return []  # a pickle that names no global makes no tensor, array or dtype
    found = []
    seen: set[int] = set()
    for payload, key, value in _places(dump, payloads):
        if value.__class__ in LEAF_TYPES:
            continue  # holds no tensor
        for node in _nodes(value, limits, dump.path, seen):
            if isinstance(node, NdArrayRef):
                found += _numpy_refusal(budget, dump, node, payload, key)
            elif isinstance(node, TensorRef):
                if payload is not None and node is not value and _no_quantizer(node):
                    found += _unusable(budget, dump.path, node, payload, key)
                problem = view_problem(node)
                if problem is not None:
                    text = f"tensor {problem}; torch.load fails on it"
                    found += _at(budget, "PP116/record", dump, text, payload, key)
    return found


def _no_quantizer(tensor: TensorRef) -> bool:
    return tensor.kind == "quantized" and (tensor.parts or {}).get("quantizer", ()) is None


def _unusable(
    budget: FindingsBudget, path: str, tensor: TensorRef, payload: Payload, key: object
) -> list[Finding]:
    """A quantized tensor without a quantizer inside a value (at the top level, PP107's error
    names it): torch.load gives it, and nothing that uses it works."""
    what = f"a tensor inside {quoted(key) if isinstance(key, str) else key_text(key)} is "
    message = f"{what}{unsendable_kind(tensor)}; it is of no use to whoever loads it"
    return at(budget, "PP107/unusable", path, message, payload, key, severity=Severity.WARNING)


def _numpy_refusal(
    budget: FindingsBudget, dump: Dump, arr: NdArrayRef, payload: Payload | None, key: object
) -> list[Finding]:
    """A numpy array whose pickled state numpy's ``ndarray.__setstate__`` refuses: torch.load
    (weights_only=False) fails on it, naming nothing; the finding names the key."""
    if arr.problem is None or not arr.problem.endswith(NUMPY_REFUSES):
        return []
    what = f"numpy array: {cut(arr.problem, 200)}, so torch.load(weights_only=False) fails on it"
    return _at(budget, "PP116/numpy", dump, what, payload, key)


def storage_records(dump: Dump, payloads: list[Payload], limits: Limits) -> list[Finding]:
    """A storage whose record is missing or shorter than the storage: torch.load (either
    mode) stops at it when the pickle names it, so where nothing outside torch's allowlist runs
    first it is the file's refusal (PP117, naming the key); otherwise what the file lacks
    (PP113), beside the security findings."""
    if dump.container != "zip":
        return []
    bad = [s for s in dump.storages if s.record_size is None or s.record_size < s.nbytes]
    if not bad:
        return []
    keys: dict[int, str] = {}
    seen: set[int] = set()  # each node is credited to the first entry that reaches it
    for _, key, value in _places(dump, payloads):
        if value.__class__ in LEAF_TYPES or key is None:
            continue  # holds no tensor, or is the file's one value
        for node in _nodes(value, limits, dump.path, seen):
            if isinstance(node, TensorRef) and node.storage is not None:
                keys.setdefault(id(node.storage), key_text(key))
    refused = all(dump.globals_seen.values())
    found = []
    for storage in bad:
        record = cut(storage.record or "")
        if storage.record_size is None:
            state, torch_says = "missing", "file not found"
        else:
            state = f"{storage.record_size} bytes, {storage.nbytes} declared"
            torch_says = "record size does not match expected size"
        if refused:
            code = "PP117/storage-record"
            text = f"torch.load refuses the file: storage record {record} is {state} (torch: "
            text += f"{torch_says})"
        else:
            code, text = "PP113", f"storage record {record} is {state}"
        found.append(
            finding(code, dump.path, text, keys.get(id(storage)), extra={"causes": list(_EDITED)})
        )
    return found


#: The one cause of these refusals: torch.save writes every storage record whole, and numpy
#: writes only a state numpy reads back.
_EDITED = (CAUSE_EDITED,)


def numpy_refusals(
    dump: Dump, payloads: list[Payload], limits: Limits, budget: FindingsBudget
) -> list[Finding]:
    """A numpy array or dtype numpy refuses to make (``refusal``): torch.load fails on the file
    in either mode (PP117), naming the key that holds it (a payload's key, else the file's
    top-level key), once per array or dtype."""
    if not dump.globals_seen:
        return []  # a pickle that names no global makes no array or dtype
    found = []
    seen: set[int] = set()
    for payload, key, value in _places(dump, payloads):
        if value.__class__ in LEAF_TYPES:
            continue
        for node in walk(value, limits, dump.path, seen):
            if not isinstance(node, (NdArrayRef, NumpyDtype)) or node.refusal is None:
                continue
            what = "array" if isinstance(node, NdArrayRef) else "dtype"
            text = f"torch.load refuses the file: a numpy {what}: {node.refusal}"
            extra: DumpExtra = {"causes": list(_EDITED)}
            found += _at(budget, "PP117/numpy", dump, text, payload, key, extra)
    return found
