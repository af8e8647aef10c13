"""A nested jagged tensor (``layout=torch.jagged``) as torch.save writes it, described.

torch 2.13's ``NestedTensor.__reduce_ex__`` (``torch/nested/_internal/nested_tensor.py``)
reduces such a tensor to ``_rebuild_from_type_v2(_rebuild_njt, NestedTensor, (kwargs,),
state)``: ``kwargs`` is ``{'values', 'offsets', 'lengths', '_ragged_idx', '_metadata_cache',
'requires_grad'}`` in that order, ``state`` the tensor's ``__dict__`` less its cached sizes,
which holds the same objects under ``_values``, ``_offsets``, ``_lengths``, ``_ragged_idx`` and
``_metadata_cache``, and ``_dynamo_propagated_dynamic_indices``. ``_rebuild_njt`` calls
``NestedTensor(**kwargs)``, which asserts a 1-d ``offsets`` on the device of ``values``. The
metadata cache (``min_seqlen``, ``max_seqlen``) holds tensors torch._dynamo marks, with
``_DimRange`` objects among the marks: a slots dataclass, written as ``NEWOBJ`` with no
arguments and ``BUILD`` with the list ``[dim, min, max]``.

The tensor is described by its parts: the values (its storage and dtype), the offsets (one
more than the number of parts) and the lengths, as saved; ``torch.load`` gives a tensor of
``offsets.size(0) - 1`` parts of ``values.dim()`` dimensions each. What ``NestedTensor.__new__``
refuses in torch 2.13 (missing or non-tensor arguments, offsets not 1-d or on another device,
0-d, nested or sparse values, lengths of another batch size, a ragged dimension out of the
values' range, an integer tensor requiring gradients) is refused with torch's reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ppaux.dump.build_state import GRAD_DTYPES
from ppaux.dump.model import DimRange, TensorRef
from ppaux.text import cut

if TYPE_CHECKING:
    from ppaux.dump.pickle_vm import Machine

__all__ = [
    "JAGGED_REBUILD",
    "JAGGED_TYPE",
    "check_jagged_state",
    "jagged_state",
    "new_dim_range",
    "rebuild_njt",
]

JAGGED_REBUILD = "torch.nested._internal.nested_tensor._rebuild_njt"
JAGGED_TYPE = "torch.nested._internal.nested_tensor.NestedTensor"

#: The constructor arguments torch.save writes, in its order.
_KWARGS = ("values", "offsets", "lengths", "_ragged_idx", "_metadata_cache", "requires_grad")
#: The state's names for the same objects.
_STATE_OF = {
    "_values": "values",
    "_offsets": "offsets",
    "_lengths": "lengths",
    "_ragged_idx": "_ragged_idx",
    "_metadata_cache": "_metadata_cache",
}
_MARKS = "_dynamo_propagated_dynamic_indices"
#: The constructor's defaults for the arguments that have one.
_DEFAULTS: dict[str, object] = {"lengths": None, "_ragged_idx": 1, "requires_grad": False}
_CACHE_KEYS = frozenset({"min_seqlen", "max_seqlen"})
#: NestedTensor's own fields and methods (torch 2.13): ``__new__`` sets ``_size`` and
#: ``_strides``, the class defines the rest.
_OWN_FIELDS = frozenset(
    {
        "_size",
        "_strides",
        "_get_max_seqlen",
        "_get_min_seqlen",
        "_is_contiguous_or_false",
        "_max_seqlen",
        "_max_seqlen_tensor",
        "_maybe_max_seqlen",
        "_maybe_min_seqlen",
        "_min_seqlen",
        "_min_seqlen_tensor",
        "lengths",
        "offsets",
        "values",
    }
)


def _refuse(m: Machine, why: str) -> Exception:
    from ppaux.errors import TorchRefuses

    return TorchRefuses(m.path, f"torch.load refuses the file: _rebuild_njt: {why}")


def rebuild_njt(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    """``_rebuild_njt(kwargs)``: the nested jagged tensor ``NestedTensor(**kwargs)`` makes."""
    (kwargs,) = args
    if not isinstance(kwargs, dict):
        raise m.error("_rebuild_njt's argument is not a dict of constructor arguments")
    if tuple(kwargs) != _KWARGS:
        # In another order, or less an argument the constructor defaults, torch reads the
        # same (a warning); other names, not (an error).
        m.deviate(
            f"_rebuild_njt arguments {[cut(repr(k), 40) for k in list(kwargs)[:8]]}, where "
            f"torch.save writes {', '.join(_KWARGS)} in that order",
            not set(kwargs) <= set(_KWARGS),
        )
    values, offsets = _checked_tensors(m, kwargs)
    lengths = kwargs.get("lengths")
    if offsets.kind != "dense" or offsets.dtype != "int64" or offsets.shape[0] < 1:
        m.deviate("_rebuild_njt offsets that are not the non-empty int64 tensor torch writes")
    if isinstance(lengths, TensorRef):
        # torch 2.13 asserts one length per part (lengths.shape[0]: a 0-d one has none).
        if not lengths.shape or lengths.shape[0] != offsets.shape[0] - 1:
            raise _refuse(m, "offsets and lengths batch sizes must match")
        if len(lengths.shape) != 1 or lengths.dtype != "int64" or lengths.kind != "dense":
            m.deviate("_rebuild_njt lengths that are not the 1-d int64 tensor torch writes")
    elif lengths is not None:
        m.deviate("_rebuild_njt lengths that are neither None nor a tensor")
    _check_ragged_idx(m, kwargs.get("_ragged_idx", 1), len(values.shape))
    if values.subclass is not None:
        m.deviate("_rebuild_njt with values torch.save never writes")
    cache = kwargs.get("_metadata_cache", {})
    if not isinstance(cache, dict) or not set(cache) <= _CACHE_KEYS:
        m.deviate("_rebuild_njt's metadata cache holds what torch.save never writes")
    elif not all(isinstance(v, TensorRef) and v.kind == "dense" for v in cache.values()):
        m.deviate("_rebuild_njt's metadata cache holds a value that is not a tensor")
    requires_grad = kwargs.get("requires_grad", False)
    if requires_grad is True and values.dtype not in GRAD_DTYPES:
        raise _refuse(
            m,
            f"it makes a {values.dtype} tensor require gradients (only floating point and "
            "complex tensors can)",
        )
    tensor = TensorRef(
        values.dtype,
        values.shape,
        None,
        values.device,
        kind="nested",
        layout="torch.jagged",
        storage=values.storage,
        requires_grad=requires_grad is True,
    )
    if type(requires_grad) is not bool:
        m.deviate("_rebuild_njt's requires_grad is not a bool")
    tensor.parts = {"values": values, "offsets": offsets, "lengths": lengths, "kwargs": kwargs}
    m.packed.append((m.op_pos, tensor))
    return tensor


def _checked_tensors(m: Machine, kwargs: dict[Any, Any]) -> tuple[TensorRef, TensorRef]:
    """The values and offsets, refused as torch 2.13's ``NestedTensor.__new__`` refuses them
    (a missing argument, a value that is not a tensor, 1-d offsets on the values' device,
    values that are a strided tensor of at least one dimension)."""
    values, offsets = kwargs.get("values"), kwargs.get("offsets")
    for name, value in (("values", values), ("offsets", offsets)):
        if name not in kwargs:
            raise _refuse(m, f"it has no {name} argument (NestedTensor requires one)")
        if not isinstance(value, TensorRef):
            raise _refuse(m, f"its {name} are not a tensor")
    assert isinstance(values, TensorRef) and isinstance(offsets, TensorRef)
    if len(offsets.shape) != 1:
        raise _refuse(m, f"its offsets have {len(offsets.shape)} dimensions, not 1")
    if values.kind == "nested":
        raise _refuse(m, "its values are a nested tensor")
    if values.device != offsets.device:
        raise _refuse(m, f"its values are on {values.device}, its offsets on {offsets.device}")
    if values.kind == "sparse":
        raise _refuse(m, "its values are a sparse tensor, which has no strides")
    if values.kind != "dense":
        raise m.error("_rebuild_njt's values are not a dense tensor")
    if not values.shape:
        raise _refuse(m, "its values have no dimensions (tuple index out of range)")
    return values, offsets


def _check_ragged_idx(m: Machine, ragged_idx: object, dims: int) -> None:
    """torch 2.13 takes values' stride at ``_ragged_idx - 1``: out of the values' dimensions
    it refuses; below 1 (never written by torch.save) it gives a tensor of other dimensions,
    except at ``1 - dims``, which indexes values' dimension 0 as 1 does."""
    if type(ragged_idx) is not int:
        m.deviate("_rebuild_njt with a ragged dimension torch.save never writes")
    elif not -dims <= ragged_idx - 1 < dims:
        raise _refuse(
            m,
            f"its ragged dimension {ragged_idx} is out of range for {dims}-d values "
            "(tuple index out of range)",
        )
    elif ragged_idx - 1 == -dims:
        # values' dimension -dims is their dimension 0: torch's size and strides are those of
        # ragged dimension 1 (its _ragged_idx attribute still says the saved value).
        m.deviate(
            f"_rebuild_njt with ragged dimension {ragged_idx}, which torch.save never writes "
            f"(for {dims}-d values torch reads the tensor of ragged dimension 1)",
            False,
        )
    elif ragged_idx < 1:
        m.deviate(
            f"_rebuild_njt with ragged dimension {ragged_idx}, which torch.save never writes "
            "(torch's tensor has other dimensions than described)"
        )


