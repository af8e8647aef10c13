"""Variants of a torch.save file at the zip level, for the differential harness
(:mod:`torch_differential`): long, non-UTF-8, NUL-holding, case-varied and duplicated record
names, multidisk fields, sizes that disagree, version and byteorder records, deflated storages.
Each takes ``(rng, data, other)`` and returns the variant's bytes; :func:`records` and
:func:`pack` take an archive apart and write one from records."""

from __future__ import annotations

import io
import random
import struct
import zipfile
import zlib
from dataclasses import dataclass

__all__ = ["ZIP_MUTATIONS", "Rec", "pack", "records"]


@dataclass
class Rec:
    name: bytes
    data: bytes
    method: int = 0
    payload: bytes | None = None
    utf8_flag: bool = False
    size: int | None = None
    disk: int = 0


def records(data: bytes) -> list[Rec]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [Rec(i.filename.encode(), archive.read(i)) for i in archive.infolist()]


def pack(recs: list[Rec], *, disks: tuple[int, int] = (0, 0)) -> bytes:
    body, central = b"", b""
    for rec in recs:
        stored = rec.payload
        if stored is None:
            if rec.method == 8:
                packer = zlib.compressobj(6, zlib.DEFLATED, -15)
                stored = packer.compress(rec.data) + packer.flush()
            else:
                stored = rec.data
        size = rec.size if rec.size is not None else len(rec.data)
        flags = 0x800 if rec.utf8_flag else 0
        crc = zlib.crc32(rec.data)
        offset = len(body)
        body += struct.pack(
            "<4s5H3L2H", b"PK\x03\x04", 20, flags, rec.method, 0, 33, crc, len(stored), size,
            len(rec.name), 0,
        ) + rec.name + stored  # fmt: skip
        central += struct.pack(
            "<4s4B4HL2L5H2L", b"PK\x01\x02", 20, 3, 20, 0, flags, rec.method, 0, 33, crc,
            len(stored), size, len(rec.name), 0, 0, rec.disk, 0, 0o644 << 16, offset,
        ) + rec.name  # fmt: skip
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", disks[0], disks[1], len(recs), len(recs), len(central),
        len(body), 0,
    )  # fmt: skip
    return body + central + end


def _folder(recs: list[Rec]) -> bytes:
    return recs[0].name.split(b"/", 1)[0]


def _long_folder(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = records(data)
    old = _folder(recs)
    new = b"f" * rng.choice((100, 480, 497, 498, 503, 520))
    for rec in recs:
        rec.name = new + rec.name[len(old) :]
    if rng.random() < 0.5:
        tail = b"z" * rng.randrange(1, 60)
        recs.append(Rec(new + b"/" + rng.choice((b"constants.pkl", b"data.pkl")) + tail, b"x"))
    return pack(recs)


def _odd_name(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = records(data)
    rec = rng.choice(recs)
    at = rng.randrange(len(rec.name) + 1)
    odd = rng.choice((b"\xff", b"\xc3\xa9", b"\x00", b"\x00x", b"\xed\xa0\x80", b"/"))
    if rng.random() < 0.5:
        rec.name = rec.name[:at] + odd + rec.name[at:]
    else:
        rec.name = rec.name + odd + rng.choice((b"", b"constants.pkl", b"pkl"))
    rec.utf8_flag = rng.random() < 0.5
    if rng.random() < 0.3:
        recs.append(Rec(_folder(recs) + b"/constants.pkl\x00" + odd, b""))
    return pack(recs)


def _case_name(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = records(data)
    rec = rng.choice(recs)
    rec.name = bytes(c ^ 32 if 97 <= c <= 122 and rng.random() < 0.5 else c for c in rec.name)
    if rng.random() < 0.3:
        spelling = rng.choice((b"CONSTANTS.PKL", b"Constants.pkl"))
        recs.append(Rec(_folder(recs) + b"/" + spelling, b""))
    return pack(recs)


def _duplicate_name(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = records(data)
    foreign = records(other)
    rec = rng.choice(recs)
    copy = Rec(rec.name, rng.choice(foreign).data if rng.random() < 0.6 else rec.data)
    recs.insert(rng.randrange(len(recs) + 1), copy)
    return pack(recs)


def _multidisk(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = records(data)
    if rng.random() < 0.5:
        rng.choice(recs).disk = rng.choice((1, 2, 0xFFFF))
        return pack(recs)
    return pack(recs, disks=(rng.choice((0, 1, 3)), rng.choice((0, 1, 2))))


def _size_lie(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = records(data)
    rec = rng.choice(recs)
    rec.size = max(0, len(rec.data) + rng.choice((-8, -4, -1, 1, 4, 8, 1000)))
    if rng.random() < 0.5:
        rec.method = 8
    return pack(recs)


def _special_record(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = records(data)
    which = rng.choice((b"version", b".data/version", b"byteorder", b".storage_alignment"))
    text = rng.choice(
        (b"3\n", b"11", b"10", b"0", b"1", b" 3", b"+2", b"0x3", b"3abc", b"-1", b"", b"x",
         b"big", b"little", b"little\n", b"Little", b"64", b" 64\n", b"6_4")
    )  # fmt: skip
    name = _folder(recs) + b"/" + which
    recs = [r for r in recs if r.name.lower() != name.lower()]
    if rng.random() < 0.2:
        name = name.upper()
    recs.insert(rng.randrange(1, len(recs) + 1), Rec(name, text))
    return pack(recs)


def _deflate_storage(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = records(data)
    storages = [r for r in recs if b"/data/" in r.name] or recs
    rec = rng.choice(storages)
    rec.method = 8
    if rng.random() < 0.4:
        packer = zlib.compressobj(6, zlib.DEFLATED, -15)
        good = packer.compress(rec.data) + packer.flush()
        cut = rng.randrange(len(good) + 1)
        rec.payload = good[:cut] + bytes(rng.randrange(256) for _ in range(rng.randrange(4)))
    return pack(recs)


def _end_field(rng: random.Random, data: bytes, other: bytes) -> bytes:
    at = data.rfind(b"PK\x05\x06")
    out = bytearray(data)
    offset, fmt = rng.choice(((4, "<H"), (6, "<H"), (8, "<H"), (10, "<H"), (12, "<I"), (16, "<I")))
    value = struct.unpack_from(fmt, out, at + offset)[0]
    value = max(0, value + rng.choice((-46, -1, 1, 30, 46)))
    struct.pack_into(fmt, out, at + offset, min(value, 2 ** (8 * struct.calcsize(fmt)) - 1))
    return bytes(out)


ZIP_MUTATIONS = [
    _long_folder,
    _odd_name,
    _case_name,
    _duplicate_name,
    _multidisk,
    _size_lie,
    _special_record,
    _deflate_storage,
    _end_field,
]
