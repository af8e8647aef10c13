"""What BUILD and a Parameter's creation do to the tensor and array stand-ins.

torch's rules for a tensor's fields and its requires_grad, BUILD on a tensor or a Parameter as
torch's loader applies it, and numpy's rules for an array's state: each refuses, with torch's or
numpy's reason, what they refuse, and records what torch.save never writes.
"""

from __future__ import annotations

from typing import Any

from ppaux.dump.model import DimRange, NdArrayRef, NumpyDtype, StorageRef, TensorRef
from ppaux.dump.numpy_subtypes import MASKED_ARRAY
from ppaux.dump.numpy_writer import (
    NUMPY_REFUSES,
    array_data_refusal,
    array_state_deviation,
    bool_bytes_deviation,
    buffer_refusal,
    fortran_deviation,
)
from ppaux.dump.pickle_state import PickleState
from ppaux.text import cut

__all__ = [
    "GRAD_DTYPES",
    "PARAMETER_TYPES",
    "build_dim_range",
    "build_ndarray",
    "build_plain_tensor",
    "build_tensor",
    "is_shape",
    "new_parameter",
    "set_requires_grad",
]

_INT64_END = 2**63


def is_shape(value: object, max_dims: int) -> bool:
    """True for a tuple or list of at most ``max_dims`` sizes, each an int in [0, 2**63)."""
    return (
        isinstance(value, (tuple, list))
        and len(value) <= max_dims
        and all(type(v) is int and 0 <= v < _INT64_END for v in value)
    )


#: dtypes that can require gradients (torch: floating point and complex).
GRAD_DTYPES = frozenset(
    {
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex32",
        "complex64",
        "complex128",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
    }
)


def set_requires_grad(m: PickleState, tensor: TensorRef, value: object, by: str) -> None:
    """Set ``tensor.requires_grad`` to ``value`` as torch's rebuild ``by`` does (torch 2.x).

    torch takes only a bool there (``tensor.requires_grad = value`` raises "requires_grad must
    be a bool"; ``Parameter``'s ``_make_subclass`` and ``empty_strided`` refuse any other type)
    and lets only floating point and complex tensors require gradients. Either way torch.load
    fails, and the file is refused with torch's reason rather than read with a guess.
    """
    from ppaux.errors import TorchRefuses

    if not isinstance(value, bool):
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: {by} sets a tensor's requires_grad to a "
            f"value of type {type(value).__name__} (torch takes a bool)",
        )
    if value and tensor.dtype not in GRAD_DTYPES:
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: {by} makes a {tensor.dtype} tensor require "
            "gradients (only floating point and complex tensors can)",
        )
    tensor.requires_grad = value


def build_plain_tensor(m: PickleState, state: object) -> None:
    """BUILD on a plain tensor, as torch's default (weights-only) loader runs it: torch 2.13's
    ``_weights_only_unpickler`` calls ``tensor.set_(*state)``, which replaces the tensor's
    storage and shape (an empty state makes it an empty tensor) or refuses arguments that are
    not a storage or tensor. torch.save never writes BUILD on a tensor (its reduction carries
    no state), so the file is refused, with torch's reason where set_ refuses."""
    from ppaux.errors import ReadMismatch, TorchRefuses

    if not isinstance(state, (tuple, list, dict, str, bytes)):
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: BUILD on a tensor with a {type(state).__name__} "
            "state (torch's weights-only loader calls set_(*state))",
        )
    items = list(state)
    if items and not isinstance(items[0], (StorageRef, TensorRef)):
        raise TorchRefuses(
            m.path,
            "torch.load refuses the file: BUILD on a tensor calls set_(*state) with a "
            f"{type(items[0]).__name__} first (set_ takes a storage or a tensor)",
        )
    raise ReadMismatch(
        m.path,
        "BUILD on a tensor (torch's weights-only loader calls set_(*state), which replaces "
        "the tensor's storage and shape; torch.save never writes it): not modelled",
    )


def build_tensor(m: PickleState, tensor: TensorRef, state: object) -> None:
    """BUILD on a Parameter (a plain tensor is refused first by :func:`build_plain_tensor`),
    as torch's loader calls ``Tensor.__setstate__`` (torch 2.13): a state of 3
    items sets requires_grad and the backward hooks (a no-op for hooks None or empty); 4 items
    call ``set_`` and 5 replace the data, which ppaux does not model (refused, PP202); any
    other state makes torch fail (refused, PP117)."""
    from ppaux.errors import ReadMismatch, TorchRefuses

    if not isinstance(state, (tuple, list, dict, str, bytes)):
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: BUILD on a tensor with a {type(state).__name__} "
            "state (Tensor.__setstate__ takes its length)",
        )
    if len(state) in (4, 5):
        raise ReadMismatch(
            m.path,
            f"BUILD on a tensor with a {len(state)}-item state (Tensor.__setstate__ "
            f"{'calls set_' if len(state) == 4 else 'replaces its data'}): not modelled",
        )
    if len(state) != 3 or isinstance(state, (dict, str, bytes)):
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: BUILD on a tensor with a state of {len(state)} "
            "items (Tensor.__setstate__ unpacks 3)",
        )
    requires_grad, _, hooks = state
    set_requires_grad(m, tensor, requires_grad, "BUILD")
    if hooks is not None and not (isinstance(hooks, dict) and not hooks):
        raise ReadMismatch(
            m.path, "BUILD gives a tensor backward hooks: not modelled (torch keeps them)"
        )


