"""What each pickle opcode takes and does, as the writer grammar (:mod:`ppaux.dump.grammar`)
reads them: argument sizes, stack effects, the items a MARK may hold before the opcode that
closes it, and which opcodes fill, create or push a value."""

from __future__ import annotations

#: Private to the grammar (ppaux.dump.grammar imports its tables by name).
__all__: list[str] = []

_BATCH = 1000

# APPEND, SETITEM and BUILD: the pickler writes them only on the value it just created.
_FILLS = frozenset(b"asb")
# EMPTY_DICT, EMPTY_LIST, EMPTY_SET, REDUCE, NEWOBJ, NEWOBJ_EX: values the pickler fills next.
_CREATES = frozenset(b"}]\x8fR\x81\x92")
_FINISHED = (
    "fills a value the pickler had finished (it fills a container or a reduced object only "
    "right after creating it, in batches of 1000, and never one fetched from the memo)"
)
# The fewest items of a batch the pickler writes between MARK and APPENDS, SETITEMS (pairs) or
# ADDITEMS on a value just created; fewer come only after a full batch (Modules/_pickle.c:
# batch_list and batch_dict write one item as APPEND, SETITEM, batch_list_exact and
# batch_dict_exact too where it is the only one, and an empty dict, list or set gets no batch;
# batch_dict_exact and batch_set end a run of exactly 1000 with an empty batch).
_FRESH_LEAST = {0x65: 2, 0x75: 2, 0x90: 1}
_SMALL_BATCH = {
    0x65: "a batch of 1 item, which the pickler writes as APPEND",
    0x75: "a batch of fewer than 2 pairs, which the pickler writes as SETITEM or not at all",
    0x90: "an empty batch, which the pickler writes only after one of 1000 items",
}
_FRAME_TARGET = 64 * 1024
_LARGE = {0x58: 4, 0x8D: 8, 0x42: 4, 0x8E: 8, 0x96: 8}


def _op_size(data: bytes, start: int) -> int:
    """Bytes of the opcode at ``start`` (at least 1; the scan checks the rest)."""
    op = data[start]
    arg = _ARG_LEN.get(op, 0)
    if op == 0x63:
        second = data.find(b"\n", data.find(b"\n", start) + 1)
        return max(second + 1 - start, 1)
    if arg >= 0:
        return 1 + arg
    return 1 - arg + int.from_bytes(data[start + 1 : start + 1 - arg], "little")


def _payload_size(data: bytes, pos: int, op: int) -> int:
    size_len = _LARGE[op]
    return int.from_bytes(data[pos : pos + size_len], "little")


# Argument sizes: positive = fixed, negative = a little-endian length of that many bytes.
_ARG_LEN = {
    0x80: 1,
    0x95: 8,
    0x71: 1,
    0x72: 4,
    0x68: 1,
    0x6A: 4,
    0x4A: 4,
    0x4B: 1,
    0x4D: 2,
    0x47: 8,
    0x8A: -1,
    0x8B: -4,
    0x58: -4,
    0x8C: -1,
    0x8D: -8,
    0x42: -4,
    0x43: -1,
    0x8E: -8,
    0x96: -8,
}
_TO_MARK = frozenset(b"teu\x90\x911")
# (least, most, wording) items between MARK and the opcode that closes it.
_MARK_ITEMS = {
    0x74: (4, 2**62, "4 or more (fewer have their own opcodes)"),
    # A list's last batch may hold one item, a dict's and a set's none (after a batch of
    # exactly 1000: Modules/_pickle.c, batch_list_exact, batch_dict_exact, batch_set).
    0x65: (1, _BATCH, "1 to 1000"),
    0x75: (0, 2 * _BATCH, "up to 1000 pairs"),
    0x90: (0, _BATCH, "up to 1000"),
    0x91: (0, 2**62, "any number"),
    0x31: (0, 2**62, "any number"),
}
# Below protocol 2 every tuple but the empty one is written between MARK and TUPLE.
_TUPLE_P1 = (1, 2**62, "1 or more (the empty tuple has its own opcode)")
_MARK_PUSH = {0x74: 1, 0x65: 0, 0x75: 0, 0x90: 0, 0x91: 1, 0x31: 0}
# (pops, pushes) of the other opcodes; those not listed push one value.
_EFFECT = {
    0x80: (0, 0),
    0x71: (0, 0),
    0x72: (0, 0),
    0x94: (0, 0),
    0x85: (1, 1),
    0x86: (2, 1),
    0x87: (3, 1),
    0x52: (2, 1),
    0x81: (2, 1),
    0x92: (3, 1),
    0x62: (1, 0),
    0x51: (1, 1),
    0x61: (1, 0),
    0x73: (2, 0),
    0x30: (1, 0),
    0x93: (2, 1),
}

# What stack() does for these two sets is fixed: push one value that takes nothing more, or
# nothing at all (PROTO and the memo PUTs).
_PUSHES_ONE = frozenset(
    op
    for op in range(256)
    if op not in _EFFECT and op not in _TO_MARK and op not in _CREATES and op != 0x28
)
_NO_EFFECT = frozenset(op for op, effect in _EFFECT.items() if effect == (0, 0))

#: GLOBAL (two lines), INT and LONG (one line): arguments that end at a newline.
_LINE_OPS = frozenset(b"cIL")
