"""The view bits (conjugate, negative) torch sets on a rebuilt tensor from the ``metadata``
argument of ``torch._utils._rebuild_tensor_v2`` and ``_v3`` (torch 2.x), checked as
``torch._C._set_tensor_metadata`` checks them."""

from __future__ import annotations

from typing import Any

from ppaux.dump.model import TensorRef
from ppaux.dump.pickle_vm import Machine
from ppaux.errors import TorchRefuses

__all__ = ["view_bits"]


#: Values torch._C._set_tensor_metadata takes for a bit (pybind's bool: None and numbers too).
_BIT_VALUES = (bool, int, float, type(None))

#: Plain values whose truth torch's ``if metadata:`` reads without running anything.
_PLAIN = (type(None), bool, int, float, str, bytes, bytearray, tuple, list, dict, set, frozenset)


def view_bits(m: Machine, tensor: TensorRef, metadata: object) -> tuple[str, ...]:
    """The view bits torch sets from a tensor's saved ``metadata`` (torch 2.x,
    ``torch._utils._rebuild_tensor_v2``). torch.save writes it only for a view with a bit, as
    ``{'conj': True}``, ``{'neg': True}`` or both. torch.load sets nothing for a false value;
    otherwise it must be a dict of names (str or bytes) to booleans (None and numbers pass), and
    a 'conj' key sets the conjugate bit, a 'neg' key the negative bit, whatever their values
    (``torch._C._set_tensor_metadata``); other names are ignored. What torch fails on is
    refused (PP117); what it reads but torch.save never writes is a deviation (PP118), severe
    where the values read are not what the metadata says."""
    from ppaux.dump.payload import safe_repr

    def refuse(why: str) -> TorchRefuses:
        return TorchRefuses(m.path, f"torch.load refuses the file: {why}")

    if isinstance(metadata, _PLAIN) and not metadata:
        m.deviate(f"tensor metadata {safe_repr(metadata, 40)} (torch.save writes none)", False)
        return ()
    if not isinstance(metadata, dict):
        raise refuse(f"a tensor's metadata is a {type(metadata).__name__}, not a dict")
    names: dict[str, Any] = {}
    for key, value in metadata.items():
        if type(key) is bytes:
            name = key.decode("latin-1")  # pybind takes the bytes as they are
        elif type(key) is str and _utf8(key):
            name = key
        else:
            raise refuse(f"a tensor's metadata has the key {safe_repr(key, 40)}, not a name")
        if not isinstance(value, _BIT_VALUES):
            raise refuse(f"a tensor's metadata maps {name!r} to a {type(value).__name__}")
        names[name] = (key, value)
    bits = tuple(bit for bit in ("conj", "neg") if bit in names)
    if "conj" in bits and not tensor.dtype.startswith("complex"):
        raise refuse(f"a {tensor.dtype} tensor has the conjugate bit")
    odd = [bit for bit in bits if type(names[bit][0]) is not str or names[bit][1] is not True]
    if odd:
        key, value = names[odd[0]]
        entry = f"{safe_repr(key, 40)}: {safe_repr(value, 40)}"
        m.deviate(
            f"tensor metadata {{{entry}}}: torch sets the {odd[0]} bit whatever the value "
            "(torch.save writes True)"
        )
    elif len(names) > len(bits):
        other = next(name for name in names if name not in bits)
        m.deviate(f"tensor metadata {safe_repr(other, 40)}, a name torch ignores", False)
    return bits


def _utf8(text: str) -> bool:
    """Whether pybind can pass ``text`` to C++ (it encodes it as UTF-8: no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
