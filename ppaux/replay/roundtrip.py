"""The two ends of one replay: what the last stage sends, and what rank 0 makes of it.

* :func:`sender_dict` builds the dict the last pipeline stage sends: through the transport's own
  ``add`` (a validating sender, as every sglang release from 0.5.19 is) or by writing the
  prefixed keys directly (a legacy, patched or out-of-tree sender);
* :func:`receive` runs ``pop`` on a received dict with a :class:`ReferenceObserver`, then adds
  the popped output into a fresh dict with ``add``, the way back;
* :func:`compare` checks what came back against what was sent, bit for bit, on the sender's device.

``add`` and ``pop`` are passed in, so the same steps run ppaux's reference transport or sglang's
own module. Results are frozen data (they cross process boundaries in the torch.distributed
transport). This module imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from ppaux.dump import key_text, safe_repr, type_name
from ppaux.errors import PpauxError
from ppaux.sglang import MSG_TYPE_KEY, OUTPUT_PREFIX

__all__ = [
    "Reception",
    "ReferenceObserver",
    "ReferenceOutput",
    "SenderRefused",
    "aux_entries",
    "compare",
    "describe",
    "receive",
    "sender_dict",
]


class _TrackedMapping(dict[str, Any]):
    """A dict that remembers which entry ``items()`` handed out last, to name a failing entry."""

    current: Any = None

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]
        for name, value in dict.items(self):
            self.current = name
            yield name, value


class ReferenceOutput:
    """An auxiliary output that holds tensors by name and gives them back from ``to_pp_tensors``."""

    def __init__(self, tensors: dict[str, Any]) -> None:
        self.tensors = _TrackedMapping(tensors)

    def to_pp_tensors(self) -> dict[str, Any]:
        """The held tensors, by name, in the order they were received."""
        return self.tensors


class ReferenceObserver:
    """A PP-capable sampling observer: rebuilds a :class:`ReferenceOutput` from what it receives."""

    def from_pp_tensors(self, tensors: dict[str, Any]) -> ReferenceOutput:
        """Keep the received tensors (a copy of the mapping, the tensors themselves)."""
        return ReferenceOutput(dict(tensors))


class SenderRefused(PpauxError):
    """The sender's ``add`` raised: ``error_type``, the verbatim ``message`` and the entry ``name``
    being added, if one was."""

    def __init__(self, error_type: str, message: str, name: object = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.name = name


def aux_entries(mapping: dict[str, Any]) -> dict[str, Any]:
    """The prefixed entries of ``mapping``, in order, keyed as in the dict."""
    return {k: v for k, v in mapping.items() if isinstance(k, str) and k.startswith(OUTPUT_PREFIX)}


def sender_dict(
    mapping: dict[str, Any],
    output: dict[str, Any] | None,
    *,
    validating: bool,
    add: Callable[[Any, Any], None],
) -> dict[str, Any]:
    """The dict the last stage sends, built from a recorded ``mapping``.

    ``output`` is a failing add's recorded ``to_pp_tensors()`` mapping (a capture of add), or
    None, in which case the auxiliary output is the prefixed entries already in ``mapping``.
    A validating sender puts the auxiliary output in with ``add`` after the other entries and
    before ``__msg_type__``, as sglang's last stage does; a legacy one writes the prefixed keys
    as they are. Raises :class:`SenderRefused` when ``add`` refuses.
    """
    if output is None:
        named = {k[len(OUTPUT_PREFIX) :]: v for k, v in aux_entries(mapping).items()}
        base = {
            k: v
            for k, v in mapping.items()
            if not (isinstance(k, str) and k.startswith(OUTPUT_PREFIX))
        }
    else:
        named, base = dict(output), dict(mapping)
    if not validating:
        sent = dict(mapping) if output is None else dict(base)
        if output is not None:
            for name, value in named.items():
                sent[f"{OUTPUT_PREFIX}{name}"] = value
        return sent
    message_type = base.pop(MSG_TYPE_KEY, _ABSENT)
    sent = dict(base)
    if named or output is not None:
        produced = ReferenceOutput(named)
        try:
            add(sent, produced)
        except Exception as exc:  # the transport's own errors, whatever their type
            raise SenderRefused(
                type(exc).__name__, _message(exc), produced.tensors.current
            ) from None
    if message_type is not _ABSENT:
        sent[MSG_TYPE_KEY] = message_type
    return sent


_ABSENT = object()


def _message(exc: BaseException) -> str:
    # Python's own KeyError quotes its argument; everything else is str() verbatim.
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


@dataclass(frozen=True)
class Reception:
    """What rank 0 made of a received dict: pop with a reference observer, then add back.

    ``outcome`` is 'ok' or 'error'; ``stage`` 'pop' or 'readd' where it failed; ``error_type``
    and ``error`` (verbatim) the exception raised there; ``culprit`` the key it is about.
    ``received`` and ``output`` describe the auxiliary entries received and the tensors the
    popped output gave back (see :func:`describe`); ``remaining_keys`` are the keys pop left in
    the dict, ``readded_keys`` those the way back produced.
    """

    received: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = "ok"
    stage: str | None = None
    error_type: str | None = None
    error: str | None = None
    culprit: str | None = None
    output: list[dict[str, Any]] | None = None
    remaining_keys: list[str] | None = None
    readded_keys: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        """The reception as plain data, one key per field."""
        return {
            "received": self.received,
            "outcome": self.outcome,
            "stage": self.stage,
            "error_type": self.error_type,
            "error": self.error,
            "culprit": self.culprit,
            "output": self.output,
            "remaining_keys": self.remaining_keys,
            "readded_keys": self.readded_keys,
        }


def receive(
    received: dict[str, Any], *, pop: Callable[[Any, Any], Any], add: Callable[[Any, Any], None]
) -> tuple[Reception, dict[str, Any] | None]:
    """Pop on rank 0 with a reference observer, then add the output into a fresh dict.

    Returns the :class:`Reception` and the re-added dict (None when pop failed or returned
    None).
    """
    info = Reception(
        received=[dict(describe(v), key=key_text(k)) for k, v in aux_entries(received).items()]
    )
    working = dict(received)
    try:
        output = pop(working, ReferenceObserver())
    except Exception as exc:
        return replace(
            info,
            outcome="error",
            stage="pop",
            error_type=type(exc).__name__,
            error=_message(exc),
            culprit=_pop_culprit(received, exc),
        ), None
    info = replace(info, remaining_keys=[key_text(k) for k in working])
    if output is None:
        return info, None
    tensors = output.to_pp_tensors() if hasattr(output, "to_pp_tensors") else None
    if isinstance(tensors, dict):
        info = replace(
            info, output=[dict(describe(v), name=key_text(n)) for n, v in tensors.items()]
        )
    readded: dict[str, Any] = {}
    try:
        add(readded, output)
    except Exception as exc:
        current = getattr(tensors, "current", None)
        return replace(
            info,
            outcome="error",
            stage="readd",
            error_type=type(exc).__name__,
            error=_message(exc),
            culprit=key_text(f"{OUTPUT_PREFIX}{current}") if current is not None else None,
        ), None
    return replace(info, readded_keys=[key_text(k) for k in readded]), readded


def _pop_culprit(received: dict[str, Any], exc: BaseException) -> str | None:
    # The entry a pop error is about: the first key pop cannot read, else the first
    # auxiliary value that is not a tensor.
    for key in received:
        if not isinstance(key, str):
            return key_text(key)
    for key, value in aux_entries(received).items():
        if not torch.is_tensor(value):
            return key
    return None


def describe(value: object) -> dict[str, Any]:
    """A value as the report shows it: a tensor's type, dtype, shape, device and layout, or a
    non-tensor's type and a bounded repr."""
    if isinstance(value, torch.Tensor):
        layout = str(value.layout).removeprefix("torch.")
        try:
            shape: list[int] | None = list(value.shape)
        except RuntimeError:  # nested tensors have no single shape
            shape = None
        kind = type(value)
        name = "torch.Tensor" if kind is torch.Tensor else f"{kind.__module__}.{kind.__qualname__}"
        return {
            "type": name,
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": shape,
            "device": str(value.device),
            "layout": "nested" if value.is_nested else layout,
        }
    return {"type": type_name(value), "repr": safe_repr(value)}


