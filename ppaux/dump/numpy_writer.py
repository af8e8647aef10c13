"""What numpy's pickler writes for an array and its dtype, and what numpy's readers refuse of
the arguments they are given, as numpy 2.x (2.4) writes and reads them: ``array_reduce`` and
``array_reduce_ex`` in numpy/_core/src/multiarray/methods.c, ``arraydescr_reduce`` in
numpy/_core/src/multiarray/descriptor.c (numpy 1.26 writes the same forms).

numpy writes an array as ``_reconstruct(cls, (0,), b'b')`` and then the state
``(1, shape, dtype, is_fortran, data)``: version 1, ``is_fortran`` a bool that is True only for
an array laid out by columns that is not also laid out by rows (so never for fewer than two
dimensions longer than one), the data as bytes (a list for a dtype of objects). From protocol
5 a contiguous array of a dtype without objects is ``_frombuffer(buffer, dtype, shape, order)``
instead. A dtype is ``numpy.dtype(spec, False, True)``, the spec its kind and item size without
a byte order ('f4'), then its state: for a number, a bool or an object,
``(3, order, None, None, None, -1, -1, flags)``, the order '|' for one byte or an object and '<'
or '>' otherwise, the flags 0 (63 for an object); version 4, with a ninth item, only for a
datetime or a dtype with metadata. A bool array's bytes are 0 and 1.

Each ``*_deviation`` function says what in its input numpy's pickler never writes (None where
it is as written); each ``*_refusal`` why numpy refuses it, in numpy's words.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ppaux.dump.model import NdArrayRef
from ppaux.text import cut

__all__ = [
    "NUMPY_REFUSES",
    "array_data_refusal",
    "array_state_deviation",
    "bool_bytes_deviation",
    "buffer_refusal",
    "dtype_args_deviation",
    "dtype_state_deviation",
    "fortran_deviation",
    "reconstruct_deviation",
    "reconstruct_shape_refusal",
]

#: The end of every reason :attr:`NdArrayRef.problem` gives where numpy itself refuses.
NUMPY_REFUSES = "numpy refuses it"
_FIXED_SIZE = re.compile(r"[<>=|]?[biufc]([0-9]{1,2})")

#: The specs of the dtypes whose whole state numpy's pickler fixes: numbers, bools, objects.
_FIXED = re.compile(r"(b1|[iu][1248]|f(?:2|4|8|16)|c(?:8|16|32)|O[48])")
#: The kinds of one byte or none (strings of bytes, void, objects): numpy writes the order '|'.
_NO_ORDER = re.compile(r"(b1|[iu]1|O[48]|[SV][0-9]+)")


def buffer_refusal(arr: NdArrayRef) -> str | None:
    """numpy's ``array_setstate`` wants the buffer to hold exactly the bytes the shape and
    dtype need ("buffer size does not match array size"), and ``_frombuffer`` as many as its
    shape holds ("cannot reshape array"); checked for numbers, whose item size the dtype's spec
    gives."""
    if arr.raw is None or arr.descr is None:
        return None
    fixed = _FIXED_SIZE.fullmatch(arr.descr.spec)
    if fixed is None:
        return None
    need = math.prod(arr.shape) * int(fixed.group(1))
    if len(arr.raw) == need:
        return None
    return (
        f"its data holds {len(arr.raw)} bytes, not the {need} that its dtype and shape "
        f"{list(arr.shape)} need; {NUMPY_REFUSES}"
    )


def _order(spec: str) -> tuple[str, ...]:
    """The byte orders numpy's pickler writes in the state of the dtype ``spec``."""
    return ("|",) if _NO_ORDER.fullmatch(spec) else ("<", ">")


def reconstruct_shape_refusal(shape: object) -> str | None:
    """Why numpy's ``_reconstruct`` refuses ``shape`` (numpy's ``PyArray_IntpConverter``: an
    int or a sequence of at most 64 ints, each from 0 to 2**63 - 1; a bool is not an int
    there), or None."""
    items = shape if isinstance(shape, (tuple, list)) else (shape,)
    why = None
    if len(items) > 64:
        why = "ValueError: maximum supported dimension for an ndarray is 64"
    for n in items:
        if why is not None:
            break
        if type(n) is bool:
            why = "TypeError: an integer is required"
        elif type(n) is not int:
            why = "TypeError: it cannot be interpreted as an integer"
        elif n < 0:
            why = "ValueError: negative dimensions are not allowed"
        elif n >= 2**63:
            why = "ValueError: Maximum allowed dimension exceeded"
    if why is None:
        return None
    return f"numpy's _reconstruct is given the shape {cut(repr(shape), 40)} (numpy: {why})"


