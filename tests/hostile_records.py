"""Observers that attack the check's own channels from inside its child: the hook slot (the
shared page that says which hook runs) and the records' pipe. Each does its mischief once, in
its first ``after_sample``; loaded by the check as a target file (its code runs in the child).
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures" / "observers"))

from entropy_good import EntropyObserver, EntropyOutput

_DONE: list[bool] = []


def _records_fd() -> int:
    """The records' pipe: the one pipe the child holds at a high descriptor number."""
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        number = int(name)
        if number < 256:
            continue
        try:
            if os.readlink(f"/proc/self/fd/{number}").startswith("pipe:"):
                return number
        except OSError:
            continue
    raise RuntimeError("no records pipe")


def _slot_write(when: float, body: bytes) -> None:
    """``when`` and ``body`` written over the hook slot, as the child's own writes are laid
    out (a big-endian double, a 4-byte length, the body)."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        [line] = [line for line in maps if "ppaux-hook" in line]
    data = struct.pack(">dI", when, len(body)) + body
    ctypes.memmove(int(line.split("-")[0], 16), data, len(data))


def _frame(body: bytes) -> None:
    os.write(_records_fd(), struct.pack(">I", len(body)) + body)


def _record(message: dict) -> None:
    _frame(json.dumps({**message, "pid": os.getpid()}).encode())


class _Once(EntropyObserver):
    def after_sample(self, state, token_ids):
        if not _DONE:
            _DONE.append(True)
            self.mischief()
        return EntropyOutput(state)

    def mischief(self) -> None:
        raise NotImplementedError


_HOOK = b'{"event": "hook", "method": "after_sample"}'


class InfiniteSlotTime(_Once):
    def mischief(self) -> None:
        _slot_write(float("inf"), _HOOK)
        time.sleep(3600)


class FutureSlotTime(_Once):
    def mischief(self) -> None:
        _slot_write(time.monotonic() + 1e9, _HOOK)
        time.sleep(3600)


class DeepFrame(_Once):
    def mischief(self) -> None:
        _frame(b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


class DeepSlotThenExit(_Once):
    def mischief(self) -> None:
        _slot_write(time.monotonic(), b'{"m": ' + b"[" * 3000)
        os._exit(3)


class TimerOfADict(_Once):
    def mischief(self) -> None:
        _record({"event": "end", "timers": [["SIGALRM", {}]]})


class TimerOfAString(_Once):
    def mischief(self) -> None:
        _record({"event": "end", "timers": [["SIGALRM", "x"]]})


class UnknownEvent(_Once):
    def mischief(self) -> None:
        _record({"event": "zz"})


class JunkHeartbeat(_Once):
    """Records of no event of the check's, every half second, for an hour."""

    def mischief(self) -> None:
        for _ in range(7200):
            _record({"event": "zz"})
            time.sleep(0.5)


class ClosesRecords(_Once):
    def mischief(self) -> None:
        os.close(_records_fd())


def _made(pad: str = "") -> dict:
    return {
        "event": "made",
        "method": "after_sample",
        "return": None,
        "names": {},
        **({"names": {"x": ["pad" + pad, 1, "f"]}} if pad else {}),
    }


class PidlessFrames(_Once):
    """Frames of JSON that name no process (``PPAUX_PIDLESS_FRAMES`` of ``{}``, 100,000 by
    default), then the records go on."""

    def mischief(self) -> None:
        body = b"{}"
        count = int(os.environ.get("PPAUX_PIDLESS_FRAMES", "100000"))
        os.write(_records_fd(), (struct.pack(">I", len(body)) + body) * count)


class ForkFrames(_Once):
    """Records each naming another process (``PPAUX_FORK_FRAMES`` of them, 3 by default),
    as forks of the child would send."""

    def mischief(self) -> None:
        fd = _records_fd()
        for number in range(int(os.environ.get("PPAUX_FORK_FRAMES", "3"))):
            body = json.dumps({"event": "ready", "pid": 4_000_000 + number}).encode()
            os.write(fd, struct.pack(">I", len(body)) + body)


class DenseRecord(_Once):
    """One record of 8 MiB (under ``max_record_bytes``) of empty objects: ``[{},{},...]``."""

    def mischief(self) -> None:
        _record({"event": "wire", "records": {"a": [{}] * ((8 << 20) // 3)}})


class BigRecord(_Once):
    """One record of 60 MiB, every field of it one the check's records have."""

    def mischief(self) -> None:
        _record(_made("x" * (60 << 20)))


class ShortStrings(_Once):
    """One ``wire`` record of short strings (1,150,000 of eight characters, or
    ``PPAUX_DENSE_STRINGS``): 12.6 MB of text, the most decoded memory a record can hold
    under the bound on what it may cost to read."""

    def mischief(self) -> None:
        count = int(os.environ.get("PPAUX_DENSE_STRINGS", "1150000"))
        _record({"event": "wire", "records": {"a": ["abcdefgh"] * count}})


class ManyRecords(_Once):
    """Small records (100,000, or ``PPAUX_MANY_RECORDS``), every one a record the check
    sends."""

    def mischief(self) -> None:
        body = json.dumps({**_made(), "pid": os.getpid()}).encode()
        frames = (struct.pack(">I", len(body)) + body) * 1000
        fd = _records_fd()
        for _ in range(int(os.environ.get("PPAUX_MANY_RECORDS", "100000")) // 1000):
            os.write(fd, frames)


class RecordHeartbeat(_Once):
    """A record the check sends, every fifth of a second, for an hour."""

    def mischief(self) -> None:
        for _ in range(18_000):
            _record(_made())
            time.sleep(0.2)


class StepOutOfRange(_Once):
    def mischief(self) -> None:
        _record({"event": "no_output", "batch_size": 1, "step": 5, "why": "x"})


class StepTwice(_Once):
    """Step 0's record before the check's own: the check's then comes out of order."""

    def mischief(self) -> None:
        _record({"event": "no_output", "batch_size": 1, "step": 0, "why": "x"})


class ForgedBatchSizeType(_Once):
    def mischief(self) -> None:
        _record({"event": "no_output", "batch_size": "1", "step": 0, "why": "x"})


class ForgedKey(_Once):
    def mischief(self) -> None:
        _record({**_made(), "extra": 1})


class EndTooSoon(_Once):
    def mischief(self) -> None:
        _record({"event": "end", "threads": [], "timers": []})
