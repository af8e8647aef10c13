"""Edits made in place to a file ``torch.save`` wrote, one field or opcode at a time, keeping
everything else as the writer laid it out (alignment, record order, sizes): an opcode swapped
for another of the same argument shape, a memo index changed, a record renamed, a field of a
local header, of the central directory or of the end records changed.

Each mutation takes ``(rng, data, other)`` as the harness's do and returns the edited bytes;
an edit inside a record's data keeps that record's CRC right in both headers (torch.load
reads on past a wrong CRC, and the CRC is its own mutation here), so the edit itself is what
the reader meets.
"""

from __future__ import annotations

import io
import pickletools
import random
import struct
import zipfile
from collections.abc import Callable

__all__ = ["GRAMMAR_BREAKS", "WRITER_MUTATIONS"]

# Opcodes grouped by the shape of their argument: a swap within a group keeps every byte after
# it where the writer put it.
_NO_ARG = b"}])N\x88\x89\x85\x86\x87Rbsuae(t02\x8f\x94\x93\x81"
_ONE_BYTE = b"qhK"
_TWO_BYTES = b"M"
_FOUR_BYTES = b"rjJ"
_GROUPS = (_NO_ARG, _ONE_BYTE, _TWO_BYTES, _FOUR_BYTES)
_MEMO_OPS = {"BINPUT": 1, "BINGET": 1, "LONG_BINPUT": 4, "LONG_BINGET": 4}


