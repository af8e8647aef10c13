"""torch's tensor rebuild functions as the safe reader interprets them: each describes the
tensor torch would rebuild (a :class:`~ppaux.dump.model.TensorRef`) from the arguments the
pickle gives it, checked as torch checks them. Argument layouts follow ``torch/_utils.py`` and
``torch/_tensor.py`` of torch 2.x; :mod:`ppaux.dump.allowlist` holds the rest of the allowlist.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ppaux.dump.build_state import is_shape, set_requires_grad
from ppaux.dump.jagged import (
    JAGGED_REBUILD,
    JAGGED_TYPE,
    check_jagged_state,
    jagged_state,
    rebuild_njt,
)
from ppaux.dump.model import (
    DtypeRef,
    NdArrayRef,
    Opaque,
    StorageRef,
    TensorRef,
    TorchValue,
)
from ppaux.dump.nested_parts import check_nested_parts
from ppaux.dump.obj_state import apply_obj_state
from ppaux.dump.pickle_vm import Call, Machine
from ppaux.dump.quantizer_args import check_quantized
from ppaux.dump.rebuild_arity import with_arity
from ppaux.dump.set_args import set_refusal, set_strides
from ppaux.dump.sparse_args import check_compressed, check_coo, check_layout_name, sparse_kind
from ppaux.dump.view_bits import view_bits
from ppaux.errors import LimitExceeded, TorchRefuses
from ppaux.text import cut

__all__ = ["DTYPE_ALIASES", "LAYOUTS", "QSCHEMES", "TENSOR_CALLS", "as_shape", "name_of"]

# Aliases torch.<name> -> canonical dtype name.
DTYPE_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "chalf": "complex32",
}
LAYOUTS = {
    "strided",
    "sparse_coo",
    "sparse_csr",
    "sparse_csc",
    "sparse_bsr",
    "sparse_bsc",
    "jagged",
}
QSCHEMES = {
    "per_tensor_affine",
    "per_channel_affine",
    "per_tensor_symmetric",
    "per_channel_symmetric",
    "per_channel_affine_float_qparams",
}


def as_shape(m: Machine, value: object, what: str) -> tuple[int, ...]:
    max_dims = m.limits.max_dims
    if isinstance(value, (tuple, list)) and is_shape(value, max_dims):
        return tuple(value)
    if isinstance(value, (tuple, list)) and len(value) > max_dims:
        raise LimitExceeded(
            m.path,
            "max_dims",
            max_dims,
            f"tensor {what} has {len(value)} dimensions (more than {max_dims})",
        )
    raise m.error(f"tensor {what} is not a tuple of integers in [0, 2**63)")


def _dtype_name(m: Machine, value: object) -> str:
    if isinstance(value, DtypeRef):
        return value.name
    raise m.error("tensor dtype is not a torch dtype")


def _device(value: object) -> str:
    if isinstance(value, TorchValue):
        return cut(value.name, 200)
    return cut(value, 200) if isinstance(value, str) else name_of(value)


def name_of(value: object) -> str:
    # Never repr() a value from the file: a shared or deep structure makes that explode.
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    return f"<{type(value).__name__}>"


def _storage(m: Machine, value: object) -> StorageRef:
    if isinstance(value, StorageRef):
        return value
    raise m.error("tensor storage is not a storage record")


def _size_stride(
    m: Machine, size: object, stride: object, *, none_stride: bool = False
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    shape = as_shape(m, size, "size")
    if stride is None and none_stride:
        # Tensor.set_ takes a stride of None as the contiguous one.
        return shape, _contiguous_strides(shape)
    strides = as_shape(m, stride, "stride")
    if len(shape) != len(strides):
        raise m.error(f"tensor size has {len(shape)} dimensions but its stride {len(strides)}")
    return shape, strides


def _set_shape(m: Machine, size: object, stride: object) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The size and strides ``Tensor.set_`` gives the tensor (arguments it takes): a negative
    size (in an empty tensor) kept, a negative stride replaced as ``set_`` replaces it. Neither
    is in a tensor torch.save writes; torch reads the tensor described, so a warning."""
    if not isinstance(size, (tuple, list)) or len(size) > m.limits.max_dims:
        return _size_stride(m, size, stride, none_stride=True)
    negative_size = any(type(v) is int and v < 0 for v in size)
    negative_stride = isinstance(stride, (tuple, list)) and any(
        type(v) is int and v < 0 for v in stride
    )
    if not negative_size and not negative_stride:
        return _size_stride(m, size, stride, none_stride=True)
    shape = tuple(size)
    given = tuple(stride) if isinstance(stride, (tuple, list)) else ()
    strides = set_strides(shape, given) if given else _contiguous_strides(shape)
    m.deviate(
        f"a tensor of size {cut(repr(shape), 80)} and stride {cut(repr(given), 80)}"
        f", where torch.save writes no negative size or stride (torch.load reads stride "
        f"{cut(repr(strides), 80)})",
        False,
    )
    return shape, strides


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides torch gives a contiguous tensor of ``shape`` (an empty dimension counts as
    one)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


