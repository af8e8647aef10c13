"""What the safe reader builds instead of real objects: descriptions of tensors, storages, arrays
and of every object it refused to create.

None of these classes runs anything from a file. They compare by identity, so a hostile pickle
can use them as dict keys or set members without any ``__eq__``/``__hash__`` of its choosing.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DTYPE_ITEMSIZE",
    "NUMPY_NAMES",
    "STORAGE_DTYPES",
    "DimRange",
    "DtypeRef",
    "EmptySize",
    "GlobalRef",
    "NdArrayRef",
    "NumpyDtype",
    "NumpyScalar",
    "Opaque",
    "StorageRef",
    "StorageType",
    "TensorRef",
    "TorchValue",
    "TypeRef",
]

#: Legacy storage class name -> dtype name (torch.serialization writes these as globals).
STORAGE_DTYPES = {
    "DoubleStorage": "float64",
    "FloatStorage": "float32",
    "HalfStorage": "float16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "BFloat16Storage": "bfloat16",
    "ComplexDoubleStorage": "complex128",
    "ComplexFloatStorage": "complex64",
    "QInt8Storage": "qint8",
    "QInt32Storage": "qint32",
    "QUInt8Storage": "quint8",
    "QUInt4x2Storage": "quint4x2",
    "QUInt2x4Storage": "quint2x4",
    # New dtypes are saved as untyped (byte) storage plus a dtype argument.
    "UntypedStorage": "uint8",
}

#: Bytes per element of every torch dtype the reader knows, by canonical name.
DTYPE_ITEMSIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "complex128": 16,
    "complex64": 8,
    "complex32": 4,
    "qint8": 1,
    "quint8": 1,
    "qint32": 4,
    "quint4x2": 1,
    "quint2x4": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
    "float4_e2m1fn_x2": 1,
    "bits8": 1,
    "bits16": 2,
    "bits1x8": 1,
    "bits2x4": 1,
    "bits4x2": 1,
}


#: numpy's type codes (kind and item size, as numpy pickles a dtype) -> dtype names, for the
#: codes arrays are pickled with. Where torch has the dtype, numpy's name is torch's (a key of
#: :data:`DTYPE_ITEMSIZE`); ``float128`` and ``object`` have no torch counterpart.
NUMPY_NAMES = {
    "f2": "float16",
    "f4": "float32",
    "f8": "float64",
    "f16": "float128",
    "i1": "int8",
    "i2": "int16",
    "i4": "int32",
    "i8": "int64",
    "u1": "uint8",
    "u2": "uint16",
    "u4": "uint32",
    "u8": "uint64",
    "b1": "bool",
    "c8": "complex64",
    "c16": "complex128",
    "O8": "object",
}


class EmptySize(tuple[()]):
    """The empty size ``torch.Size(())`` builds, as the reader keeps it: equal to ``()`` and
    read as ``()`` everywhere, but an object of its own. Python shares the one empty tuple, so
    only a new object tells a size pickled as a torch.Size (which torch.save never writes for a
    tensor) from the plain ``()`` torch.save writes for a scalar's size."""

    __slots__ = ()


# Shown, digested and compared as the tuple torch.load reads (type names in every format).
EmptySize.__name__ = "tuple"


class _Ref:
    """Base of the reader's models: identity equality and hashing, a short repr."""

    __slots__ = ()


class StorageType(_Ref):
    """A storage class named in the pickle, such as ``torch.BFloat16Storage``."""

    __slots__ = ("dtype", "name")

    def __init__(self, name: str, dtype: str) -> None:
        self.name = name
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class DtypeRef(_Ref):
    """A torch dtype named in the pickle, such as ``torch.bfloat16``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class TypeRef(_Ref):
    """An allowlisted class used as a value (``torch.Tensor``, ``numpy.ndarray``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


class TorchValue(_Ref):
    """A ``torch.device``, ``torch.layout`` or ``torch.qscheme`` value named in the pickle.

    Shown as its text (``cuda:0``, ``torch.strided``), but not a str: as a dict key it makes
    sglang's ``key.startswith`` fail with AttributeError, as the real object would. Equal values
    are equal, as torch's are (two equal device keys are one key).
    """

    __slots__ = ("name", "type_name")

    def __init__(self, type_name: str, name: str) -> None:
        self.type_name = type_name
        self.name = name

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TorchValue)
            and other.type_name == self.type_name
            and other.name == self.name
        )

    def __hash__(self) -> int:
        return hash((self.type_name, self.name))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        if self.type_name != "torch.device":
            return self.name
        kind, sep, index = self.name.partition(":")
        return f"device(type={kind!r}, index={index})" if sep else f"device(type={kind!r})"