def build_ndarray(m: PickleState, arr: NdArrayRef, state: object) -> None:
    # numpy's __setstate__ tuple: (version, shape, dtype, is_fortran, data), version 0 or 1, or
    # the same without the version (numpy/_core/src/multiarray/methods.c, array_setstate).
    if not isinstance(state, tuple) or len(state) not in (4, 5):
        raise m.error("numpy array state is not numpy's")
    offset = 1 if len(state) == 5 else 0
    shape, dtype, fortran = state[offset], state[offset + 1], state[offset + 2]
    data = state[offset + 3]
    if arr.refusal is None and arr.subtype == MASKED_ARRAY:
        arr.refusal = (
            f"numpy.ma.MaskedArray is given an ndarray's state of {len(state)} items; its "
            "__setstate__ unpacks 7 (numpy: ValueError)"
        )
    arr.problem = arr.refusal or _ndarray_refusal(state, offset)
    if isinstance(shape, tuple) and is_shape(shape, m.limits.max_dims):
        arr.shape = shape
    if isinstance(dtype, NumpyDtype):
        arr.dtype = dtype.name
        arr.descr = dtype
        if arr.refusal is None and dtype.refusal is not None:
            arr.refusal = arr.problem = dtype.refusal
    arr.fortran = bool(fortran) if isinstance(fortran, (bool, int)) else False
    if isinstance(data, (bytes, bytearray)):
        arr.raw = bytes(data)  # the array's bytes; an object array has a list
    elif isinstance(data, str) and max(data, default="\0") <= "\xff":
        arr.raw = data.encode("latin-1")  # numpy reads a str as its Latin-1 bytes
    if arr.problem is None:
        arr.problem = buffer_refusal(arr)
    deviation = array_state_deviation(state) or fortran_deviation(arr.shape, arr.fortran)
    if deviation is None and arr.raw is not None and arr.descr is not None:
        deviation = bool_bytes_deviation(arr.descr.spec, arr.raw)
    if deviation is not None:
        m.deviate(deviation, severe=False)  # numpy reads it as the writer's form


def _ndarray_refusal(state: tuple[Any, ...], offset: int) -> str | None:
    """Why numpy's ndarray.__setstate__ refuses ``state`` (as numpy 2.x parses it), or None."""
    if offset:
        version = state[0]
        if not isinstance(version, int) or version not in (0, 1):
            return (
                f"its state version is {cut(repr(version), 40)}, where numpy reads only 0 and "
                f"1; {NUMPY_REFUSES}"
            )
    shape, dtype, fortran, data = state[offset : offset + 4]
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        return f"its shape {cut(repr(shape), 60)} is not a tuple of sizes; numpy refuses it"
    if not isinstance(dtype, NumpyDtype):
        return "its dtype is not a numpy dtype; numpy refuses it"
    if not isinstance(fortran, int):
        return "its is_fortran flag is not an int; numpy refuses it"
    found = array_data_refusal(dtype.spec, data)
    if found is not None:
        return found
    if isinstance(data, str) and max(data, default="\0") > "\xff":
        return "its data is a str past Latin-1; numpy refuses it"
    return None


#: Names of torch.nn.Parameter, which NEWOBJ may create: Parameter.__new__(cls, data,
#: requires_grad=True) makes a tensor.
PARAMETER_TYPES = {"torch.nn.parameter.Parameter", "torch.nn.Parameter"}


def new_parameter(m: PickleState, args: tuple[Any, ...]) -> TensorRef:
    if not args or not isinstance(args[0], TensorRef) or len(args) > 2:
        raise m.error("torch.nn.Parameter created from something that is not a tensor")
    tensor = args[0]
    tensor.subclass = "torch.nn.parameter.Parameter"
    set_requires_grad(m, tensor, args[1] if len(args) == 2 else True, "torch.nn.Parameter")
    return tensor


def build_dim_range(m: PickleState, obj: DimRange, state: object) -> None:
    """``BUILD`` on a ``_DimRange`` (:mod:`ppaux.dump.jagged`): the slots dataclass sets its
    fields from a list, which torch.save writes as ``[dim, min, max]`` (torch 2.13), or as
    the dict ``{'dim', 'min', 'max'}`` (torch 2.8)."""
    if obj.fields is not None:
        m.deviate("BUILD twice on a _DimRange")
    if isinstance(state, dict) and list(state) == ["dim", "min", "max"]:
        # torch 2.8's _DimRange, a dataclass without slots, writes its __dict__. The slots
        # dataclass of torch 2.13 sets its fields from the state's items in order, which
        # for a dict are its keys: that is what torch.load gives (the tensor is the same).
        if type(state["dim"]) is not int or not all(
            v is None or type(v) is int for v in (state["min"], state["max"])
        ):
            m.deviate("a _DimRange state that is not the {dim, min, max} torch 2.8 writes")
        obj.fields = tuple(state)
        return
    if not (isinstance(state, list) and len(state) == 3):
        m.deviate("a _DimRange state that is not the [dim, min, max] torch.save writes")
        return
    if type(state[0]) is not int or not all(v is None or type(v) is int for v in state[1:]):
        m.deviate("a _DimRange state that is not the [dim, min, max] torch.save writes")
    obj.fields = tuple(state)
