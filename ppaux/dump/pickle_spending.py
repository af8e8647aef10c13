"""The bounds a pickle spends while it runs, each charged against :class:`~ppaux.limits.Limits`.

Values created (``items``, which hashing dict keys and set items also spends), opcodes run
(``ops``), bytes copied by allowlisted constructors (``copied``), and the keys that share one hash
value in one dict or set. Nested machines hand ``items``, ``ops`` and ``copied`` on, so a pickle
inside a pickle spends its outer one's budgets (:meth:`PickleSpending.spend_on_from`).
"""

from __future__ import annotations

from typing import Any

from ppaux.dump.pickle_input import PickleInput
from ppaux.errors import LimitExceeded
from ppaux.limits import Limits

__all__ = ["PickleSpending"]

#: Deepest dict key or set item hashed. CPython hashes nested tuples by C recursion (a deep one
#: crashes the process) and compares them with a recursion limit of about 1000.
_MAX_KEY_DEPTH = 500


class PickleSpending(PickleInput):
    """One pickle's input and what running it has spent so far."""

    def __init__(self, data: bytes, *, path: str, limits: Limits, start: int = 0) -> None:
        super().__init__(data, path=path, limits=limits, start=start)
        self.items = 0
        #: Opcodes run, by this machine and the ones it nests (shared as items are).
        self.ops = 0
        #: Bytes copied by allowlisted constructors (bytearray, nested streams, ...).
        self.copied = 0
        #: The torch.save streams this pickle sits inside (0: the file's own pickle).
        self.nesting = 0
        # (id(container), hash) -> distinct keys with that hash: see check_key.
        self._buckets: dict[tuple[int, int], list[Any]] = {}
        self._held: dict[int, Any] = {}

    def spend_on_from(self, other: PickleSpending) -> None:
        """Go on from what ``other`` has spent (values, opcodes, copied bytes): a pickle nested
        in another, or the next pickle of one file, spends the same budgets."""
        self.items, self.ops, self.copied = other.items, other.ops, other.copied

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

    def check_key(self, container: object, key: object) -> None:
        """Make sure that hashing ``key`` into ``container`` (a dict or set) is cheap and safe.

        Python does not cache the hash of tuples or ints, so a memo reference can make it hash a
        huge key again and again: that work is charged to max_items. Deep tuples crash CPython's
        hash, and keys built to share one hash value make every insertion compare with all of
        them: both are refused.
        """
        if isinstance(key, (str, bytes)) or key is None:
            return  # str and bytes hashes are salted per process and cached on the object
        self._charge_hashing(key)
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
        self._bucket(container, digest, key)

    def _charge_hashing(self, key: object) -> None:
        """Charge to max_items the work of hashing ``key`` (refusing one nested too deep)."""
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

    def _bucket(self, container: object, digest: int, key: object) -> None:
        """Put ``key`` among the distinct keys of ``container`` that hash to ``digest``,
        refusing more of them than max_hash_collisions."""
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