class StorageRef(_Ref):
    """A tensor storage: its dtype, the zip record that holds its bytes, and its saved location."""

    __slots__ = ("data", "dtype", "key", "location", "numel", "record", "record_size", "untyped")

    def __init__(self, dtype: str, key: str, location: str, numel: int) -> None:
        self.dtype = dtype
        self.key = key
        self.location = location
        self.numel = numel
        #: Whether the persistent id that made it names torch.storage.UntypedStorage, which
        #: torch.save writes for an untyped storage and under _rebuild_tensor_v3 only.
        self.untyped = False
        self.record: str | None = None
        self.record_size: int | None = None
        # Bytes of a storage saved inside the pickle itself (plain pickles nest a legacy
        # torch.save stream per storage; a legacy-format file keeps them after its pickles);
        # zip storages live in ``record`` instead.
        self.data: bytes | memoryview | None = None

    @property
    def nbytes(self) -> int:
        """Bytes the storage declares (elements times element size)."""
        return self.numel * DTYPE_ITEMSIZE.get(self.dtype, 1)

    def __repr__(self) -> str:
        return f"<storage {self.key} {self.dtype}[{self.numel}] on {self.location}>"


class TensorRef(_Ref):
    """A tensor as saved: dtype, shape, stride, device string, storage and kind.

    ``kind`` is 'dense', 'sparse', 'quantized', 'meta' or 'nested'; ``subclass`` names a tensor
    subclass (such as ``torch.nn.Parameter``) or is None for a plain tensor. ``parts`` keeps what
    a rebuild needs beyond one storage, as saved: a sparse tensor's component tensors, a quantized
    tensor's quantizer parameters, a nested tensor's buffer and size tensors (None otherwise).
    ``bits`` names the view bits torch sets on the rebuilt tensor from its saved metadata
    ('conj', 'neg'): a conjugate or negative view reads differently from its bytes.
    """

    __slots__ = (
        "bits",
        "device",
        "dtype",
        "kind",
        "layout",
        "offset",
        "parts",
        "requires_grad",
        "shape",
        "state",
        "storage",
        "stride",
        "subclass",
    )

    def __init__(
        self,
        dtype: str,
        shape: tuple[int, ...],
        stride: tuple[int, ...] | None,
        device: str,
        *,
        offset: int = 0,
        requires_grad: bool = False,
        kind: str = "dense",
        layout: str = "torch.strided",
        storage: StorageRef | None = None,
    ) -> None:
        self.dtype = dtype
        self.shape = shape
        self.stride = stride
        self.offset = offset
        self.device = device
        self.requires_grad = requires_grad
        self.kind = kind
        self.layout = layout
        self.subclass: str | None = None
        self.storage = storage
        self.state: Any = None
        self.parts: dict[str, Any] | None = None
        self.bits: tuple[str, ...] = ()

    @property
    def numel(self) -> int:
        """Number of elements (the product of the shape)."""
        n = 1
        for size in self.shape:
            n *= size
        return n

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor's own elements (not of the whole storage it views)."""
        return self.numel * DTYPE_ITEMSIZE.get(self.dtype, 1)

    @property
    def nested_layout(self) -> tuple[int | None, int | None]:
        """A nested tensor's parts and the dimensions of each, as torch.load gives
        them (``nt.size(0)``; ``nt.dim()`` is one more), from the shape of the sizes tensor
        torch.save writes beside its buffer (one row a part); None where the file does not
        say. Each part's own sizes are values in the file, not read here."""
        sizes = (self.parts or {}).get("sizes")
        if self.kind == "nested" and isinstance(sizes, TensorRef) and len(sizes.shape) == 2:
            return sizes.shape[0], sizes.shape[1]
        offsets = (self.parts or {}).get("offsets")
        if self.layout == "torch.jagged" and isinstance(offsets, TensorRef) and offsets.shape:
            # A jagged one: one offset more than its parts, each of its values' dimensions.
            return max(offsets.shape[0] - 1, 0), len(self.shape)
        return None, None

    @property
    def contiguous(self) -> bool:
        """True when the strides are those of a row-major tensor (size-1 dims ignored)."""
        if self.stride is None or self.numel == 0:
            return True
        expected = 1
        # The reader refuses a stride whose length differs from the shape's.
        for size, stride in zip(reversed(self.shape), reversed(self.stride), strict=True):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def __repr__(self) -> str:
        # A layout other than strided is part of what torch reads (a CSC tensor over CSR's
        # parts is another matrix); a quantized tensor is named as one.
        if self.layout != "torch.strided":
            extra = f" {self.layout.removeprefix('torch.')}"
        else:
            extra = " quantized" if self.kind == "quantized" else ""
        return f"<tensor {self.dtype}{list(self.shape)}{extra} on {self.device}>"


