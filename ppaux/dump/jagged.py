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
``offsets.size(0) - 1`` parts of ``values.dim()`` dimensions each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ppaux.dump.model import DimRange, TensorRef
from ppaux.text import cut

if TYPE_CHECKING:
    from ppaux.dump.pickle_vm import Machine

__all__ = ["JAGGED_REBUILD", "JAGGED_TYPE", "jagged_state", "new_dim_range", "rebuild_njt"]

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
_CACHE_KEYS = frozenset({"min_seqlen", "max_seqlen"})


def _refuse(m: Machine, why: str) -> Exception:
    from ppaux.errors import TorchRefuses

    return TorchRefuses(m.path, f"torch.load refuses the file: _rebuild_njt: {why}")


def rebuild_njt(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    """``_rebuild_njt(kwargs)``: the nested jagged tensor ``NestedTensor(**kwargs)`` makes."""
    (kwargs,) = args
    if not isinstance(kwargs, dict):
        raise m.error("_rebuild_njt's argument is not a dict of constructor arguments")
    if tuple(kwargs) != _KWARGS:
        # In another order torch reads the same (a warning); other names, not (an error).
        m.deviate(
            f"_rebuild_njt arguments {[cut(repr(k), 40) for k in list(kwargs)[:8]]}, where "
            f"torch.save writes {', '.join(_KWARGS)} in that order",
            set(kwargs) != set(_KWARGS),
        )
    values, offsets = kwargs.get("values"), kwargs.get("offsets")
    lengths = kwargs.get("lengths")
    if not isinstance(offsets, TensorRef):
        raise _refuse(m, "its offsets are not a tensor")
    if not isinstance(values, TensorRef) or values.kind != "dense":
        raise m.error("_rebuild_njt's values are not a dense tensor")
    if len(offsets.shape) != 1:
        raise _refuse(m, f"its offsets have {len(offsets.shape)} dimensions, not 1")
    if values.device != offsets.device:
        raise _refuse(m, f"its values are on {values.device}, its offsets on {offsets.device}")
    if offsets.kind != "dense" or offsets.dtype != "int64" or offsets.shape[0] < 1:
        m.deviate("_rebuild_njt offsets that are not the non-empty int64 tensor torch writes")
    if lengths is not None and not isinstance(lengths, TensorRef):
        m.deviate("_rebuild_njt lengths that are neither None nor a tensor")
    if type(kwargs.get("_ragged_idx", 1)) is not int or values.subclass is not None:
        m.deviate("_rebuild_njt with a ragged dimension or values torch.save never writes")
    cache = kwargs.get("_metadata_cache", {})
    if not isinstance(cache, dict) or not set(cache) <= _CACHE_KEYS:
        m.deviate("_rebuild_njt's metadata cache holds what torch.save never writes")
    elif not all(isinstance(v, TensorRef) and v.kind == "dense" for v in cache.values()):
        m.deviate("_rebuild_njt's metadata cache holds a value that is not a tensor")
    requires_grad = kwargs.get("requires_grad", False)
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
    return tensor


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
                m.deviate(f"a nested jagged tensor's state {name} is not its {source} argument")
            del rest[name]
    if isinstance(rest.get(_MARKS), set):
        del rest[_MARKS]
    return rest or None


def new_dim_range(m: Machine, args: tuple[Any, ...]) -> DimRange:
    """``_DimRange.__new__`` as NEWOBJ runs it (torch.save writes no arguments)."""
    if args:
        m.deviate("a _DimRange made with arguments, where torch.save writes none")
    return DimRange()