#: The quantized dtypes: a plain rebuild over their storage gives a quantized tensor.
_QUANTIZED_DTYPES = frozenset({"qint8", "quint8", "qint32", "quint4x2", "quint2x4"})


def _strided(m: Machine, args: tuple[Any, ...], dtype: str | None = None) -> TensorRef:
    """The tensor torch's ``_rebuild_tensor`` makes: ``Tensor.set_`` on the storage. Over a
    quantized dtype that is a quantized tensor with no quantizer (torch.save writes one for a
    view such as ``torch.zeros(4, dtype=torch.uint8).view(torch.qint8)``, which is not
    quantized; torch.load's is, and str, clone and torch.save fail on it)."""
    storage = _storage(m, args[0])
    offset = args[1]
    why = set_refusal(offset, args[2], args[3], m.limits.max_dims)
    if why is not None:
        raise TorchRefuses(m.path, f"torch.load refuses the file: {why} (at byte {m.op_pos})")
    if type(offset) is not int or not 0 <= offset < 2**63:
        raise m.error("tensor storage offset is not an integer in [0, 2**63)")
    stride = None if _no_stride(args[2], args[3]) else args[3]
    shape, strides = _set_shape(m, args[2], stride)
    tensor = TensorRef(
        dtype or storage.dtype,
        shape,
        strides,
        storage.location,
        offset=offset,
        storage=storage,
    )
    if tensor.dtype in _QUANTIZED_DTYPES:
        tensor.kind = "quantized"
        tensor.parts = {"quantizer": None}  # _rebuild_qtensor gives the saved one
    m.tensors_built.append(tensor)
    return tensor


