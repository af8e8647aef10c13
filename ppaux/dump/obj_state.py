"""A tensor's saved attribute state as torch.load applies it.

torch.save writes a tensor with attributes, a Parameter with them, or a subclass, with the
object's ``__dict__`` as a state (``_rebuild_from_type_v2``, ``_rebuild_parameter_with_state``),
and torch.load's ``_set_obj_state`` (torch/_utils.py, 2.13) runs ``setattr(tensor, name, value)``
for each item, in order. A name that is one of the tensor's own fields goes through that
field's setter, not into ``__dict__``: a read-only field makes torch.load fail, ``requires_grad``
sets the flag, ``data`` replaces what the tensor views, and the rest are no-ops for the values
listed here (observed in torch 2.13, both loaders). Each is read as torch reads it; what torch
refuses is refused with its reason (PP117); what its setter does that ppaux does not describe
(gradients, hooks, a class or a ``__dict__`` replaced, values written in place) is refused as
not modelled (PP202), never described as if the name were an attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ppaux.dump.build_state import GRAD_DTYPES, set_requires_grad
from ppaux.dump.model import DtypeRef, TensorRef
from ppaux.dump.pickle_state import PickleState

__all__ = ["READ_ONLY_FIELDS", "SETTER_FIELDS", "TENSOR_FIELDS", "apply_obj_state"]

#: The tensor's fields torch.load cannot set (every value: "attribute ... is not writable" or
#: "property ... has no setter"): a state naming one makes torch.load fail.
READ_ONLY_FIELDS = frozenset(
    [
        "H",
        "T",
        "__cuda_array_interface__",
        "__weakref__",
        "_base",
        "_cdata",
        "_has_symbolic_sizes_strides",
        "_python_dispatch",
        "_version",
        "device",
        "dtype",
        "grad_fn",
        "is_cpu",
        "is_cuda",
        "is_ipu",
        "is_leaf",
        "is_maia",
        "is_meta",
        "is_mkldnn",
        "is_mps",
        "is_mtia",
        "is_nested",
        "is_quantized",
        "is_sparse",
        "is_sparse_csr",
        "is_vulkan",
        "is_xla",
        "is_xpu",
        "itemsize",
        "layout",
        "mH",
        "mT",
        "name",
        "nbytes",
        "ndim",
        "output_nr",
        "retains_grad",
        "shape",
    ]
)
#: The fields whose setter torch.load runs: none of them ends in the tensor's ``__dict__``.
SETTER_FIELDS = frozenset(
    [
        "__class__",
        "__dict__",
        "_backward_hooks",
        "_grad",
        "_grad_fn",
        "_post_accumulate_grad_hooks",
        "data",
        "grad",
        "grad_dtype",
        "imag",
        "real",
        "requires_grad",
        "volatile",
    ]
)
#: Every data descriptor of torch.Tensor and its bases (torch 2.13): names a state sets on the
#: tensor itself rather than in its ``__dict__``.
TENSOR_FIELDS = READ_ONLY_FIELDS | SETTER_FIELDS

#: Values as the pickle gives them that are plain data (never a tensor, class or dtype).
_PLAIN = (type(None), bool, int, float, complex, str, bytes, bytearray, tuple, list, dict)


def apply_obj_state(
    m: PickleState, state: object, where: str, tensor: TensorRef
) -> dict[Any, Any] | None:
    """Apply ``state`` (None, a dict, or a (dict or None, slots dict) pair) to ``tensor`` as
    torch's ``_set_obj_state`` does when the rebuild ``where`` runs, and return the attributes
    it leaves in the tensor's ``__dict__`` (None for none). The state's dicts are read as they
    are at this point of the pickle: items added later (a tensor whose attribute refers to the
    tensor itself) are not set, as in torch."""
    from ppaux.errors import TorchRefuses

    if state is None:
        return None
    if isinstance(state, tuple) and len(state) != 2:
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: {where} has a state of "
            f"{len(state)} items (torch unpacks a (dict, slots) pair)",
        )
    attributes: dict[Any, Any] = {}
    for part in state if isinstance(state, tuple) else (state,):
        if part is None or (isinstance(part, dict) and not part):
            continue
        if not isinstance(part, dict):
            if part:  # torch sets attributes from a state only where it is true
                raise TorchRefuses(
                    m.path,
                    f"torch.load refuses the file: {where} sets attributes "
                    f"from a {type(part).__name__}, not a dict",
                )
            m.deviate(f"{where} state holds an empty {type(part).__name__}, not a dict")
            continue
        for name, value in list(part.items()):
            if not isinstance(name, str):
                raise TorchRefuses(
                    m.path,
                    f"torch.load refuses the file: {where} sets an "
                    "attribute whose name is not a string",
                )
            if name in TENSOR_FIELDS:
                _set_field(m, tensor, name, value, where)
            else:
                attributes[name] = value
    return attributes or None


def _set_field(m: PickleState, tensor: TensorRef, name: str, value: object, where: str) -> None:
    """``setattr(tensor, name, value)`` for one of the tensor's own fields, as torch 2.13 runs
    it: refused where torch fails, applied where its effect is what ppaux describes."""
    from ppaux.errors import CAUSE_EDITED, CAUSE_SAVED_AS_IT_WAS, ReadMismatch, TorchRefuses

    def refuse(why: str) -> TorchRefuses:
        # torch.save writes a tensor's __dict__ as it is: it may hold such a field.
        return TorchRefuses(
            m.path,
            f"torch.load refuses the file: {where} sets the tensor's {name!r}: {why}",
            (CAUSE_SAVED_AS_IT_WAS, CAUSE_EDITED),
        )

    def unmodelled(what: str) -> ReadMismatch:
        return ReadMismatch(
            m.path,
            f"{where} sets the tensor's {name!r} ({what}): torch.load's tensor is not "
            "described (not modelled)",
        )

    plain = isinstance(value, _PLAIN)
    if name in READ_ONLY_FIELDS:
        raise refuse("torch cannot set it (a read-only field)")
    if name == "requires_grad":
        set_requires_grad(m, tensor, value, where)
    elif name == "data":
        _set_data(m, tensor, value, refuse, unmodelled)
    elif name == "volatile":
        return  # torch ignores it ("volatile was removed and now has no effect")
    elif name in ("grad", "_grad", "_grad_fn", "grad_dtype") and value is None:
        return  # a tensor loaded by torch has no gradient, grad_fn or grad dtype: no change
    elif name in ("grad", "_grad"):
        if plain:
            what = type(value).__name__
            raise refuse(f"a gradient is a tensor or None, not a value of type {what}")
        raise unmodelled("torch sets its gradient")
    elif name == "_grad_fn":
        raise refuse("torch sets it only to None")
    elif name == "grad_dtype":
        if not isinstance(value, DtypeRef):
            raise refuse("torch takes a dtype or None")
        raise unmodelled("torch sets the dtype of its gradient")
    elif name in ("_backward_hooks", "_post_accumulate_grad_hooks"):
        if value is not None and not (isinstance(value, dict) and not value):
            raise unmodelled("torch keeps them as the tensor's hooks")
    elif name == "imag" and not tensor.dtype.startswith("complex"):
        raise refuse(f"a {tensor.dtype} tensor has no imaginary part")
    elif name in ("__class__", "__dict__") and (plain and not isinstance(value, dict)):
        raise refuse(f"torch cannot set it to a value of type {type(value).__name__}")
    else:
        raise unmodelled("torch's setter changes the tensor")


def _set_data(
    m: PickleState,
    tensor: TensorRef,
    value: object,
    refuse: Callable[[str], Exception],
    unmodelled: Callable[[str], Exception],
) -> None:
    """``tensor.data = value``: the tensor then views what ``value`` views (dtype, shape,
    stride, offset, storage, view bits), keeping its own requires_grad and attributes."""
    if not isinstance(value, TensorRef):
        if isinstance(value, _PLAIN):
            raise refuse(f"torch takes a tensor, not a value of type {type(value).__name__}")
        raise unmodelled(f"to a value of type {type(value).__name__}")
    if value.kind != "dense" or value.layout != "torch.strided" or value.storage is None:
        raise unmodelled(f"to a {value.kind} tensor")
    if tensor.requires_grad and value.dtype not in GRAD_DTYPES:
        raise refuse(
            f"a tensor that requires gradients takes data of a floating point or complex "
            f"dtype, not {value.dtype}"
        )
    # The view the rebuild made is dropped, but torch built it first: kept to be checked.
    made = TensorRef(tensor.dtype, tensor.shape, tensor.stride, tensor.device, offset=tensor.offset)
    made.storage, made.kind, made.layout = tensor.storage, tensor.kind, tensor.layout
    m.tensors_built.append(made)
    tensor.dtype, tensor.shape, tensor.stride = value.dtype, value.shape, value.stride
    tensor.offset, tensor.storage, tensor.device = value.offset, value.storage, value.device
    tensor.bits = value.bits