def check_jagged_state(m: Machine, state: object) -> None:
    """The state torch.save writes for a nested jagged tensor: a non-empty dict of its
    ``__dict__``, which holds no field of the tensor's own (``setattr`` of one, such as
    ``_size``, ``data`` or ``requires_grad``, changes the tensor torch.load gives)."""
    from ppaux.dump.obj_state import TENSOR_FIELDS

    if not isinstance(state, dict) or not state:
        slots = state[1] if isinstance(state, tuple) and len(state) == 2 else None
        m.deviate(
            f"a nested jagged tensor's state is {cut(repr(state), 40)}, where torch.save "
            "writes a dict of its attributes",
            bool(slots),
        )
    parts = state if isinstance(state, tuple) else (state,)
    for part in parts:
        for name in part if isinstance(part, dict) else ():
            if name in TENSOR_FIELDS or name in _OWN_FIELDS:
                m.deviate(
                    f"a nested jagged tensor's state sets its {cut(repr(name), 40)}, which "
                    "torch.save never writes there",
                    name != "requires_grad",  # applied as torch applies it
                )


def jagged_state(m: Machine, tensor: TensorRef, added: dict[Any, Any] | None) -> Any:
    """The attributes a nested jagged tensor keeps from its state beyond what its constructor
    sets: torch.save's state names the constructor's own objects again (and the dynamic-index
    marks the constructor sets), so those are not attributes of their own; a state that names
    other objects there is not as torch.save writes it (the later one wins in torch)."""
    if added is None:
        return None
    kwargs = (tensor.parts or {}).get("kwargs", {})
    rest = dict(added)
    for name, source in _STATE_OF.items():
        if name in rest:
            if rest[name] is not kwargs.get(source):
                # An argument left out (a warning already) that the state sets as the
                # constructor defaults it, or the metadata cache, which the constructor only
                # keeps: torch reads the same.
                same = source not in kwargs and (
                    source == "_metadata_cache" or rest[name] == _DEFAULTS.get(source, ())
                )
                m.deviate(
                    f"a nested jagged tensor's state {name} is not its {source} argument",
                    not same,
                )
            del rest[name]
    if isinstance(rest.get(_MARKS), set):
        del rest[_MARKS]
    return rest or None


def new_dim_range(m: Machine, args: tuple[Any, ...]) -> DimRange:
    """``_DimRange.__new__`` as NEWOBJ runs it (torch.save writes no arguments)."""
    if args:
        m.deviate("a _DimRange made with arguments, where torch.save writes none")
    return DimRange()
