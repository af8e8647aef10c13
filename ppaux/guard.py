"""Guards for code that writes or forwards a PP tensor dict: check it as rank 0 will, tensorize.

An out-of-tree writer (a plugin, a Scheduler subclass, code between add and pop) adds two lines::

    from ppaux.guard import check_pp_tensors, tensorize
    tensors["__sampling_observer_output__.scores"] = tensorize(scores)   # not scores.tolist()
    check_pp_tensors(tensors)   # raises PpTensorsError naming every key rank 0 would refuse

:func:`check_pp_tensors` makes exactly the checks that ``pop_auxiliary_output_from_pp_tensors``
(sglang 0.5.19 - 0.5.23, ``srt/sampling/sampling_observer_pp.py``) makes on the dict itself, in
its order: ``key.startswith(prefix)`` on every key, then ``torch.is_tensor`` on every auxiliary
value. The checks pop makes on rank 0's observer (none installed, not PP-capable) are not
properties of the dict and are not made here. :func:`tensorize` turns what can travel as a
tensor into one, with torch's own dtype rules, and refuses the rest with the reason.

torch is imported only inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeGuard

from ppaux.errors import PpauxError
from ppaux.sglang import OUTPUT_PREFIX, POP_NON_TENSOR
from ppaux.text import shown

if TYPE_CHECKING:
    import numpy
    import torch

__all__ = [
    "NotTensorizable",
    "PpTensorsError",
    "PpTensorsProblem",
    "check_pp_tensors",
    "describe_value",
    "tensorize",
]


@dataclass(frozen=True)
class PpTensorsProblem:
    """One entry pop would refuse: the key, what its value (or the key) is, and pop's error."""

    key: str
    what: str
    error_type: str
    error: str

    def __str__(self) -> str:
        return f"{self.key}: {self.what} -> {self.error_type}: {self.error}"


class PpTensorsError(PpauxError, TypeError):
    """A PP tensor dict that pop on rank 0 would refuse; ``problems`` lists every entry at fault
    in pop's order, ``error_type``/``error`` are what pop raises first (sglang's message)."""

    def __init__(self, problems: tuple[PpTensorsProblem, ...]) -> None:
        first = problems[0]
        listed = "; ".join(str(p) for p in problems)
        super().__init__(
            f"pop on PP rank 0 would raise {first.error_type}: {first.error} "
            f"({len(problems)} entr{'y' if len(problems) == 1 else 'ies'} at fault: {listed})"
        )
        self.problems = problems
        self.error_type = first.error_type
        self.error = first.error


class NotTensorizable(PpauxError, TypeError):
    """A value :func:`tensorize` cannot turn into a tensor: ``what`` is the value in words,
    ``reason`` why not and what to do instead."""

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(f"cannot make a tensor of {what}: {reason}")
        self.what = what
        self.reason = reason


def _short_repr(key: object) -> str:
    try:
        text = repr(key)
    except Exception:  # a key whose repr fails is still named by its type
        text = f"<{type(key).__name__} object>"
    text = text if len(text) <= 80 else text[:77] + "..."
    return shown(text, None)  # a __repr__ of the user's own may hold any character


def describe_value(value: object) -> str:
    """A value in a few words, with its shape or length: 'list of length 4', 'Tensor (2, 3)'."""
    cls = type(value)
    name = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
    name = shown(name, 200)  # class names are the user's (or a file's) text
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, type):
        try:
            return f"{name} of shape {tuple(int(s) for s in shape)}"
        except (TypeError, ValueError):
            pass
    if isinstance(value, (str, bytes, bytearray, list, tuple, dict, set, frozenset)):
        return f"{name} of length {len(value)}"
    if value is None:
        return "None"
    if isinstance(value, (bool, int, float, complex)):
        return f"{name} {_short_repr(value)}"
    return name


def check_pp_tensors(tensors: Mapping[Any, Any]) -> None:
    """Raise :class:`PpTensorsError` if pop on PP rank 0 would refuse ``tensors``; else return.

    Mirrors sglang 0.5.19 - 0.5.23's pop, in its order: every key's ``startswith`` (a key that
    is not a string fails there, with Python's own message), then ``torch.is_tensor`` on every
    auxiliary value. The error names every offending key, not only the first.
    """
    import torch

    items = getattr(tensors, "items", None)
    if items is None:
        raise PpTensorsError(
            (
                PpTensorsProblem(
                    "(the dict)",
                    describe_value(tensors),
                    "AttributeError",
                    f"'{type(tensors).__name__}' object has no attribute 'items'",
                ),
            )
        )
    is_tensor = torch.is_tensor
    keys: list[PpTensorsProblem] = []
    values: list[PpTensorsProblem] = []
    for key, value in items():
        try:
            # The very expression pop evaluates on each key.
            if not key.startswith(OUTPUT_PREFIX):
                continue
        except Exception as exc:
            keys.append(
                PpTensorsProblem(
                    _short_repr(key),
                    f"key of type {type(key).__name__}",
                    type(exc).__name__,
                    str(exc),
                )
            )
            continue
        if not is_tensor(value):
            values.append(
                PpTensorsProblem(
                    _short_repr(key), describe_value(value), "RuntimeError", POP_NON_TENSOR.text
                )
            )
    if keys or values:
        # Pop fails on the keys before it looks at any value.
        raise PpTensorsError((*keys, *values))


# ----------------------------------------------------------------------------------------------
# tensorize

_NUMBERS = (bool, int, float, complex)


def _numpy_array(value: object) -> TypeGuard[numpy.ndarray[Any, Any] | numpy.generic[Any]]:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, (numpy.ndarray, numpy.generic))


