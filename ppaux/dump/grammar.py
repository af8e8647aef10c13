"""What ``pickle.dump`` writes in ``torch.save``'s ``data.pkl``, as data, and the first place a
pickle leaves it (the zip archive around it is :mod:`ppaux.dump.zip_grammar`).

A file is described as clean only when every byte is one its writer could have produced. The
model is derived from the writers, not from torch's reader:

``torch.save`` (torch/serialization.py ``_save``, torch 2.13.0 and 2.14.1) pickles the object
with ``pickle.Pickler`` at its ``pickle_protocol`` (2 unless given; 1 to 5 are modelled, 0 is
not: its text opcodes are read otherwise by other readers, and torch.load refuses its persistent
ids), with a ``persistent_id`` that returns ``('storage', <torch.XStorage>, key, location,
numel)``, the key being ``str(len(id_map))`` when a storage is first met (so '0', '1', ... in
order of first use). CPython's C pickler (Modules/_pickle.c, Python 3.10 - 3.13; Lib/pickle.py's
``Pickler`` is its model) writes ``PROTO`` (from protocol 2), at protocol 4 and later a
``FRAME``, then only the opcodes of :data:`OPCODES` for that protocol; memoizes every container,
string, global and reduced object right after writing it, at the next memo index (``BINPUT``
under 256, else ``LONG_BINPUT``; ``MEMOIZE`` from protocol 4); writes ints in their shortest
form; tuples of 0 to 3 items with their own opcodes; list, dict and set items in batches of at
most 1000; and nothing after ``STOP``.

:func:`pickle_deviation` returns the first :class:`Deviation` (where, what, and whether
torch's reading could differ), or None when the bytes are as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ppaux.dump.grammar_args import CHECKED, check_arg, names_read_otherwise
from ppaux.dump.grammar_opcodes import (
    _ARG_LEN,
    _BATCH,
    _CREATES,
    _EFFECT,
    _FILLS,
    _FINISHED,
    _FRAME_TARGET,
    _FRESH_LEAST,
    _LARGE,
    _LINE_OPS,
    _MARK_ITEMS,
    _MARK_PUSH,
    _NO_EFFECT,
    _PUSHES_ONE,
    _SMALL_BATCH,
    _TO_MARK,
    _TUPLE_P1,
    _op_size,
    _payload_size,
)

__all__ = [
    "OPCODES",
    "TORCH_PROTOCOL",
    "Deviation",
    "past_protocols",
    "pickle_deviation",
]

#: The protocol torch.save pickles data.pkl with unless given another ``pickle_protocol``.
TORCH_PROTOCOL = 2

_P2 = frozenset(b"\x80.(}])\x85\x86\x87tqrhjXcRb\x81QKMJ\x8a\x8bGN\x88\x89aeus01")
# Protocol 1: no PROTO, tuples of any size between MARK and TUPLE, a bool as the text INT
# 'I00' or 'I01', an int past 32 bits as the text LONG '<digits>L'.
_P1 = (_P2 - frozenset(b"\x80\x85\x86\x87\x81\x8a\x8b\x88\x89")) | frozenset(b"IL")
_P3 = _P2 | frozenset(b"BC")
_P4 = (_P3 - frozenset(b"qrc")) | frozenset(b"\x95\x94\x8c\x8d\x8e\x93\x8f\x90\x91\x92")
#: The opcodes CPython's pickler writes at each protocol (pickletools names them).
OPCODES: dict[int, frozenset[int]] = {1: _P1, 2: _P2, 3: _P3, 4: _P4, 5: _P4 | {0x96}}

# The binary opcodes of any protocol (all but the text ones of protocols 0 and 1).
_BINARY = OPCODES[5] | frozenset(b"}]qrhjXKMJGNBC")
# Opcodes that create a value the pickler memoizes at once.
_MEMOIZED = frozenset(b"}]X\x8c\x8dBC\x8e\x96c\x93\x85\x86\x87tR\x81\x92\x8f\x91")
_PUTS = frozenset(b"qr\x94")
# Opcodes that build an object from a callable and arguments (REDUCE, NEWOBJ, NEWOBJ_EX).
_BUILT = frozenset(b"R\x81\x92")
# The opcodes value() has anything to check or note for: any other skips it.
_VALUED = CHECKED | _MEMOIZED | _PUTS | {0x63}
# Opcodes whose order the scan checks even when nothing is pending: PUTs, POP and POP_MARK.
# Opcodes order() looks at even where allowed: memo PUTs, POPs and PROTO (written once, first).
_ORDERED = _PUTS | frozenset(b"01\x80")
_NAMES = {
    0x28: "MARK",
    0x2E: "STOP",
    0x80: "PROTO",
    0x95: "FRAME",
    0x61: "APPEND",
    0x65: "APPENDS",
    0x73: "SETITEM",
    0x75: "SETITEMS",
    0x90: "ADDITEMS",
    0x74: "TUPLE",
    0x91: "FROZENSET",
}


@dataclass(frozen=True)
class Deviation:
    """The first place a file differs from what its writer writes.

    ``where`` names the place (``data.pkl byte 12 (INT)``, ``record 'archive/byteorder'``);
    ``severe`` is True when torch's reading could differ from ppaux's (or torch may refuse).
    """

    where: str
    what: str
    severe: bool

    def text(self) -> str:
        return f"{self.where}: {self.what}"


def _opname(op: int) -> str:
    import pickletools

    for code in pickletools.opcodes:
        if ord(code.code.encode("latin-1")) == op:
            return code.name
    return _NAMES.get(op, f"0x{op:02x}")


#: The opcodes of no argument whose every step is the common one: allowed, pushing one value
#: that takes nothing more, nothing for value() or order() to look at.
_SIMPLE = frozenset(
    op
    for op in _PUSHES_ONE & (OPCODES[1] | OPCODES[5])
    if op not in _ARG_LEN
    and op not in _LINE_OPS
    and op not in _VALUED
    and op not in _ORDERED
    and op not in (0x95, 0x2E)
)
_SIMPLE_BY_PROTOCOL: dict[int, tuple[frozenset[int], re.Pattern[bytes]]] = {}


def _simple(protocol: int) -> tuple[frozenset[int], re.Pattern[bytes]]:
    """The simple opcodes of ``protocol`` and a pattern for a run of them."""
    if protocol not in _SIMPLE_BY_PROTOCOL:
        ops = _SIMPLE & OPCODES[protocol]
        run = re.compile(b"[" + re.escape(bytes(sorted(ops))) + b"]+")
        _SIMPLE_BY_PROTOCOL[protocol] = (ops, run)
    return _SIMPLE_BY_PROTOCOL[protocol]


def past_protocols(protocol: int) -> str:
    """What a PROTO past CPython's newest (5) does to torch.load, in words."""
    return (
        f"pickle protocol {protocol}, past the newest (5): torch.load's default "
        "(weights_only=True) reads on with a warning, torch.load(weights_only=False) refuses "
        f"the file ('unsupported pickle protocol: {protocol}')"
    )


