"""Whether numpy makes the dtype a pickle describes: ``numpy.dtype(spec, align, copy)`` and
then ``dtype.__setstate__(state)``, read as numpy 2.x reads them (``_convert_from_str`` and
``arraydescr_setstate`` in numpy/_core/src/multiarray/descriptor.c). numpy refuses, and
torch.load(weights_only=False) fails on the file, where either one fails; nothing of numpy runs.

numpy pickles a dtype's spec as its kind and item size ('f8', 'U5', 'V16', 'M8'). A spec of
another form is judged where numpy's answer is known: a kind and size numpy has no type for
('f3', 'i16') and a word numpy does not know as a type name ('xpu') are refused; a name that
numpy 1.x knew and 2.x dropped ('float_'), or a form ppaux does not model (fields separated by
commas, a byte order before a name), is left unjudged (``None, False``).
"""

from __future__ import annotations

import re

from ppaux.text import cut

__all__ = ["spec_verdict", "state_verdict"]

#: numpy 2.x's type names (``numpy.sctypeDict``) and one-character type codes.
_NAMES_TEXT = (
    "a bool bool_ byte bytes bytes_ cdouble clongdouble complex complex128 complex256 complex64 "
    "csingle datetime64 double float float128 float16 float32 float64 half int int16 int32 int64 "
    "int8 int_ intc intp long longdouble longlong object object_ short single str str_ "
    "timedelta64 ubyte uint uint16 uint32 uint64 uint8 uintc uintp ulong ulonglong unicode "
    "ushort void ? B D F G H I L M N O P Q S U V b c d e f g h i l m n p q"
)
_NAMES = frozenset(_NAMES_TEXT.split())
#: Names numpy 1.x knew that numpy 2.x does not (whether numpy reads them depends on which).
_OLD_NAMES_TEXT = (
    "float_ complex_ longfloat singlecomplex cfloat longcomplex clongfloat string_ unicode_ "
    "object0 int0 uint0 bool8 void0 str0 bytes0 Bytes0 Str0 Datetime64 Timedelta64 Float16 "
    "Float32 Float64 Float128 Complex32 Complex64 Complex128 Complex256 Int8 Int16 Int32 Int64 "
    "UInt8 UInt16 UInt32 UInt64 Bool Object0 Void0 Uint64"
)
_OLD_NAMES = frozenset(_OLD_NAMES_TEXT.split())
#: The item sizes numpy has a type for, by kind; a string's (S, a, V) is any size below 2**31,
#: a unicode string's (U, in characters of 4 bytes) any below 2**29.
_SIZES = {
    "b": range(1, 2),
    "i": (1, 2, 4, 8),
    "u": (1, 2, 4, 8),
    "f": (2, 4, 8, 16),
    "c": (8, 16, 32),
    "O": (4, 8),
    "M": (8,),
    "m": (8,),
    "?": (),
    "S": range(2**31),
    "a": range(2**31),
    "V": range(2**31),
    "U": range(2**29),
}
_SIZED = re.compile(r"[<>=|]?([A-Za-z?])(0|[1-9][0-9]{0,11})")
_WORD = re.compile(r"([<>=|]?)([A-Za-z_?]*)")
#: ``PyArg_ParseTuple``'s format for each length of state, as numpy 2.x reads it: the version
#: a C int ('i'), the item size and alignment a Py_ssize_t ('n'), the flags any int ('l').
_FORMATS = {9: "iOOOOnnlO", 8: "iOOOOnnl", 7: "iOOOOnn", 6: "iOOOnn", 5: "OOOnn"}
_RANGES = {
    "i": range(-(2**31), 2**31),
    "n": range(-(2**63), 2**63),
}


def _not_understood(spec: str) -> str:
    return f"numpy.dtype is given {cut(spec, 40)!r} (numpy: TypeError: data type not understood)"


