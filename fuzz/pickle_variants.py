"""Variants of a torch.save file at the pickle level, for the differential harness
(:mod:`torch_differential`): a data.pkl built from raw opcodes (keys in every string opcode,
integers in every text form, storage keys that torch's cache treats as equal or not, BUILD on
tensors, requires_grad set by a rebuild's argument, a Parameter or a BUILD state), and bytes of
a written one flipped or cut."""

from __future__ import annotations

import os
import random
import struct

from zip_variants import Rec, pack, records

__all__ = ["PICKLE_MUTATIONS", "PREFIX"]

PREFIX = "__sampling_observer_output__."


def _text_op(rng: random.Random, text: str) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    choice = rng.randrange(7)
    if choice == 0:
        if len(raw) < 256:
            return b"\x8c" + bytes([len(raw)]) + raw
        return b"X" + struct.pack("<I", len(raw)) + raw
    if choice == 1:
        return b"X" + struct.pack("<I", len(raw)) + raw
    if choice == 2:
        return b"\x8d" + struct.pack("<Q", len(raw)) + raw
    if choice == 3:  # UNICODE: raw-unicode-escape text up to a newline
        return b"V" + text.encode("raw-unicode-escape", "surrogatepass") + b"\n"
    if choice == 4:  # SHORT_BINSTRING: bytes that torch decodes with its encoding
        if len(raw) < 256:
            return b"U" + bytes([len(raw)]) + raw
        return b"T" + struct.pack("<i", len(raw)) + raw
    if choice == 5:  # STRING: a quoted Python 2 literal
        return b"S" + repr(raw)[1:].encode("ascii") + b"\n"
    odd = (b"\\u00e9", b"\\ud800", b"\\U0001f600", b"a\\x41", b"\\", b"\\u12")
    return b"V" + rng.choice(odd) + b"\n"


def _int_op(rng: random.Random, value: int) -> bytes:
    choice = rng.randrange(6)
    if choice == 0 and 0 <= value < 256:
        return b"K" + bytes([value])
    if choice == 1:
        spelled = rng.choice((f"{value}", f"0{value}", f"+{value}", f" {value}", f"{value}_0",
                              f"0x{value:x}", f"{value} ", f"{value}L"))  # fmt: skip
        return b"I" + spelled.encode() + b"\n"
    if choice == 2:
        spelled = rng.choice((f"{value}L", f"{value}", f"0{value}L", f"-{value}L"))
        return b"L" + spelled.encode() + b"\n"
    if choice == 3:
        raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
        return b"\x8a" + bytes([len(raw)]) + raw
    if choice == 4 and value in (0, 1):
        return b"I0" + str(value).encode() + b"\n"  # "I00" and "I01" are False and True
    return b"J" + struct.pack("<i", value)