def _entries(data: bytes) -> list[tuple[zipfile.ZipInfo, int, int]]:
    """(info, offset of its central directory entry, offset of its data) of every record."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
    out = []
    at = data.rfind(b"PK\x05\x06")
    central = struct.unpack_from("<L", data, at + 16)[0]
    for info in infos:
        local = info.header_offset
        name_len, extra_len = struct.unpack_from("<2H", data, local + 26)
        out.append((info, central, local + 30 + name_len + extra_len))
        name_len, extra_len, comment_len = struct.unpack_from("<3H", data, central + 28)
        central += 46 + name_len + extra_len + comment_len
    return out


def _with_crc(out: bytearray, info: zipfile.ZipInfo, central: int, start: int) -> bytes:
    """``out`` with the CRC of the record at ``start`` worked out again, in both headers."""
    import zlib

    end = start + info.compress_size
    crc = zlib.crc32(bytes(out[start:end]))
    if info.flag_bits & 8 and out[end : end + 4] == b"PK\x07\x08":
        # torch.save's layout: the CRC in a data descriptor after the data, 0 in the header.
        struct.pack_into("<L", out, end + 4, crc)
    else:
        struct.pack_into("<L", out, info.header_offset + 14, crc)
    struct.pack_into("<L", out, central + 16, crc)
    return bytes(out)


def _pickle(data: bytes) -> tuple[zipfile.ZipInfo, int, int]:
    return next(e for e in _entries(data) if e[0].filename.endswith("data.pkl"))


def _opcode_swap(rng: random.Random, data: bytes, other: bytes) -> bytes:
    info, central, start = _pickle(data)
    body = data[start : start + info.compress_size]
    ops = [
        (pos, bytes([body[pos]]))
        for _, _, pos in pickletools.genops(body)
        if any(body[pos] in group for group in _GROUPS)
    ]
    pos, code = rng.choice(ops)
    group = next(g for g in _GROUPS if code[0] in g)
    out = bytearray(data)
    out[start + pos] = rng.choice([c for c in group if c != code[0]] or [code[0]])
    return _with_crc(out, info, central, start)


def _memo_index(rng: random.Random, data: bytes, other: bytes) -> bytes:
    info, central, start = _pickle(data)
    body = data[start : start + info.compress_size]
    found = [
        (pos, op.name, arg) for op, arg, pos in pickletools.genops(body) if op.name in _MEMO_OPS
    ]
    pos, name, index = rng.choice(found)
    size = _MEMO_OPS[name]
    new = rng.choice((0, 1, index - 1, index + 1, index + 2, 255, rng.randrange(64)))
    new = min(max(new, 0), 255 if size == 1 else 2**32 - 1)
    out = bytearray(data)
    out[start + pos + 1 : start + pos + 1 + size] = new.to_bytes(size, "little")
    return _with_crc(out, info, central, start)


def _record_rename(rng: random.Random, data: bytes, other: bytes) -> bytes:
    entries = _entries(data)
    out = bytearray(data)
    first, second = rng.sample(entries, 2)
    how = rng.choice(("swap", "local", "central", "both"))
    if how == "swap" and len(first[0].filename) == len(second[0].filename):
        for (info, central, _), name in ((first, second[0].filename), (second, first[0].filename)):
            raw = name.encode()
            out[info.header_offset + 30 : info.header_offset + 30 + len(raw)] = raw
            out[central + 46 : central + 46 + len(raw)] = raw
        return bytes(out)
    info, central, _ = first
    name = bytearray(info.filename.encode())
    at = rng.randrange(len(name))
    name[at] = rng.choice(b"0123456789_/.aAzZ")
    if how in ("local", "both"):
        out[info.header_offset + 30 : info.header_offset + 30 + len(name)] = name
    if how in ("central", "both", "swap"):
        out[central + 46 : central + 46 + len(name)] = name
    return bytes(out)


# (offset, format) of each field of a local header and of a central directory entry.
_LOCAL_FIELDS = ((4, "<H"), (6, "<H"), (8, "<H"), (10, "<H"), (12, "<H"), (14, "<L"),
                 (18, "<L"), (22, "<L"), (26, "<H"), (28, "<H"))  # fmt: skip
_CENTRAL_FIELDS = ((4, "<H"), (6, "<H"), (8, "<H"), (10, "<H"), (12, "<H"), (14, "<H"),
                   (16, "<L"), (20, "<L"), (24, "<L"), (28, "<H"), (30, "<H"), (32, "<H"),
                   (34, "<H"), (36, "<H"), (38, "<L"), (42, "<L"))  # fmt: skip


def _header_field(rng: random.Random, data: bytes, other: bytes) -> bytes:
    info, central, _ = rng.choice(_entries(data))
    out = bytearray(data)
    if rng.random() < 0.5:
        base, (offset, fmt) = info.header_offset, rng.choice(_LOCAL_FIELDS)
    else:
        base, (offset, fmt) = central, rng.choice(_CENTRAL_FIELDS)
    value = struct.unpack_from(fmt, out, base + offset)[0]
    top = 2 ** (8 * struct.calcsize(fmt)) - 1
    value = rng.choice(
        (value + 1, value - 1, value ^ 1, value ^ 8, value ^ 0x800, 0, top, value + 64)
    )
    struct.pack_into(fmt, out, base + offset, min(max(value, 0), top))
    return bytes(out)


# (signature, offset, format) of each field of the zip64 end record, its locator and the end
# record, after the signature.
_END_FIELDS = (
    *((b"PK\x06\x06", o, f) for o, f in ((4, "<Q"), (12, "<H"), (14, "<H"), (16, "<L"),
      (20, "<L"), (24, "<Q"), (32, "<Q"), (40, "<Q"), (48, "<Q"))),
    *((b"PK\x06\x07", o, f) for o, f in ((4, "<L"), (8, "<Q"), (16, "<L"))),
    *((b"PK\x05\x06", o, f) for o, f in ((4, "<H"), (6, "<H"), (8, "<H"), (10, "<H"),
      (12, "<L"), (16, "<L"), (20, "<H"))),
)  # fmt: skip


def _end_field(rng: random.Random, data: bytes, other: bytes) -> bytes:
    """One field of the end records changed: a count, a size, an offset, a disk number."""
    signature, offset, fmt = rng.choice(_END_FIELDS)
    base = data.rfind(signature)
    out = bytearray(data)
    value = struct.unpack_from(fmt, out, base + offset)[0]
    top = 2 ** (8 * struct.calcsize(fmt)) - 1
    value = rng.choice((value + 1, value - 1, 0, 1, 2, top, value ^ 1))
    struct.pack_into(fmt, out, base + offset, min(max(value, 0), top))
    return bytes(out)


Mutation = Callable[[random.Random, bytes, bytes], bytes]

WRITER_MUTATIONS = [_opcode_swap, _memo_index, _record_rename, _header_field, _end_field]


# -- out of the writer's grammar, read alike -----------------------------------------------
# Each rewrites data.pkl to what torch reads as it reads the original, but torch.save never
# writes, and puts it back in an archive torch's own writer lays out: ppaux must not call the
# result clean (tests/test_writer_mutations.py).


def _ops(body: bytes) -> list[tuple[str, object, int]]:
    return [(op.name, arg, pos) for op, arg, pos in pickletools.genops(body)]


def _starts(body: bytes) -> dict[int, list[int]]:
    """For each opcode's position, where each value on the stack began before it runs."""
    stack: list[int] = []
    marks: list[int] = []
    out: dict[int, list[int]] = {}
    for op, _, pos in pickletools.genops(body):
        out[pos] = list(stack)
        if op.name == "MARK":
            marks.append(len(stack))
            stack.append(pos)
            continue
        before = [s for s in op.stack_before if s is not pickletools.markobject]
        if pickletools.markobject in op.stack_before:
            at = marks.pop()
            begun = stack[at]
            del stack[at:]
        else:
            count = sum(1 for s in before if s is not pickletools.stackslice)
            begun = stack[-count] if count else pos
            if count:
                del stack[-count:]
        if op.stack_after:
            stack.append(begun)
    return out