def spec_verdict(spec: object) -> tuple[str | None, bool]:
    """Why numpy refuses to make a dtype of ``spec`` (None where it makes one), and whether
    that answer is known (False: a form ppaux does not judge)."""
    if not isinstance(spec, str):
        return None, False
    sized = _SIZED.fullmatch(spec)
    if sized is not None:
        kind, size = sized.group(1), int(sized.group(2))
        if kind in _SIZES:
            return (None if size in _SIZES[kind] else _not_understood(spec)), True
        return None, False
    word = _WORD.fullmatch(spec)
    if word is None:
        return None, False
    order, name = word.groups()
    if name in _OLD_NAMES or (name in _NAMES and (order or len(name) > 1)):
        return None, name in _NAMES and not order
    if name in _NAMES:
        return None, True
    return _not_understood(spec), True


def state_verdict(state: object) -> tuple[str | None, bool]:
    """Why numpy's ``dtype.__setstate__`` refuses ``state`` (None where it takes it), and
    whether that answer is known: the version, the ints, the byte order and the types of the
    names and fields are read; a subarray and a structured dtype's fields are not."""
    if not isinstance(state, tuple):
        text = f"a numpy dtype's state is {type(state).__name__}, not a tuple (numpy: TypeError)"
        return text, True
    fmt = _FORMATS.get(len(state))
    if fmt is None:
        version = state[0] if len(state) > 5 else -1
        if not isinstance(version, int):
            return _not_int(version), True
        return (_bad_version(version), True) if not 0 <= version <= 4 else (None, False)
    for item, code in zip(state, fmt, strict=True):
        if code != "O" and (
            not isinstance(item, int) or (code in _RANGES and item not in _RANGES[code])
        ):
            return _not_int(item), True
    version = state[0] if len(state) > 5 else 0
    if isinstance(version, int) and not 0 <= version <= 4:
        return _bad_version(version), True
    offset = 1 if len(state) > 5 else 0
    # (names, fields) from version 2 on, in states of 7 items or more; before, the fields
    # alone, whose item -1 numpy takes as the names.
    names, fields = state[3:5] if len(state) >= 7 else (None, state[offset + 2])
    if fields is not None and (len(state) < 7 or version in (0, 1)):
        return None, False
    refusal = _endian_refusal(state[offset]) or _fields_refusal(names, fields)
    if refusal is None and (state[offset + 1] is not None or fields is not None):
        return None, False  # a subarray or a structured dtype: what numpy checks further
    return refusal, True


def _endian_refusal(endian: object) -> str | None:
    if isinstance(endian, str):
        if not endian.isascii():
            return "a numpy dtype's byte order is not ASCII (numpy: UnicodeEncodeError)"
        endian = endian.encode("ascii")
    if not isinstance(endian, bytes):
        return "a numpy dtype's byte order is not a string (numpy: ValueError)"
    if len(endian) != 1:
        return (
            f"a numpy dtype's byte order is {cut(repr(endian), 20)}, not one character (numpy: "
            "ValueError: endian is not 1-char string in Numpy dtype unpickling)"
        )
    return None


def _fields_refusal(names: object, fields: object) -> str | None:
    if (names is None) != (fields is None):
        return "a numpy dtype's names and fields disagree (numpy: ValueError)"
    if names is not None and not isinstance(names, tuple):
        return "a numpy dtype's names are not a tuple (numpy: ValueError)"
    if fields is not None and not isinstance(fields, dict):
        return "a numpy dtype's fields are not a dict (numpy: ValueError)"
    return None


def _bad_version(version: int) -> str:
    return (
        f"a numpy dtype's state is of version {cut(str(version), 24)}, where numpy reads 0 to 4 "
        "(numpy: ValueError: can't handle version of numpy.dtype pickle)"
    )


def _not_int(item: object) -> str:
    what = cut(repr(item), 30) if isinstance(item, (int, str, bytes)) else type(item).__name__
    return (
        f"a numpy dtype's state holds {what} where numpy reads an int of its range (numpy: "
        "TypeError or OverflowError)"
    )
