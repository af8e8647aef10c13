"""The pickle machine's state and the steps every opcode is made of.

The state: the input and the position in it, the stack and its marks, the memo, the bounds spent
(items, opcodes, bytes copied, hash work), and what the pickle showed of its writer. The steps:
reading bytes and lines, pushing and popping, marks, memo entries, and charging each against
:class:`~ppaux.limits.Limits`. :mod:`ppaux.dump.pickle_vm` runs the opcodes on it.
"""

from __future__ import annotations

import struct
from typing import Any

from ppaux.errors import DumpError, LimitExceeded
from ppaux.limits import Limits

__all__ = ["PickleState"]

#: Deepest dict key or set item hashed. CPython hashes nested tuples by C recursion (a deep one
#: crashes the process) and compares them with a recursion limit of about 1000.
_MAX_KEY_DEPTH = 500


class PickleState:
    """One pickle's state while it runs from ``data[start:]``, and the steps that change it."""

    def __init__(self, data: bytes, *, path: str, limits: Limits, start: int = 0) -> None:
        self.data = data
        self.path = path
        self.limits = limits
        self.pos = start
        self.stack: list[Any] = []
        self.metastack: list[list[Any]] = []
        self.memo: dict[int, Any] = {}
        self.items = 0
        #: Opcodes run, by this machine and the ones it nests (shared as items are).
        self.ops = 0
        self.globals_seen: dict[str, bool] = {}
        #: Every storage-backed tensor the pickle builds, kept or not: torch.load builds (and
        #: may fail on) each one, even those a later entry replaces.
        self.tensors_built: list[Any] = []
        self.protocol = 0
        #: Where the opcode being run starts: errors and deviations name that byte.
        self.op_pos = start
        #: Bytes copied by allowlisted constructors (bytearray, nested streams, ...).
        self.copied = 0
        # (id(container), hash) -> distinct keys with that hash: see check_key.
        self._buckets: dict[tuple[int, int], list[Any]] = {}
        self._held: dict[int, Any] = {}
        #: The first value the pickle builds that torch.save never writes (where, what, severe):
        #: see :mod:`ppaux.dump.grammar`.
        self.deviation: tuple[str, str, bool] | None = None
        #: ids of the dicts made by collections.OrderedDict (BUILD may set their attributes).
        self.ordered_dicts: set[int] = set()
        #: The OrderedDicts built as torch.save writes backward hooks (GLOBAL, EMPTY_TUPLE,
        #: REDUCE), by id; held so that no id is reused.
        self.torch_hooks: dict[int, Any] = {}
        #: (offset, hooks) of each tensor rebuilt with such hooks: torch keeps the dict itself,
        #: so one filled later in the pickle gives the tensor hooks (checked at STOP).
        self.hooks_given: list[tuple[int, Any]] = []
        #: Whether the pickle wanted bytes past the end of ``data`` (a cut pickle).
        self.ran_out = False

    # -- the writer's model ------------------------------------------------------------------
    def deviate(self, what: str, severe: bool = True) -> None:
        """Record (once, the first) a value that torch.save's pickler never writes."""
        if self.deviation is None:
            self.deviation = (f"byte {self.op_pos}", what, severe)

    # -- errors and limits -------------------------------------------------------------------
    def error(self, reason: str) -> DumpError:
        """A DumpError that names the byte offset of the opcode being run."""
        return DumpError(self.path, f"malformed pickle at byte {self.op_pos}: {reason}")

    def _count(self, n: int = 1) -> None:
        self.items += n
        if self.items > self.limits.max_items:
            raise LimitExceeded(
                self.path,
                "max_items",
                self.limits.max_items,
                "the pickle creates too many values",
            )

    def charge_items(self, n: int) -> None:
        """Account for ``n`` values an allowlisted call creates by copying a container."""
        self._count(n)

    def charge_bytes(self, n: int) -> None:
        """Account for ``n`` bytes an allowlisted call copies; a memo reference costs a few bytes
        of pickle but may be copied again and again, so all copies share max_pickle_bytes."""
        self.copied += n
        if self.copied > self.limits.max_pickle_bytes:
            raise LimitExceeded(
                self.path,
                "max_pickle_bytes",
                self.limits.max_pickle_bytes,
                "the pickle's values copy more bytes than that",
            )

    def check_key(self, container: Any, key: Any) -> None:
        """Make sure that hashing ``key`` into ``container`` (a dict or set) is cheap and safe.

        Python does not cache the hash of tuples or ints, so a memo reference can make it hash a
        huge key again and again: that work is charged to max_items. Deep tuples crash CPython's
        hash, and keys built to share one hash value make every insertion compare with all of
        them: both are refused.
        """
        if isinstance(key, (str, bytes)) or key is None:
            return  # str and bytes hashes are salted per process and cached on the object
        cost = 0
        stack = [(key, 0)]
        while stack:
            value, depth = stack.pop()
            if isinstance(value, (tuple, frozenset)):
                # Comparing two equal keys recurses through both (a frozenset's hash is cached,
                # its comparison is not): deep ones raise RecursionError.
                if depth >= _MAX_KEY_DEPTH:
                    raise self.error(
                        f"a dict key or set item nests more than {_MAX_KEY_DEPTH} tuples or "
                        "frozensets deep"
                    )
                cost += len(value)
                stack.extend((v, depth + 1) for v in value)
            elif isinstance(value, int):
                cost += value.bit_length() >> 6
            if self.items + cost > self.limits.max_items:
                raise LimitExceeded(
                    self.path,
                    "max_items",
                    self.limits.max_items,
                    "hashing the pickle's dict keys and set items takes too much work",
                )
        self.items += cost
        # Small ints hash to themselves and floats collide a few times at most; strings and the
        # reader's own objects hash unpredictably. Only these keys can be made to collide at will.
        if not (
            isinstance(key, (tuple, frozenset, complex))
            or (type(key) is int and key.bit_length() > 60)
        ):
            return
        try:
            digest = hash(key)
        except TypeError:
            return  # the caller reports the unhashable key
        self._held[id(container)] = container  # keeps the id from being reused meanwhile
        slot = (id(container), digest)
        held = self._buckets.get(slot)
        if held is None:
            self._buckets[slot] = [key]
        elif not any(k is key or k == key for k in held):
            held.append(key)
            if len(held) > self.limits.max_hash_collisions:
                raise LimitExceeded(
                    self.path,
                    "max_hash_collisions",
                    self.limits.max_hash_collisions,
                    f"malformed pickle at byte {self.op_pos}: more than "
                    f"{self.limits.max_hash_collisions} distinct dict keys or set items share one "
                    "hash value (keys chosen to collide)",
                )

    # -- the steps of every opcode: reading, the stack and its marks, the memo ------------
    def read(self, n: int) -> bytes:
        """The next ``n`` bytes of the pickle (a cut pickle raises, noting that it ran out)."""
        end = self.pos + n
        if n < 0 or end > len(self.data):
            self.ran_out = n >= 0
            raise DumpError(
                self.path,
                f"truncated pickle: {n} bytes wanted at byte {self.pos}, "
                f"{max(len(self.data) - self.pos, 0)} left",
            )
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def readline(self) -> bytes:
        """The next line of a text opcode, without its newline."""
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            self.ran_out = True
            raise DumpError(self.path, f"truncated pickle: line at byte {self.pos} never ends")
        line = self.data[self.pos : end]
        self.pos = end + 1
        return line

    def unpack(self, n: int, fmt: str) -> int:
        """The next ``n`` bytes read as the one integer ``fmt`` (a struct format) packs."""
        value: int = struct.unpack(fmt, self.read(n))[0]
        return value

    def push(self, value: Any) -> None:
        """Push ``value``, counted against max_items."""
        self._count()
        self.stack.append(value)

    def pop(self) -> Any:
        """Pop the top of the stack."""
        if not self.stack:
            raise self.error("stack underflow")
        return self.stack.pop()

    def top(self) -> Any:
        """The top of the stack, left on it."""
        if not self.stack:
            raise self.error("stack underflow")
        return self.stack[-1]

    def mark(self) -> None:
        """Open a mark: a new stack, the old one kept under it (bounded by max_depth)."""
        if len(self.metastack) >= self.limits.max_depth:
            raise LimitExceeded(
                self.path, "max_depth", self.limits.max_depth, "the pickle nests too deeply"
            )
        self.metastack.append(self.stack)
        self.stack = []

    def pop_mark(self) -> list[Any]:
        """Close the last mark: the items pushed since it, and the stack under it back."""
        if not self.metastack:
            raise self.error("no mark to pop")
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def memo_put(self, index: int) -> None:
        """Store the top of the stack as memo entry ``index`` (bounded by max_memo)."""
        if index not in self.memo and len(self.memo) >= self.limits.max_memo:
            raise LimitExceeded(
                self.path,
                "max_memo",
                self.limits.max_memo,
                "the pickle stores too many memo entries",
            )
        self.memo[index] = self.top()

    def memo_get(self, index: int) -> None:
        """Push memo entry ``index``."""
        try:
            value = self.memo[index]
        except KeyError:
            raise self.error(f"memo entry {index} was never stored") from None
        self.push(value)