class NdArrayRef(_Ref):
    """A numpy array as pickled by numpy: dtype and shape, and its data as the bytes numpy wrote
    (``raw``, None for an object array, whose items are pickled objects). Nothing of numpy runs:
    ``descr`` is the pickled dtype (spec and byte order), ``fortran`` says the bytes are in
    column-major order."""

    __slots__ = ("descr", "dtype", "fortran", "problem", "raw", "refusal", "shape", "subtype")

    def __init__(self) -> None:
        self.dtype = "?"
        self.shape: tuple[int, ...] = ()
        self.fortran = False
        self.descr: NumpyDtype | None = None
        self.raw: bytes | None = None
        #: Why numpy's ``ndarray.__setstate__`` refuses the pickled state, or None.
        self.problem: str | None = None
        #: Why numpy refuses to make the array at all, so that torch.load (either mode) fails
        #: on the file; None where it makes one.
        self.refusal: str | None = None
        #: The array's class as the pickle names it: numpy.ndarray or a subtype (numpy.matrix).
        self.subtype = "numpy.ndarray"

    def __repr__(self) -> str:
        return f"<{self.subtype} {self.dtype}{list(self.shape)}>"


class NumpyDtype(_Ref):
    """A numpy dtype as pickled (``numpy.dtype('f8', ...)`` then its byte-order state)."""

    __slots__ = ("built", "byteorder", "detail", "refusal", "spec")

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.byteorder = "="
        #: Whether BUILD gave the dtype a state: numpy's byte order is then the state's.
        self.built = False
        #: The name the state gives where the spec alone does not ('datetime64[D]', a
        #: structured dtype's fields); see :mod:`ppaux.dump.numpy_dtypes`.
        self.detail: str | None = None
        #: Why numpy refuses to make this dtype (its spec or its state), where it does; see
        #: :mod:`ppaux.dump.numpy_dtype_refusals`.
        self.refusal: str | None = None

    @property
    def name(self) -> str:
        """The dtype's name, such as 'float32'; big-endian ones say so ('float32 (big-endian)')."""
        base = self.detail or NUMPY_NAMES.get(self.spec.lstrip("<>=|"), self.spec)
        return f"{base} (big-endian)" if self.byteorder == ">" else base

    def __repr__(self) -> str:
        return f"dtype({self.name!r})"


class NumpyScalar(_Ref):
    """A numpy scalar such as ``numpy.float32(1.5)``: its dtype only."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"<numpy scalar {self.dtype}>"


class GlobalRef(_Ref):
    """A global outside the allowlist, named but never imported."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<global {self.name}>"


class Opaque(_Ref):
    """An object the pickle asked to create through a global outside the allowlist.

    It records how it would have been made (``via``: 'call', 'new', 'object'), the arguments,
    the state given to BUILD and any items or appends, so that ``inspect`` can show what the
    file would have done and descend into state that holds tensors.
    """

    __slots__ = ("appended", "args", "items", "name", "state", "via")

    def __init__(self, name: str, via: str, args: tuple[Any, ...] = ()) -> None:
        self.name = name
        self.via = via
        self.args = args
        self.state: Any = None
        self.items: list[tuple[Any, Any]] = []
        self.appended: list[Any] = []

    def __repr__(self) -> str:
        return f"<{self.name} object>"


class DimRange:
    """A ``torch._dynamo.decorators._DimRange`` (a dimension's marked range, which torch.save
    writes among a nested jagged tensor's cached metadata): its fields once built."""

    __slots__ = ("fields",)

    def __init__(self) -> None:
        self.fields: tuple[Any, ...] | None = None

    def __repr__(self) -> str:
        return f"_DimRange{self.fields!r}" if self.fields is not None else "_DimRange()"
