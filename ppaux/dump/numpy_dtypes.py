"""The name of a pickled numpy dtype that its spec alone does not give: numpy pickles a
datetime64 or timedelta64 dtype as 'M8' or 'm8' with its unit in the state's last item, and a
structured or subarray dtype as 'V<size>' with its fields (names, the dtype and offset of each,
the alignment flag) or its base dtype and shape in the state (numpy's ``arraydescr_setstate``,
state version 3 or 4). Nothing of numpy runs: the state is read as the pickle gives it."""

from __future__ import annotations

from typing import Any

from ppaux.text import cut

__all__ = ["dtype_detail"]

#: numpy's NPY_ALIGNED_STRUCT flag, set in the state's flags for a dtype made with align=True.
_ALIGNED = 0x80
#: Fields named in a description; a dtype with more says how many more.
_FIELDS_SHOWN = 8


def dtype_detail(spec: str, state: tuple[Any, ...]) -> str | None:
    """The dtype's name as numpy would say it, where ``spec`` alone does not name it."""
    kind = spec.lstrip("<>=|")[:2]
    if kind in ("M8", "m8") and len(state) >= 9:
        return _datetime(kind, state[8])
    if len(state) >= 8 and isinstance(state[4], dict) and isinstance(state[3], tuple):
        return _structured(state[3], state[4], state[5], state[7])
    if len(state) >= 3 and isinstance(state[2], tuple) and len(state[2]) == 2:
        base, shape = state[2]
        if isinstance(shape, tuple) and all(type(n) is int for n in shape):
            return f"{_name(base)} subarray of shape {list(shape)[:32]}"
    return None


def _name(dtype: object) -> str:
    name = getattr(dtype, "name", None)
    return name if isinstance(name, str) else "?"


def _datetime(kind: str, meta: object) -> str | None:
    # (None, (unit, num, den, events)) in numpy 1.x and 2.x; the bare tuple in older ones.
    if isinstance(meta, tuple) and len(meta) == 2 and isinstance(meta[1], tuple):
        meta = meta[1]
    if not isinstance(meta, tuple) or len(meta) < 2 or not isinstance(meta[0], bytes):
        return None
    unit, num = meta[0], meta[1]
    base = "datetime64" if kind == "M8" else "timedelta64"
    if unit == b"generic":
        return base
    count = str(num) if type(num) is int and num != 1 else ""
    return f"{base}[{count}{cut(unit.decode('latin-1'), 16)}]"


def _structured(names: tuple[Any, ...], fields: dict[Any, Any], size: object, flags: object) -> str:
    parts = []
    for name in names[:_FIELDS_SHOWN]:
        field = fields.get(name) if isinstance(name, str) else None
        if isinstance(field, tuple) and len(field) >= 2:
            parts.append(f"{cut(name, 40)}: {_name(field[0])} at {field[1]}")
        else:
            parts.append(f"{cut(str(name), 40)}: ?")
    if len(names) > _FIELDS_SHOWN:
        parts.append(f"{len(names) - _FIELDS_SHOWN} more")
    tail = f"; {size} bytes" if type(size) is int else ""
    if type(flags) is int and flags & _ALIGNED:
        tail += ", aligned"
    return f"structured ({', '.join(parts)}{tail})"