def summary(description: dict[str, Any]) -> str:
    """One short phrase for a :func:`describe` result: 'float32 (2, 4) cuda:0' or 'list [...]'."""
    if "dtype" in description:
        shape = "?" if description["shape"] is None else str(tuple(description["shape"]))
        extra = "" if description["type"] == "torch.Tensor" else f" {description['type']}"
        layout = "" if description["layout"] == "strided" else f" {description['layout']}"
        return f"{description['dtype']} {shape} {description['device']}{layout}{extra}"
    return f"{description['type']} {description['repr']}"


def compare(
    sent: dict[str, Any], readded: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Mismatches and changes between the auxiliary entries ``sent`` and those ``readded``.

    A mismatch is a difference in what the entries hold: a key missing or extra, another
    dtype, shape or layout, lost quantizer parameters, or different bits (compared element by
    element, on the sent tensor's device). A change is a difference the wire is known to make
    without changing the values: the device index, strides, the tensor subclass, requires_grad.
    """
    mismatches: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    for key in [*sent, *(k for k in readded if k not in sent)]:
        where = key_text(key)
        if key not in readded:
            mismatches.append(_item(where, "missing", "not given back by pop and add"))
        elif key not in sent:
            mismatches.append(_item(where, "extra", "given back but never sent"))
        else:
            _compare_values(where, sent[key], readded[key], mismatches, changes)
    return mismatches, changes


def _item(
    key: str, what: str, detail: str, sent: object = None, received: object = None
) -> dict[str, Any]:
    return {"key": key, "what": what, "detail": detail, "sent": sent, "received": received}


def _compare_values(
    key: str, a: object, b: object, mismatches: list[Any], changes: list[Any]
) -> None:
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        if a is not b and (type_name(a) != type_name(b) or safe_repr(a) != safe_repr(b)):
            mismatches.append(
                _item(key, "value", "a different value came back", safe_repr(a), safe_repr(b))
            )
        return
    before = len(mismatches)
    with torch.no_grad():
        _compare_tensors(key, a, b, mismatches)
    if len(mismatches) > before:
        return
    if a.device != b.device:
        changes.append(
            _item(
                key,
                "device",
                "the tensor came back on another device",
                str(a.device),
                str(b.device),
            )
        )
    if type(a) is not type(b):
        changes.append(
            _item(
                key,
                "type",
                "the tensor came back as another class",
                describe(a)["type"],
                describe(b)["type"],
            )
        )
    if a.layout == torch.strided and not a.is_nested and a.stride() != b.stride():
        changes.append(
            _item(
                key,
                "stride",
                "the tensor came back with other strides",
                list(a.stride()),
                list(b.stride()),
            )
        )
    if a.requires_grad != b.requires_grad:
        changes.append(
            _item(
                key, "requires_grad", "requires_grad was not kept", a.requires_grad, b.requires_grad
            )
        )


def _compare_tensors(key: str, a: torch.Tensor, b: torch.Tensor, out: list[Any]) -> None:
    if a is b:
        return  # the very tensor that was sent came back
    if a.dtype != b.dtype:
        out.append(_item(key, "dtype", "another dtype came back", str(a.dtype), str(b.dtype)))
        return
    if a.is_nested or b.is_nested:
        pieces = (a.unbind(), b.unbind()) if a.is_nested and b.is_nested else ((), (None,))
        if len(pieces[0]) != len(pieces[1]) or not all(
            _same_bits(x, y) for x, y in zip(*pieces, strict=True)
        ):
            out.append(_item(key, "bits", "the nested tensor came back different"))
        return
    if a.shape != b.shape:
        out.append(_item(key, "shape", "another shape came back", list(a.shape), list(b.shape)))
        return
    if a.layout != b.layout:
        out.append(_item(key, "layout", "another layout came back", str(a.layout), str(b.layout)))
        return
    if a.is_meta or b.is_meta:
        if a.is_meta != b.is_meta:
            out.append(
                _item(key, "device", "a meta tensor and a real one", str(a.device), str(b.device))
            )
        return
    if a.is_quantized:
        sent, came = _quantizer(a), _quantizer(b)
        if sent != came:
            out.append(
                _item(key, "quantizer", "the quantizer parameters were not kept", sent, came)
            )
            return
        a, b = a.int_repr(), b.int_repr()
    if a.layout != torch.strided:
        # Sparse layouts: compare the dense values they stand for.
        a, b = a.to_dense(), b.to_dense()
    differing = _differing(a, b)
    if differing:
        count, first = differing
        out.append(
            _item(
                key,
                "bits",
                f"{count} of {a.numel()} elements differ bit for bit (first at flat index {first})",
            )
        )


def _quantizer(t: torch.Tensor) -> Any:
    try:
        scheme = str(t.qscheme()).removeprefix("torch.")
        if scheme == "per_tensor_affine":
            return [scheme, t.q_scale(), t.q_zero_point()]
        return [
            scheme,
            t.q_per_channel_scales().tolist(),
            t.q_per_channel_zero_points().tolist(),
            t.q_per_channel_axis(),
        ]
    except RuntimeError:  # a received quantized tensor has no quantizer at all
        return None


def _flat_bytes(t: torch.Tensor) -> torch.Tensor:
    # The values a reader sees (a conjugate or negative view resolved, as a clone resolves
    # it), in logical element order (reshape copies a non-contiguous tensor), as raw bytes.
    return t.detach().resolve_conj().resolve_neg().reshape(-1).contiguous().view(torch.uint8)


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return _differing(a, b) is None


def _differing(a: torch.Tensor, b: torch.Tensor) -> tuple[int, int] | None:
    """(number of differing elements, first flat index) or None when every bit is equal."""
    if a.numel() != b.numel():
        return (a.numel(), 0)
    if a.numel() == 0:
        return None
    x, y = _flat_bytes(a), _flat_bytes(b.to(a.device))
    if torch.equal(x, y):
        return None
    per_element = (x != y).view(a.numel(), -1).any(dim=1)
    return int(per_element.sum()), int(per_element.nonzero()[0, 0])