def _pickled(rng: random.Random) -> bytes:
    """A data.pkl built from raw opcodes: a dict of tensors and plain values, keys and ints in
    every spelling, storage keys in forms torch's cache may or may not merge, and BUILD."""

    def g(module: str, name: str) -> bytes:
        return b"c" + module.encode() + b"\n" + name.encode() + b"\n"

    def tup(*items: bytes) -> bytes:
        return b"(" + b"".join(items) + b"t"

    entries = []
    storages: dict[str, tuple[str, int]] = {}
    for n in range(rng.randrange(1, 5)):
        key = rng.choice(("next_token_ids", PREFIX + "x", f"k{n}", "é", "a\u00e9", "K", "k"))
        if rng.random() < 0.6:
            skey = rng.choice(("0", "1", "2"))
            kinds = ("FloatStorage", "LongStorage", "HalfStorage")
            kind, count = storages.setdefault(skey, (rng.choice(kinds), rng.choice((2, 4))))
            spellings = (
                _text_op(rng, skey),
                _int_op(rng, int(skey)),
                b"\x88" if skey == "1" else _text_op(rng, skey),  # True, equal to 1
            )
            location = _text_op(rng, rng.choice(("cpu", "cpu", "cuda:0", "meta", "foo")))
            pid = tup(
                _text_op(rng, "storage"),
                g("torch", kind),
                rng.choice(spellings),
                location,
                _int_op(rng, count),
            )
            pid += b"Q"
            shape = rng.choice(((count,), (1, count), (count // 2,)))
            stride = (1,) if len(shape) == 1 else (count, 1)
            # requires_grad as torch.save writes it (False, True), or as it never does: a
            # number or None, which torch refuses, as it refuses True on an integer tensor.
            grad = rng.choice((b"\x89", b"\x89", b"\x88", _int_op(rng, 1), b"N"))
            value = g("torch._utils", "_rebuild_tensor_v2") + tup(
                pid,
                _int_op(rng, rng.choice((0, 0, 1))),
                tup(*(_int_op(rng, x) for x in shape)),
                tup(*(_int_op(rng, x) for x in stride)),
                grad,
                g("collections", "OrderedDict") + b")R",
            )
            value += b"R"
            if rng.random() < 0.2:  # a Parameter, whose requires_grad replaces the tensor's
                value = g("torch._utils", "_rebuild_parameter") + tup(
                    value,
                    rng.choice((b"\x88", b"\x89", _int_op(rng, 0))),
                    g("collections", "OrderedDict") + b")R",
                )
                value += b"R"
            if rng.random() < 0.25:  # BUILD on the tensor, as Tensor.__setstate__ reads it
                state = rng.choice((
                    b"}",
                    b"(" + _text_op(rng, "x") + _int_op(rng, 1) + b"d",
                    tup(b"N", b"\x89", b"N"),
                    tup(b"N", b"\x88", b"N", b"}"),
                    tup(b"\x88", b"N", b"N"),  # requires_grad set by the state
                    tup(b"\x89", b"N", b"}"),
                    tup(_int_op(rng, 1), b"N", b"N"),
                ))  # fmt: skip
                value += state + b"b"
        else:
            plain = (_int_op(rng, rng.randrange(300)), _text_op(rng, "output"), b"N")
            objects = (
                b"G?\xe0\x00\x00\x00\x00\x00\x00",
                g("torch", "device") + tup(_text_op(rng, rng.choice(("cpu", "cuda:1", "meta"))))
                + b"R",
                g("torch", "Size") + tup(tup(_int_op(rng, 2), _int_op(rng, 3))) + b"R",
                g("collections", "OrderedDict") + b")R",
                g("builtins", "set") + tup(b"]" + _int_op(rng, 1) + b"a") + b"R",
                g("os", "getcwd") + b")R",  # harmless, but outside every allowlist
                g("builtins", "getattr") + tup(g("os", "path"), _text_op(rng, "sep")) + b"R",
            )  # fmt: skip
            value = rng.choice((*plain, *objects))
        entries.append(_text_op(rng, key) + value)
    body = b"}(" + b"".join(entries) + b"u"
    data_pkl = b"\x80\x02" + body + b"."
    recs = [Rec(b"archive/data.pkl", data_pkl), Rec(b"archive/byteorder", b"little")]
    for skey, (kind, count) in storages.items():
        item = {"FloatStorage": 4, "LongStorage": 8, "HalfStorage": 2}[kind]
        recs.append(Rec(b"archive/data/" + skey.encode(), os.urandom(item * count)))
    if rng.random() < 0.1:
        recs.append(Rec(b"archive/data/True", os.urandom(16)))
    recs.append(Rec(b"archive/version", b"3\n"))
    return pack(recs)


def _pickle_variant(rng: random.Random, data: bytes, other: bytes) -> bytes:
    return _pickled(rng)


def _pickle_flip(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = records(data)
    rec = next(r for r in recs if r.name.endswith(b"/data.pkl"))
    mutated = bytearray(rec.data)
    if rng.random() < 0.3:
        mutated = mutated[: rng.randrange(len(mutated))]
    else:
        for _ in range(rng.randrange(1, 3)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
    rec.data = bytes(mutated)
    return pack(recs)


PICKLE_MUTATIONS = [_pickle_variant, _pickle_variant, _pickle_flip]
