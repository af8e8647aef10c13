"""The structure of one dump as the reader found it (:class:`Dump`), and what both of its
readers (a plain pickle, :mod:`ppaux.dump.dumpfile`; a torch.save zip, :mod:`ppaux.dump.zipdump`)
take from the pickle machine once it has run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ppaux.dump.capture_format import CAPTURE_MARKER
from ppaux.dump.grammar import Deviation
from ppaux.dump.model import StorageRef
from ppaux.dump.pickle_vm import Machine
from ppaux.errors import DumpError, LimitExceeded, NotAsWritten, ReadMismatch

__all__ = ["Dump", "failed_after_calls", "machine_deviation", "unsafe_globals"]


@dataclass
class Dump:
    """The structure of one file, as stand-ins (see :mod:`ppaux.dump.model`).

    ``container`` is 'zip', 'legacy' (torch.save's non-zip format) or 'pickle';
    ``record_prefix`` is the zip's record folder (the saved file's stem, or 'archive');
    ``globals_seen`` maps each global the pickle named to whether it is allowlisted; ``storages``
    lists every storage record the pickle refers to (a legacy file's with their bytes).
    """

    path: str
    container: str
    root: Any
    size: int
    record_prefix: str | None = None
    globals_seen: dict[str, bool] = field(default_factory=dict)
    storages: list[StorageRef] = field(default_factory=list)
    pickle_bytes: int = 0
    protocol: int = 0
    #: The first place the file differs from what torch.save (or pickle.dump) writes.
    deviation: Deviation | None = None
    #: The storage records whose CRC was not checked (past ``Limits.max_crc_bytes``): how
    #: many, and their bytes in all.
    crc_unchecked: tuple[int, int] = (0, 0)
    #: Works out :attr:`weights_only_refusal` (a walk of the pickle), once, when first asked:
    #: replay and tensorize never ask.
    weights_only_check: Callable[[], str | None] | None = field(default=None, repr=False)
    _weights_only_found: str | None = field(default=None, init=False, repr=False)

    @property
    def weights_only_refusal(self) -> str | None:
        """Why torch.load's default (weights_only=True) refuses the file's pickle, with its
        byte offset; None where it refuses nothing (and for a plain pickle, which torch.load
        never reads as a torch.save file)."""
        if self.weights_only_check is not None:
            self._weights_only_found = self.weights_only_check()
            self.weights_only_check = None
        return self._weights_only_found

    @property
    def capture(self) -> dict[str, Any] | None:
        """The ppaux capture record ({marker, meta, tensors, output}) when this is a capture
        file."""
        root = self.root
        if isinstance(root, dict) and CAPTURE_MARKER in root and isinstance(root.get("meta"), dict):
            return root
        return None


def unsafe_globals(machine: Machine) -> tuple[str, ...]:
    """The globals outside the allowlist that the pickle named so far."""
    return tuple(name for name, allowed in machine.globals_seen.items() if not allowed)


def failed_after_calls(machine: Machine, exc: DumpError) -> DumpError:
    """What the reader raises where ``machine``'s pickle fails to read with ``exc``.

    The globals outside the allowlist that the pickle named before the fault go with it: torch's
    full unpickler (``weights_only=False``) imports each, and calls it where the pickle does,
    before it meets the fault, so each is a security finding whatever follows. A malformed stream
    after such a global is then not an input ppaux could not read but a file it refuses (a read
    mismatch, PP118: torch.save never writes either), so that the calls are reported, never
    dropped with an error line. A limit met is the reader's own bound, said as such."""
    calls = unsafe_globals(machine)
    if isinstance(exc, ReadMismatch):
        exc.calls = calls
        return exc
    if isinstance(exc, LimitExceeded) or not calls:
        return exc
    refused = NotAsWritten(exc.path, exc.reason)
    refused.calls = calls
    refused.suggestions = exc.suggestions
    return refused


def machine_deviation(
    machine: Machine, label: str, found: Deviation | None = None
) -> Deviation | None:
    """The first value the pickle builds that the writer never writes (see Machine.deviate),
    where ``found`` (what the bytes' grammar found first) is None or one torch reads alike:
    one where torch's reading could differ wins over it, as the finding's level is the worse
    (a memo slip first must not hide a state torch.load refuses)."""
    if machine.deviation is None:
        return found
    where, what, severe = machine.deviation
    if found is not None and (found.severe or not severe):
        return found
    return Deviation(f"{label} {where}", what, severe)
