"""The class numpy's ``_reconstruct(subtype, shape, dtype)`` is given, as numpy takes it.

numpy (``array__reconstruct`` in numpy/_core/src/multiarray/multiarraymodule.c, numpy 1.x and
2.x) makes an empty array of ``subtype`` and then gives it the pickled state; it refuses, with
TypeError ("_reconstruct: First argument must be a sub-type of ndarray"), a first argument that
is not a type or not a subclass of ``numpy.ndarray``, so ``torch.load`` fails on the file in
either mode. numpy's own subclasses are known by name; numpy.ma.MaskedArray takes a state of 7
items (its ``__setstate__``), not the ndarray's 4 or 5. A class of the standard library or of
torch is no ndarray subclass (neither imports numpy's array type to derive from it). Any other
name is a class ppaux cannot judge without importing it (it never does): the array is then
described under that name, and the name itself is a security finding elsewhere.
"""

from __future__ import annotations

import sys

from ppaux.dump.model import GlobalRef, TypeRef

__all__ = ["MASKED_ARRAY", "reconstruct_subtype"]

MASKED_ARRAY = "numpy.ma.MaskedArray"

#: numpy's ndarray subclasses by the names a pickle gives them, and the name numpy shows.
_SUBTYPES = {
    **dict.fromkeys(
        ("numpy.matrix", "numpy.matrixlib.matrix", "numpy.matrixlib.defmatrix.matrix"),
        "numpy.matrix",
    ),
    **dict.fromkeys(
        ("numpy.memmap", "numpy.core.memmap.memmap", "numpy._core.memmap.memmap"), "numpy.memmap"
    ),
    **dict.fromkeys(
        (
            "numpy.recarray",
            "numpy.rec.recarray",
            "numpy.core.records.recarray",
            "numpy._core.records.recarray",
        ),
        "numpy.recarray",
    ),
    **dict.fromkeys(
        (
            "numpy.char.chararray",
            "numpy.core.defchararray.chararray",
            "numpy._core.defchararray.chararray",
        ),
        "numpy.char.chararray",
    ),
    **dict.fromkeys(
        (
            "numpy.ma.MaskedArray",
            "numpy.ma.masked_array",
            "numpy.ma.core.MaskedArray",
            "numpy.ma.core.masked_array",
        ),
        MASKED_ARRAY,
    ),
}

#: Top-level modules whose classes are never ndarray subclasses.
_NOT_NUMPY = frozenset(sys.stdlib_module_names) | {"__builtin__", "copy_reg", "torch"}


def reconstruct_subtype(subtype: object, shown_as: str) -> tuple[str, str | None]:
    """The class name numpy gives the array, and why numpy refuses ``subtype`` (None where it
    takes it). ``shown_as`` names ``subtype`` in the reason."""
    if isinstance(subtype, TypeRef) and subtype.name == "numpy.ndarray":
        return "numpy.ndarray", None
    if isinstance(subtype, GlobalRef):
        known = _SUBTYPES.get(subtype.name)
        if known is not None:
            return known, None
        if subtype.name.split(".", 1)[0] not in _NOT_NUMPY:
            return subtype.name, None  # a class ppaux cannot judge without importing it
    return "numpy.ndarray", (
        f"numpy's _reconstruct is given {shown_as}, which is not a subclass of numpy.ndarray "
        "(numpy: TypeError, _reconstruct: First argument must be a sub-type of ndarray)"
    )