def reconstruct_deviation(shape: object, typecode: object) -> str | None:
    """What of ``_reconstruct``'s shape and type code numpy's pickler never writes: it writes
    ``(0,)`` and ``b'b'``."""
    if not (type(shape) is tuple and len(shape) == 1 and type(shape[0]) is int and shape[0] == 0):
        return f"numpy's _reconstruct is given the shape {cut(repr(shape), 40)}, not (0,)"
    if typecode != b"b":
        return f"numpy's _reconstruct is given the dtype {cut(repr(typecode), 40)}, not b'b'"
    return None


def array_state_deviation(state: tuple[Any, ...]) -> str | None:
    """What of an array's state numpy's pickler never writes: a state without its version, a
    version other than 1, an ``is_fortran`` that is not a bool, data as a str."""
    if len(state) != 5:
        return "a numpy array state without its version, which numpy's pickler writes"
    if type(state[0]) is not int or state[0] != 1:
        return f"a numpy array state of version {cut(repr(state[0]), 40)}, where numpy writes 1"
    if type(state[3]) is not bool:
        return f"a numpy array's is_fortran is {cut(repr(state[3]), 40)}, where numpy writes a bool"
    if isinstance(state[4], str):
        return "a numpy array's data is a str, where numpy's pickler writes bytes"
    return None


def fortran_deviation(shape: tuple[int, ...], fortran: bool) -> str | None:
    """An array said to be laid out by columns that numpy would also find laid out by rows
    (at most one dimension longer than one, or no items): numpy's pickler writes False."""
    if fortran and (sum(n > 1 for n in shape) < 2 or 0 in shape):
        return f"a numpy array of shape {list(shape)} pickled as laid out by columns only"
    return None


def array_data_refusal(spec: str | None, data: object) -> str | None:
    """Why numpy's ``ndarray.__setstate__`` refuses ``data`` for a dtype of ``spec`` (None: not
    known): an array of objects takes a list, any other bytes or a str."""
    if spec is None:
        return None
    if spec.lstrip("<>=|").startswith("O"):
        if isinstance(data, list):
            return None
        return (
            f"its data is a {type(data).__name__}, not the list an array of objects reads "
            f"(numpy: TypeError: object pickle not returning list); {NUMPY_REFUSES}"
        )
    if isinstance(data, (bytes, str)):
        return None
    return (
        f"its data is a {type(data).__name__}, not the bytes numpy reads (numpy: TypeError: "
        f"pickle not returning string); {NUMPY_REFUSES}"
    )


def bool_bytes_deviation(spec: str, raw: bytes) -> str | None:
    """A bool array holding a byte other than 0 and 1, which numpy never writes."""
    # numpy writes a bool dtype's spec as 'b1' ('?' is also where the spec was not a string).
    if spec.lstrip("<>=|") == "b1" and raw.translate(None, b"\x00\x01"):
        return "a numpy bool array holds a byte other than 0 and 1"
    return None


def dtype_args_deviation(args: tuple[Any, ...]) -> str | None:
    """What of ``numpy.dtype(spec, align, copy)`` numpy's pickler never writes: it writes a spec
    without a byte order, then False and True."""
    if len(args) != 3 or args[1] is not False or args[2] is not True:
        shown = cut(repr(args[1:]), 40)
        return f"numpy.dtype is given the flags {shown}, where numpy's pickler writes (False, True)"
    spec = args[0]
    if isinstance(spec, str) and spec[:1] in ("<", ">", "=", "|"):
        return f"numpy.dtype({cut(repr(spec), 40)}): numpy's pickler writes no byte order there"
    return None


def dtype_state_deviation(spec: str, state: object) -> str | None:
    """What of the state of a dtype of ``spec`` numpy's pickler never writes, for the specs
    whose state it fixes (numbers, bools, objects); the byte order for any spec."""
    if not isinstance(state, tuple) or len(state) not in (8, 9):
        return "a numpy dtype state numpy's pickler never writes"
    bare = spec.lstrip("<>=|")
    if _FIXED.fullmatch(bare) is None and not re.fullmatch(r"[SUV][0-9]+|[Mm]8", bare):
        return None
    if state[1] not in _order(bare):
        return f"a numpy {bare} dtype's byte order is {cut(repr(state[1]), 20)} in its state"
    if _FIXED.fullmatch(bare) is None:
        return None
    flags = 63 if bare.startswith("O") else 0
    version = state[0]
    if len(state) == 9 and (type(version) is not int or version != 4 or type(state[8]) is not dict):
        return f"a numpy {bare} dtype state of version {cut(repr(version), 20)} with 9 items"
    if len(state) == 8 and (type(version) is not int or version != 3):
        return f"a numpy {bare} dtype state of version {cut(repr(version), 20)}"
    written = (None, None, None, -1, -1, flags)
    if any(type(a) is not type(b) or a != b for a, b in zip(state[2:8], written, strict=True)):
        return (
            f"a numpy {bare} dtype state {cut(repr(state[2:8]), 60)}, where numpy writes {written}"
        )
    return None