def _rebuild_tensor(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    # torch reads it as _rebuild_tensor_v2 without requires_grad and hooks; torch.save 2.x
    # never writes it (a tensor reduces to _rebuild_tensor_v2 and the like).
    m.deviate("torch._utils._rebuild_tensor, where torch.save writes _rebuild_tensor_v2", False)
    return _strided(m, args[:4])


def _check_typed(m: Machine, tensor: TensorRef, rebuild: str) -> None:
    """torch.save names a typed storage class (torch.FloatStorage, ...) under _rebuild_tensor_v2;
    torch.storage.UntypedStorage only under _rebuild_tensor_v3, with the dtype beside it.
    torch.load reads an untyped one as bytes (uint8), as it reads torch.ByteStorage."""
    if tensor.storage is not None and tensor.storage.untyped:
        m.deviate(
            f"storage class torch.storage.UntypedStorage under {rebuild}, where torch.save "
            "names a typed storage class",
            False,
        )


def _check_hooks(m: Machine, hooks: object) -> None:
    """torch.save writes a tensor's backward hooks as ``OrderedDict()`` (GLOBAL
    'collections OrderedDict', EMPTY_TUPLE, REDUCE), whatever hooks the tensor has."""
    if id(hooks) not in m.torch_hooks or hooks:
        m.deviate("backward hooks that are not the empty OrderedDict() torch.save writes")
    else:
        _check_fresh(m, hooks, "a tensor's backward hooks")
        m.hooks_given.append((m.op_pos, hooks))


def _check_shape_tuples(m: Machine, args: tuple[Any, ...]) -> None:
    """torch.save writes a tensor's size and stride as tuples, made for that tensor. A stride
    of None torch.save never writes, but both of torch.load's readers read it alike (``set_``
    takes it as the contiguous stride), which ppaux describes: a warning, not an error."""
    if args[3] is None or _no_stride(args[2], args[3]):
        m.deviate(
            f"a tensor's stride {args[3]!r}, where torch.save writes a tuple as long as its "
            "size (torch.load makes the tensor contiguous)",
            False,
        )
    elif not isinstance(args[2], tuple) or not isinstance(args[3], tuple):
        m.deviate("a tensor's size or stride that is not the tuple torch.save writes")
    elif id(args[2]) in m.torch_sizes or id(args[3]) in m.torch_sizes:
        m.deviate("a tensor's size or stride pickled as a torch.Size, not a tuple", False)
    _check_fresh(m, args[2], "a tensor's size")
    _check_fresh(m, args[3], "a tensor's stride")


def _no_stride(size: object, stride: object) -> bool:
    """An empty stride for a size with dimensions: ``Tensor.set_`` takes it as the default
    (the contiguous stride)."""
    return (
        isinstance(stride, (tuple, list))
        and not stride
        and isinstance(size, (tuple, list))
        and len(size) > 0
    )


def _check_fresh(m: Machine, value: object, what: str) -> None:
    """torch.save makes a tensor's size, stride, backward hooks and a Parameter's data anew
    for each tensor it reduces (``Tensor._reduce_ex_internal``, ``Parameter.__reduce_ex__``),
    so the pickler writes each where it is used and never fetches one from the memo; torch
    reads a shared one alike."""
    if id(value) in m.fetched and m.fetched[id(value)] is value:
        m.deviate(
            f"{what} fetched from the memo (memo GET), where torch.save writes it "
            "afresh for each tensor",
            False,
        )


def _rebuild_tensor_v2(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    _check_hooks(m, args[5])
    _check_shape_tuples(m, args)
    tensor = _strided(m, args)
    _check_typed(m, tensor, "_rebuild_tensor_v2")
    set_requires_grad(m, tensor, args[4], "_rebuild_tensor_v2")
    if len(args) == 7:
        tensor.bits = view_bits(m, tensor, args[6])
    return tensor


def _rebuild_tensor_v3(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    _check_hooks(m, args[5])
    _check_shape_tuples(m, args)
    tensor = _strided(m, args, _dtype_name(m, args[6]))
    set_requires_grad(m, tensor, args[4], "_rebuild_tensor_v3")
    if args[4]:
        # torch 2.1 to 2.14.1 make torch.empty((0,), requires_grad=...) and then call set_ on
        # it, which autograd refuses on a leaf that requires grad: either mode.
        raise TorchRefuses(
            m.path,
            "torch.load refuses the file: _rebuild_tensor_v3 makes a tensor that requires "
            "grad, then set_ on it (a leaf Variable that requires grad is being used in an "
            "in-place operation)",
        )
    if len(args) == 8:
        tensor.bits = view_bits(m, tensor, args[7])
    return tensor


def _tensor_arg(m: Machine, value: object, what: str) -> TensorRef:
    if isinstance(value, TensorRef):
        return value
    raise m.error(f"{what} is not a tensor")


def _rebuild_parameter(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    _check_hooks(m, args[2])
    _check_fresh(m, args[0], "a Parameter's data")
    if not isinstance(args[0], (TensorRef, Opaque, type(None))):
        # torch.nn.Parameter(data) calls data.detach(): a plain value has none.
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: a Parameter over a {type(args[0]).__name__}, not a "
            f"tensor ('{type(args[0]).__name__}' object has no attribute 'detach')",
        )
    tensor = _tensor_arg(m, args[0], "parameter data")
    if tensor.requires_grad:
        # torch.save writes a Parameter's .data, which never requires grad.
        m.deviate(
            "a Parameter over a tensor that requires grad (torch.save writes its data)", False
        )
    tensor.subclass = "torch.nn.parameter.Parameter"
    set_requires_grad(m, tensor, args[1], "Parameter")
    if len(args) == 4:
        tensor.state = apply_obj_state(m, args[3], "_rebuild_parameter_with_state", tensor)
    return tensor


def _rebuild_sparse_tensor(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    layout, data = args
    layout_name = _device(layout)
    coo = sparse_kind(m, layout_name, data)  # coo: (indices, values, size[, coalesced])
    values = _tensor_arg(m, data[1] if coo else data[2], "sparse tensor values")
    shape = as_shape(m, data[2] if coo else data[3], "size")
    if coo:
        check_coo(m, data, shape)
    else:
        check_compressed(m, layout_name, data, shape)
    tensor = TensorRef(values.dtype, shape, None, values.device, kind="sparse", layout=layout_name)
    # Kept as saved so that replay can rebuild the tensor.
    if coo:
        tensor.parts = {
            "indices": data[0],
            "values": values,
            "coalesced": data[3] if len(data) > 3 else None,
        }
    else:
        tensor.parts = {"compressed_indices": data[0], "plain_indices": data[1], "values": values}
    m.packed.append((m.op_pos, tensor))
    return tensor


def _rebuild_qtensor(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    tensor = _strided(m, args)
    tensor.kind = "quantized"
    tensor.parts = {"quantizer": args[4]}  # (qscheme, scale, zero_point[, axis]) as saved
    check_quantized(m, tensor, args[4])
    m.packed.append((m.op_pos, tensor))
    set_requires_grad(m, tensor, args[5], "_rebuild_qtensor")
    return tensor


def _rebuild_meta(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    dtype, size, stride, requires_grad = args
    tensor = TensorRef(_dtype_name(m, dtype), *_size_stride(m, size, stride), "meta", kind="meta")
    set_requires_grad(m, tensor, requires_grad, "_rebuild_meta_tensor_no_storage")
    return tensor


#: The classes torch's weights-only loader knows that have no __torch_dispatch__ of their own.
_NO_DISPATCH = frozenset(
    {"torch.Tensor", "torch._tensor.Tensor", "torch.nn.parameter.Parameter", "torch.nn.Parameter"}
)


def _rebuild_wrapper_subclass(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    cls, dtype, size, stride, offset, layout, device, _requires_grad = args
    if name_of(cls) in _NO_DISPATCH:
        # torch.Tensor._make_wrapper_subclass needs a class with its own __torch_dispatch__;
        # torch.save writes this rebuild only for such a subclass.
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: _rebuild_wrapper_subclass of {name_of(cls)}, "
            "which does not define __torch_dispatch__",
        )
    tensor = TensorRef(
        _dtype_name(m, dtype),
        *_size_stride(m, size, stride),
        _device(device),
        offset=offset if type(offset) is int and 0 <= offset < 2**63 else 0,
        layout=_device(layout),
    )
    tensor.subclass = name_of(cls)
    return tensor


def _rebuild_device_tensor(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    data, dtype, device, requires_grad = args
    if isinstance(data, (TensorRef, NdArrayRef)):
        shape, stride = data.shape, None
    else:
        raise TorchRefuses(
            m.path,
            "torch.load refuses the file: a device tensor's data is a "
            f"{type(data).__name__}, neither a tensor nor an array (at byte {m.op_pos})",
        )
    return TensorRef(
        _dtype_name(m, dtype),
        shape,
        stride,
        _device(device),
        requires_grad=bool(requires_grad) if isinstance(requires_grad, bool) else False,
    )


def _rebuild_nested(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    buffer = _tensor_arg(m, args[0], "nested tensor buffer")
    tensor = TensorRef(
        buffer.dtype, buffer.shape, None, buffer.device, kind="nested", storage=buffer.storage
    )
    if len(args) == 4:
        check_nested_parts(m, buffer, args[1:])
        tensor.parts = {"buffer": buffer, "sizes": args[1], "strides": args[2], "offsets": args[3]}
        m.packed.append((m.op_pos, tensor))
    return tensor


def _rebuild_from_type(m: Machine, args: tuple[Any, ...]) -> Any:
    func, new_type, inner_args, state = args
    if isinstance(func, Call) and func.name in _FROM_TYPE:
        # torch wraps a rebuild function once; a chain of these only recurses.
        raise m.error(f"{func.name} wraps another _rebuild_from_type")
    if not isinstance(inner_args, (tuple, list)):
        raise m.error("_rebuild_from_type arguments are not a tuple")
    m.charge_items(len(inner_args))
    result = m.call(func, tuple(inner_args))
    if isinstance(result, TensorRef):
        name = name_of(new_type)
        jagged = result.layout == "torch.jagged"
        if jagged != (name == JAGGED_TYPE):
            m.deviate(f"{func.name} rebuilt as {name}, where torch.save pairs each with its own")
        if name not in ("torch.Tensor", "torch._tensor.Tensor", JAGGED_TYPE):
            result.subclass = name
        if jagged:
            check_jagged_state(m, state)
        added = apply_obj_state(m, state, "_rebuild_from_type_v2", result)
        if jagged:
            added = jagged_state(m, result, added)
        if added:
            result.state = {**result.state, **added} if isinstance(result.state, dict) else added
    return result


def _get_layout(m: Machine, args: tuple[Any, ...]) -> TorchValue:
    (name,) = args
    if not isinstance(name, str):
        raise m.error("layout name is not a string")
    check_layout_name(m, name)
    return TorchValue("torch.layout", name)


_FROM_TYPE = ("torch._tensor._rebuild_from_type_v2", "torch._tensor._rebuild_from_type")

#: torch's rebuild functions, by the dotted name a pickle gives them (each behind Python's
#: check of its count of arguments).
_REBUILDS: dict[str, Callable[[Machine, tuple[Any, ...]], Any]] = {
    "torch._utils._rebuild_tensor": _rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
    "torch._utils._rebuild_sparse_tensor": _rebuild_sparse_tensor,
    "torch._utils._rebuild_qtensor": _rebuild_qtensor,
    "torch._utils._rebuild_meta_tensor_no_storage": _rebuild_meta,
    "torch._utils._rebuild_wrapper_subclass": _rebuild_wrapper_subclass,
    "torch._utils._rebuild_device_tensor_from_cpu_tensor": _rebuild_device_tensor,
    "torch._utils._rebuild_device_tensor_from_numpy": _rebuild_device_tensor,
    "torch._utils._rebuild_xla_tensor": _rebuild_device_tensor,
    "torch._utils._rebuild_nested_tensor": _rebuild_nested,
    JAGGED_REBUILD: rebuild_njt,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type,
    "torch._tensor._rebuild_from_type": _rebuild_from_type,
    "torch.serialization._get_layout": _get_layout,
}
TENSOR_CALLS = {name: with_arity(name, fn) for name, fn in _REBUILDS.items()}