def pickle_deviation(
    data: bytes, protocols: tuple[int, ...] = (TORCH_PROTOCOL,), label: str = "data.pkl"
) -> Deviation | None:
    """The first place ``data`` differs from what CPython's pickler writes at one of
    ``protocols``, or None. Runs in one pass, without building any value."""
    end = len(data)
    if end >= 1 and data[0] != 0x80 and 1 in protocols:
        return _Scan(data, label, 1, 0).run()  # the pickler writes PROTO from protocol 2 only
    if end < 2 or data[0] != 0x80:
        return Deviation(f"{label} byte 0", "the pickle does not start with PROTO", True)
    protocol = data[1]
    where = f"{label} byte 0 (PROTO)"
    if protocol < 2 and protocol in protocols:
        return Deviation(where, f"the pickler writes no PROTO at protocol {protocol}", False)
    if protocol > 5:
        return Deviation(where, past_protocols(protocol), True)
    if protocol not in protocols:
        wanted = " or ".join(str(p) for p in protocols)
        return Deviation(where, f"protocol {protocol}, where the writer uses {wanted}", False)
    return _Scan(data, label, protocol, 2).run()


class _Scan:
    """One pass over a pickle against the writer's rules: the state the pickler's output
    keeps (frame, memo, marks, stack depth) and one method per step each opcode goes through,
    in order (:meth:`run`); each returns the first :class:`Deviation` it finds, or None."""

    def __init__(self, data: bytes, label: str, protocol: int, pos: int) -> None:
        self.data, self.end, self.label = data, len(data), label
        self.protocol, self.allowed, self.pos = protocol, OPCODES[protocol], pos
        self.puts = 0
        self.frame_end: int | None = None
        self.frame_length = 0
        self.unframed = 0
        self.depth = 0  # values on the stack above the innermost mark
        self.marks: list[int] = []
        self.pending_memo: tuple[int, int] | None = None  # (offset, op) of a value to memoize
        self.globals_seen: set[bytes] = set()
        self.popped = 0  # POPs just written; -1 after POP_MARK
        self.pop_floor = 0  # the memo count when the first value POP discards was begun
        # Per stack value, what the pickler may still write on it (the low 2 bits: 3 items
        # after a full batch, 2 items (a container or a reduced object just created), 1 only
        # BUILD, 0 nothing) and, above them, the memo count when the value was begun.
        self.open_: list[int] = []

    def at(self, offset: int, op: int, what: str, severe: bool = True) -> Deviation:
        return Deviation(f"{self.label} byte {offset} ({_opname(op)})", what, severe)

    def run(self) -> Deviation | None:
        data, end, framed, allowed = self.data, self.end, self.protocol >= 4, self.allowed
        simple, simple_run = _simple(self.protocol)
        open_ = self.open_
        while self.pos < end:
            start = self.pos
            op = data[start]
            self.pos += 1
            found = self.framing(start, op) if framed else None
            if found is not None:
                return found
            if op in simple and not self.popped and self.pending_memo is None:
                # A one-byte constant (NONE, EMPTY_TUPLE, a bool): a value pushed, nothing
                # created, no argument; outside frames a run of them is taken at once.
                pos = start + 1
                if not framed and pos < end and data[pos] in simple:
                    run = simple_run.match(data, pos)
                    pos = run.end() if run is not None else pos
                self.depth += pos - start
                open_.extend([self.puts << 2] * (pos - start))
                self.pos = pos
                continue
            # order() has nothing to say about an allowed opcode in the common case.
            if op not in allowed or self.popped or self.pending_memo is not None or op in _ORDERED:
                found = self.order(start, op)
                if found is not None:
                    return found
            # A fixed-size argument inside the pickle and its frame is read here; any other
            # goes through argument(), which also says where it runs past.
            size = _ARG_LEN.get(op, 0)
            stop = self.pos + size
            if (
                size >= 0
                and op not in _LINE_OPS
                and stop <= end
                and (self.frame_end is None or stop <= self.frame_end)
            ):
                payload = data[self.pos : stop]
                self.pos = stop
            else:
                read = self.argument(start, op)
                if isinstance(read, Deviation):
                    return read
                payload = read
            if op == 0x95:
                found = self.frame(start, op, payload)
            elif op == 0x2E:  # STOP
                return self.stop(start, op)
            else:
                found = self.value(start, op, payload) if op in _VALUED else None
                if found is None:
                    if op in _PUSHES_ONE:  # stack()'s common case, inline
                        self.depth += 1
                        self.open_.append(self.puts << 2)
                    elif op not in _NO_EFFECT:
                        found = self.stack(start, op)
            if found is not None:
                return found
        return Deviation(f"{self.label} byte {self.end}", "the pickle ends without STOP", True)

    def framing(self, start: int, op: int) -> Deviation | None:
        """From protocol 4 the pickler frames everything but a payload of 64 KiB or more, and
        a run of under 4 bytes at the start or after such a payload (a frame that small is
        not written)."""
        if self.frame_end is not None and start == self.frame_end:
            self.frame_end = None
            # The pickler ends a frame at 64 KiB, before a large payload, or at the end.
            if self.frame_length < _FRAME_TARGET and not self.large(op):
                why = f"a FRAME of {self.frame_length} bytes ends before 64 KiB"
                return self.at(start, op, why, False)
        if self.protocol < 4 or self.frame_end is not None or op == 0x95:
            return None
        if self.large(op):
            self.unframed = 0
            return None
        if self.unframed >= 0:
            self.unframed += _op_size(self.data, start)
        if self.unframed < 0 or self.unframed >= 4:
            return self.at(start, op, "outside any FRAME, where the pickler frames it", False)
        return None

    def large(self, op: int) -> bool:
        """Whether the opcode's payload is one the pickler writes outside any frame."""
        return op in _LARGE and _payload_size(self.data, self.pos, op) >= _FRAME_TARGET

    def order(self, start: int, op: int) -> Deviation | None:
        """Whether the pickler writes this opcode here: one of its protocol's, a POP only
        before the GET of a recursive tuple, a memo PUT right after the value it memoizes."""
        if op not in self.allowed:
            # A text opcode (protocols 0 and 1) is read otherwise by other readers (INT '010'
            # is 8 to the C unpickler); a binary one of another protocol reads the same.
            unmodelled = " (protocol 0 is not modelled)" if self.protocol == 1 else ""
            return self.at(
                start,
                op,
                f"an opcode CPython's pickler never writes at protocol {self.protocol}{unmodelled}",
                op not in _BINARY,
            )
        if self.popped and op != 0x95:
            # POP and POP_MARK only discard the items of a tuple found in the memo after
            # saving them (a recursive tuple); the pickler then writes that tuple's GET.
            if op == 0x30 and 0 < self.popped < 3:
                self.popped += 1
                self.pop_floor = min(self.pop_floor, self.open_[-1] >> 2) if self.open_ else 0
            elif op in (0x68, 0x6A):
                self.popped = 0
                return self.recursive_get(start, op)
            else:
                return self.at(
                    start, op, "POP or POP_MARK not followed by the GET the pickler writes", True
                )
        elif op in (0x30, 0x31):
            self.popped = 1 if op == 0x30 else -1
            # The first value the POPs discard (POP_MARK: the MARK's) was begun at this count.
            lowest = len(self.open_) - (1 if op == 0x30 else self.depth)
            self.pop_floor = self.open_[lowest] >> 2 if 0 <= lowest < len(self.open_) else self.puts
            if op == 0x30 and self.pending_memo is not None and self.pending_memo[1] in _BUILT:
                # save_reduce: an object its own arguments refer to was memoized while they
                # were written; the pickler discards the one just built and GETs that one.
                self.pending_memo, self.popped = None, 3
        if op == 0x80:
            return self.second_proto(start, op)
        if self.pending_memo is not None and op not in _PUTS and op != 0x95:
            offset, memoized = self.pending_memo
            return self.at(
                offset, memoized, "a value the pickler memoizes at once is not memoized", False
            )
        if op in _PUTS:
            if self.pending_memo is None:
                return self.at(start, op, "a memo entry the pickler would not write here", False)
            self.pending_memo = None
        return None

    def recursive_get(self, start: int, op: int) -> Deviation | None:
        """The GET after POPs fetches the tuple memoized while its items were written, so
        its memo index is at least the count when the first discarded value was begun."""
        size = 1 if op == 0x68 else 4
        index = int.from_bytes(self.data[start + 1 : start + 1 + size], "little")
        if index < self.pop_floor:
            return self.at(
                start,
                op,
                f"POPs discard values begun after memo entry {index} was written, so this GET "
                "is not of a tuple memoized while they were (the one place the pickler writes "
                "POP)",
            )
        return None

    def second_proto(self, start: int, op: int) -> Deviation:
        """The pickler writes PROTO once, first. Another names a protocol the unpickler then
        reads by: one past 5 makes torch.load(weights_only=False) refuse; one on the other side
        of 3 changes how CPython's unpickler maps Python 2 module names, which matters where
        such a name follows; otherwise both of torch.load's readers read on as before."""
        number = self.data[start + 1] if start + 1 < self.end else self.protocol
        if number > 5:
            return self.at(start, op, f"a second PROTO: {past_protocols(number)}")
        if names_read_otherwise(self.data, start, self.protocol, number):
            return self.at(
                start,
                op,
                f"a second PROTO ({number}), where the pickler writes one, first: a module "
                "named after it is one CPython's unpickler renames only below protocol 3 "
                f"(torch.load(weights_only=False) now reads it {'un' if number >= 3 else ''}"
                "renamed, the default reader renamed)",
            )
        return self.at(
            start,
            op,
            f"a second PROTO ({number}), where the pickler writes one, first; both of "
            "torch.load's readers read on as before",
            False,
        )

    def argument(self, start: int, op: int) -> bytes | Deviation:
        """The opcode's argument, read past; a Deviation where it runs past the pickle or its
        FRAME."""
        data, pos, end = self.data, self.pos, self.end
        arg_len = _ARG_LEN.get(op, 0)
        if arg_len < 0:  # a length-prefixed argument
            if pos - arg_len > end:
                return self.at(start, op, "the pickle ends inside the opcode")
            size = int.from_bytes(data[pos : pos - arg_len], "little")
            pos -= arg_len
            stop = pos + size
        elif op in (0x63, 0x49, 0x4C):  # GLOBAL: two lines; INT, LONG (protocol 1): one
            stop = data.find(b"\n", pos)
            if op == 0x63 and stop >= 0:
                stop = data.find(b"\n", stop + 1)
            if stop < 0:
                return self.at(start, op, "the pickle ends inside the opcode")
        else:
            stop = pos + arg_len
        if stop > end:
            return self.at(start, op, "the pickle ends inside the opcode")
        payload = data[pos:stop]
        self.pos = stop + 1 if op in (0x63, 0x49, 0x4C) else stop
        if self.frame_end is not None and self.pos > self.frame_end:
            return self.at(start, op, "the opcode runs past the end of its FRAME")
        return payload

    def frame(self, start: int, op: int, payload: bytes) -> Deviation | None:
        self.unframed = -1  # from here, only a large payload resets the count
        if self.frame_end is not None:
            return self.at(start, op, "a FRAME starts inside another")
        length = int.from_bytes(payload, "little")
        if length == 0 or self.pos + length > self.end:
            return self.at(start, op, f"the FRAME's length {length} does not fit the pickle")
        self.frame_end = self.pos + length
        self.frame_length = length
        return None

    def stop(self, start: int, op: int) -> Deviation | None:
        if self.depth != 1 or self.marks:
            return self.at(start, op, "STOP leaves more than one value on the stack")
        if self.pos != self.end:
            return self.at(start, op, f"{self.end - self.pos} bytes follow STOP")
        if self.frame_end is not None and self.frame_end != self.pos:
            return self.at(start, op, "the FRAME's length runs past STOP")
        return None

    def value(self, start: int, op: int, payload: bytes) -> Deviation | None:
        """The argument as the pickler writes it, a global written once, the memo's count."""
        if op in CHECKED:
            problem = check_arg(op, payload, self.protocol, self.puts)
            if problem is not None:
                return self.at(start, op, problem[0], problem[1])
        if op == 0x63:
            if payload in self.globals_seen:
                return self.at(start, op, "a global the pickler memoized is written again", False)
            self.globals_seen.add(payload)
        if op in _PUTS:
            self.puts += 1
        if op in _MEMOIZED:
            self.pending_memo = (start, op)
        return None

    def stack(self, start: int, op: int) -> Deviation | None:
        """Stack effects, counted above the innermost mark, and what each value may still
        take."""
        if op == 0x28:
            self.marks.append(self.depth)
            self.depth = 0
            return None
        if op in _TO_MARK:
            return self.close_mark(start, op)
        open_ = self.open_
        pops, pushes = _EFFECT.get(op, (0, 1))
        if self.depth < pops:
            return self.at(start, op, "the stack holds too few values for the opcode")
        if op in _FILLS:
            if self.depth <= pops:
                return self.at(start, op, "no container under the values it adds")
            under = open_[-1 - pops]
            if under & 3 < (1 if op == 0x62 else 2):
                return self.at(start, op, _FINISHED)
            open_[-1 - pops] = under & ~3 | (0 if op == 0x62 else 1)
        self.depth += pushes - pops
        # A value made from others was begun with the first of them.
        begun = open_[-pops] & ~3 if pops else self.puts << 2
        if pops:
            del open_[-pops:]
        if pushes:  # one value at most
            open_.append(begun | (2 if op in _CREATES else 0))
        return None

    def close_mark(self, start: int, op: int) -> Deviation | None:
        """TUPLE, APPENDS, SETITEMS, ADDITEMS, FROZENSET, POP_MARK: the items since the MARK."""
        if not self.marks:
            return self.at(start, op, "no MARK to close")
        n = self.depth
        limits = _MARK_ITEMS[op] if op != 0x74 or self.protocol > 1 else _TUPLE_P1
        if not limits[0] <= n <= limits[1] or (op == 0x75 and n % 2):
            return self.at(start, op, f"{n} items where the pickler writes {limits[2]}", False)
        self.depth = self.marks.pop() + _MARK_PUSH[op]
        if op in (0x65, 0x75, 0x90) and self.depth < 1:
            return self.at(start, op, "no container under the MARK")
        open_ = self.open_
        begun = open_[len(open_) - n] & ~3 if n else self.puts << 2
        del open_[len(open_) - n :]
        if op in (0x65, 0x75, 0x90):
            state = open_[-1] & 3
            if state < 2:
                return self.at(start, op, _FINISHED)
            items = n // 2 if op == 0x75 else n
            if items < _FRESH_LEAST[op] and state != 3:
                return self.at(start, op, _SMALL_BATCH[op], False)
            full = items == _BATCH
            open_[-1] = open_[-1] & ~3 | (3 if full else 1)
        elif _MARK_PUSH[op]:
            open_.append(begun)
        return None