def _small_batch(rng: random.Random, body: bytes) -> bytes:
    """One APPEND or SETITEM written as a batch of one (MARK ... APPENDS/SETITEMS), or an empty
    batch after a new dict or list."""
    ops = _ops(body)
    starts = _starts(body)
    fills = [(name, pos) for name, _, pos in ops if name in ("APPEND", "SETITEM")]
    if fills and rng.random() < 0.7:
        name, pos = rng.choice(fills)
        first = starts[pos][-1 if name == "APPEND" else -2]
        closing = b"e" if name == "APPEND" else b"u"
        return body[:first] + b"(" + body[first:pos] + closing + body[pos + 1 :]
    made = [
        (ops[i + 1][2] + _op_len(ops, i + 1, body), name)
        for i, (name, _, _) in enumerate(ops[:-1])
        if name in ("EMPTY_DICT", "EMPTY_LIST") and ops[i + 1][0] in _PUT_NAMES
    ]
    if not made:
        raise ValueError("no new dict or list")
    at, name = rng.choice(made)
    return body[:at] + (b"(u" if name == "EMPTY_DICT" else b"(e") + body[at:]


_PUT_NAMES = ("BINPUT", "LONG_BINPUT", "PUT")


def _op_len(ops: list[tuple[str, object, int]], i: int, body: bytes) -> int:
    return (ops[i + 1][2] if i + 1 < len(ops) else len(body)) - ops[i][2]


def _none_pop(rng: random.Random, body: bytes) -> bytes:
    """NONE POP before a memo GET: the one place the pickler writes POP is before the GET of
    a tuple memoized while its items were written."""
    gets = [pos for name, _, pos in _ops(body) if name in ("BINGET", "LONG_BINGET")]
    if not gets:
        raise ValueError("no memo GET")
    at = rng.choice(gets)
    return body[:at] + b"N0" + body[at:]


def _shared_piece(rng: random.Random, body: bytes) -> bytes:
    """A tensor's backward hooks (``OrderedDict()``) written as a GET of an earlier tensor's,
    its memo entry dropped and every later memo index moved down one."""
    ops = _ops(body)
    made = [  # (index of REDUCE's PUT, its memo index) for each GET-or-GLOBAL, (), REDUCE
        (i + 1, ops[i + 1][1])
        for i in range(2, len(ops) - 1)
        if ops[i][0] == "REDUCE"
        and ops[i - 1][0] == "EMPTY_TUPLE"
        and ops[i + 1][0] == "BINPUT"
        and (ops[i - 2][0] == "BINGET" or ops[i - 3][0] == "GLOBAL")
    ]
    if len(made) < 2:
        raise ValueError("fewer than two tensors' hooks")
    (_, first), (put, dropped) = made[0], rng.choice(made[1:])
    get_at = put - 3  # the BINGET of OrderedDict before EMPTY_TUPLE and REDUCE
    out = bytearray(body[: ops[get_at][2]]) + b"h" + bytes([first])
    for i in range(put + 1, len(ops)):
        name, arg, pos = ops[i]
        raw = body[pos : pos + _op_len(ops, i, body)]
        if name in ("BINPUT", "BINGET") and isinstance(arg, int) and arg > dropped:
            raw = raw[:1] + bytes([arg - 1])
        out += raw
    return bytes(out)


def _in_archive(edit: Callable[[random.Random, bytes], bytes]) -> Mutation:
    """A mutation that applies ``edit`` to data.pkl and writes the records again with torch's
    own zip writer, in torch.save's order (it adds ``version`` and the serialization id)."""

    def mutation(rng: random.Random, data: bytes, other: bytes) -> bytes:
        import torch

        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            prefix = names[0].split("/")[0]
            kept = {n[len(prefix) + 1 :]: archive.read(n) for n in names}
        kept["data.pkl"] = edit(rng, kept["data.pkl"])
        first = ["data.pkl", ".format_version", ".storage_alignment", "byteorder"]
        order = [n for n in first if n in kept]
        order += [n for n in kept if n.startswith("data/")]
        buffer = io.BytesIO()
        with torch.serialization._open_zipfile_writer(buffer) as writer:
            for name in order:
                writer.write_record(name, kept[name], len(kept[name]))
        return buffer.getvalue()

    mutation.__name__ = edit.__name__
    return mutation


#: Edits out of the writer's grammar that torch reads as it reads the file edited.
GRAMMAR_BREAKS = [_in_archive(e) for e in (_small_batch, _none_pop, _shared_piece)]
