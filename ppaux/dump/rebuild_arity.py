"""How many arguments torch's rebuild functions take: a pickle that calls one with another count
is refused by Python before torch reads anything, in either of torch.load's modes.

The positional parameters are torch 2.13.0's (``torch/_utils.py``, ``torch/_tensor.py``,
``torch/serialization.py``, ``torch/nested/_internal/nested_tensor.py``); the tests compare
them with the signatures of the torch they install."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ppaux.dump.pickle_vm import Machine
from ppaux.errors import TorchRefuses

__all__ = ["REBUILD_PARAMS", "arity_error", "check_arity", "function_name", "with_arity"]

_TENSOR = ("storage", "storage_offset", "size", "stride")
_DEVICE = ("data", "dtype", "device", "requires_grad")

#: Each rebuild's positional parameters and how many of them are required (the rest have
#: defaults), by the dotted name a pickle gives it.
REBUILD_PARAMS: dict[str, tuple[tuple[str, ...], int]] = {
    "torch._utils._rebuild_tensor": (_TENSOR, 4),
    "torch._utils._rebuild_tensor_v2": (
        (*_TENSOR, "requires_grad", "backward_hooks", "metadata"),
        6,
    ),
    "torch._utils._rebuild_tensor_v3": (
        (*_TENSOR, "requires_grad", "backward_hooks", "dtype", "metadata"),
        7,
    ),
    "torch._utils._rebuild_parameter": (("data", "requires_grad", "backward_hooks"), 3),
    "torch._utils._rebuild_parameter_with_state": (
        ("data", "requires_grad", "backward_hooks", "state"),
        4,
    ),
    "torch._utils._rebuild_sparse_tensor": (("layout", "data"), 2),
    "torch._utils._rebuild_qtensor": (
        (*_TENSOR, "quantizer_params", "requires_grad", "backward_hooks"),
        7,
    ),
    "torch._utils._rebuild_meta_tensor_no_storage": (
        ("dtype", "size", "stride", "requires_grad"),
        4,
    ),
    "torch._utils._rebuild_wrapper_subclass": (
        ("cls", "dtype", "size", "stride", "storage_offset", "layout", "device", "requires_grad"),
        8,
    ),
    "torch._utils._rebuild_device_tensor_from_cpu_tensor": (_DEVICE, 4),
    "torch._utils._rebuild_device_tensor_from_numpy": (_DEVICE, 4),
    "torch._utils._rebuild_xla_tensor": (_DEVICE, 4),
    "torch._utils._rebuild_nested_tensor": (("buffer", "sizes", "strides", "storage_offsets"), 4),
    "torch.nested._internal.nested_tensor._rebuild_njt": (("constructor_kwargs",), 1),
    "torch._tensor._rebuild_from_type_v2": (("func", "new_type", "args", "state"), 4),
    "torch._tensor._rebuild_from_type": (("func", "type", "args", "dict"), 4),
    "torch.serialization._get_layout": (("name",), 1),
}

#: The rebuilds torch binds to another function, whose name Python's message gives.
_ALIASES = {"torch._utils._rebuild_xla_tensor": "_rebuild_device_tensor_from_numpy"}


def function_name(name: str) -> str:
    """The name Python's TypeError gives rebuild ``name`` (its function's ``__qualname__``)."""
    return _ALIASES.get(name, name.rpartition(".")[2])


def arity_error(name: str, count: int) -> str | None:
    """Python's TypeError for calling rebuild ``name`` with ``count`` positional arguments
    (CPython 3.9+ wording), or None where the count is taken."""
    params, required = REBUILD_PARAMS[name]
    short = function_name(name)
    if count > len(params):
        takes = f"from {required} to {len(params)}" if required < len(params) else f"{len(params)}"
        plural = "" if takes == "1" else "s"
        verb = "was" if count == 1 else "were"
        return f"{short}() takes {takes} positional argument{plural} but {count} {verb} given"
    if count < required:
        missing = [f"'{p}'" for p in params[count:required]]
        if len(missing) == 1:
            names = missing[0]
        elif len(missing) == 2:
            names = " and ".join(missing)
        else:
            names = ", ".join(missing[:-1]) + f", and {missing[-1]}"
        plural = "argument" if len(missing) == 1 else "arguments"
        return f"{short}() missing {len(missing)} required positional {plural}: {names}"
    return None


def check_arity(m: Machine, name: str, args: tuple[Any, ...]) -> None:
    """Refuse (PP117) a call with another count of arguments, in Python's words."""
    why = arity_error(name, len(args))
    if why is not None:
        raise TorchRefuses(m.path, f"torch.load refuses the file: {why} (at byte {m.op_pos})")


def with_arity(
    name: str, fn: Callable[[Machine, tuple[Any, ...]], Any]
) -> Callable[[Machine, tuple[Any, ...]], Any]:
    """``fn`` behind the arity check of rebuild ``name``."""

    def checked(m: Machine, args: tuple[Any, ...]) -> Any:
        check_arity(m, name, args)
        return fn(m, args)

    checked.__wrapped__ = fn  # type: ignore[attr-defined]
    return checked