def tensorize(
    value: object,
    *,
    dtype: torch.dtype | None = None,
    device: torch.device | str | int | None = None,
) -> Any:
    """``value`` as a ``torch.Tensor``, or :class:`NotTensorizable` saying why it cannot be one.

    Accepted: a tensor (returned as it is, or moved/cast when ``dtype``/``device`` are given);
    a Python bool, int, float or complex (a 0-d tensor); a rectangular nested list or tuple of
    them; a numpy array or scalar of a numeric or bool dtype (copied); a non-empty list or tuple
    of tensors of one shape, dtype and device (stacked). Dtypes are torch's own for the values:
    bools stay ``torch.bool``, ints become ``torch.int64``, floats the default dtype
    (``torch.float32`` unless changed), complex numbers the matching complex dtype, exactly as
    ``torch.tensor`` makes them; ``dtype`` overrides. Refused: None, strings, bytes, dicts,
    sets, ragged or mixed lists, object arrays, and any other object.
    """
    import torch

    if torch.is_tensor(value):
        return value if dtype is None and device is None else value.to(device=device, dtype=dtype)
    if value is None:
        raise NotTensorizable(
            "None",
            "there is no value to send; leave the key out of the "
            "dict, or send an empty tensor (torch.empty(0)) if the receiver "
            "expects the name",
        )
    if isinstance(value, _NUMBERS):
        return _from_data(torch, value, describe_value(value), dtype, device)
    if _numpy_array(value):
        kind = getattr(getattr(value, "dtype", None), "kind", "O")
        if kind not in "biufc":
            raise NotTensorizable(
                describe_value(value),
                f"numpy dtype {value.dtype} has no torch equivalent; convert it to numbers first",
            )
        return _from_data(torch, value, describe_value(value), dtype, device)
    if isinstance(value, (list, tuple)):
        if value and all(torch.is_tensor(v) for v in value):
            return _stack(torch, value, dtype, device)
        _check_rectangular(value, describe_value(value))
        return _from_data(torch, value, describe_value(value), dtype, device)
    if isinstance(value, (str, bytes, bytearray)):
        reason = (
            "text does not travel as a tensor; encode it (for example as token ids) or "
            "send it outside the auxiliary output"
        )
    elif isinstance(value, Mapping):
        reason = "a mapping is several values; give each its own auxiliary name in to_pp_tensors()"
    else:
        reason = (
            "only numbers, bools, rectangular lists of them, numpy arrays and lists of "
            "same-shape tensors can become a tensor; return a tensor from to_pp_tensors()"
        )
    raise NotTensorizable(describe_value(value), reason)


def _from_data(torch: ModuleType, data: object, what: str, dtype: object, device: object) -> Any:
    try:
        return torch.tensor(data, dtype=dtype, device=device)
    except (TypeError, ValueError, RuntimeError, OverflowError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise NotTensorizable(what, f"torch refuses it ({first})") from None


def _stack(
    torch: ModuleType,
    items: Sequence[Any],
    dtype: torch.dtype | None,
    device: torch.device | str | int | None,
) -> Any:
    what = describe_value(items)
    first = items[0]
    for index, item in enumerate(items):
        for attribute in ("shape", "dtype", "device", "layout"):
            if getattr(item, attribute) != getattr(first, attribute):
                raise NotTensorizable(
                    what,
                    f"item [{index}] has {attribute} "
                    f"{getattr(item, attribute)}, item [0] "
                    f"{getattr(first, attribute)}; only tensors of one "
                    f"{attribute} stack into one tensor",
                )
    stacked = torch.stack(list(items))
    return stacked if dtype is None and device is None else stacked.to(device=device, dtype=dtype)


def _check_rectangular(value: object, what: str) -> None:
    """Refuse nested lists that are ragged or hold anything but numbers, naming the spot."""
    # Breadth-first, level by level: every item of a level is a list of one length, or every
    # item is a number.
    level: list[tuple[str, Any]] = [("", value)]
    for _ in range(64):
        first_where, first = level[0]
        nested = isinstance(first, (list, tuple))
        for where, item in level:
            if isinstance(item, (list, tuple)) != nested:
                raise NotTensorizable(
                    what,
                    f"it is ragged: {where} is {describe_value(item)} "
                    f"but {first_where or 'the value'} is "
                    f"{describe_value(first)}; a tensor needs one shape",
                )
            if nested and len(item) != len(first):
                raise NotTensorizable(
                    what,
                    f"it is ragged: {where} is {describe_value(item)}, "
                    f"{first_where or 'the value'} of length {len(first)}; "
                    "pad the rows to one length (and send the lengths as a "
                    "tensor of their own) or send each row under its own name",
                )
            if not nested and _torch_like(item):
                raise NotTensorizable(
                    what,
                    f"{where} is a tensor among plain values; make "
                    "every item a tensor and stack them",
                )
            if not nested and not isinstance(item, _NUMBERS):
                raise NotTensorizable(
                    what,
                    f"{where} is {describe_value(item)}, not a number "
                    "or bool; a tensor holds numbers only",
                )
        if not nested:
            return
        level = _next_level(level)
        if not level:
            return
    raise NotTensorizable(what, "it nests more than 64 levels deep")


def _next_level(level: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The items of every list of ``level``, each object once (where it first appears): a list
    holding one inner list twice holds it checked once, so lists nested and shared level after
    level (2**40 items once repeated, in a few bytes of pickle) cost what they hold, not what
    they would expand to."""
    seen: set[int] = set()
    following: list[tuple[str, Any]] = []
    for where, item in level:
        for i, value in enumerate(item):
            if id(value) not in seen:
                seen.add(id(value))
                following.append((f"{where}[{i}]", value))
    return following


def _torch_like(value: object) -> bool:
    """True for a torch tensor, checked without importing torch."""
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.is_tensor(value))
