"""Differential fuzzing: ppaux's verdict against torch.load(weights_only=True) on mutated files.

Files written by torch.save are mutated in their zip structure (names in another case, records
duplicated, moved or renamed, bytes put in front or behind, end-record fields changed, headers
pointed elsewhere) and in their pickle (bytes flipped, cut, keys renamed, storage keys made ints).
For each mutant the property is the one a clean report promises: when ppaux calls a file clean
(no error finding), torch.load(weights_only=True)'s unpickler does not refuse it (a refusal there
means torch met a global or a stream ppaux did not see); and whenever both read a file, they find
the same top-level keys. torch's restricted loader never runs code. Mutants torch cannot load for
reasons outside the pickle (its zip reader's stricter field checks, an unknown device name, a
storage size) are counted, not failed: nothing is unpickled there; so are mutants it refuses
only because its opcode set is smaller than pickle's.

The run is seeded and bounded in time: ``PPAUX_DIFF_FUZZ_SECONDS`` (default 40) and
``PPAUX_DIFF_FUZZ_SEED`` (default 1) change them; the same seed gives the same mutants.
"""

from __future__ import annotations

import io
import os
import random
import struct
import time
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ppaux.dump.checks import check_dump
from ppaux.dump.dumpfile import read_dump
from ppaux.dump.payload import find_payloads, key_text
from ppaux.errors import DumpError, ReadMismatch
from ppaux.limits import Limits

pytestmark = pytest.mark.torch

SECONDS = float(os.environ.get("PPAUX_DIFF_FUZZ_SECONDS", "40"))
SEED = int(os.environ.get("PPAUX_DIFF_FUZZ_SEED", "1"))
PREFIX = "__sampling_observer_output__."


def _seeds() -> list[bytes]:
    import torch

    values = [
        {
            "next_token_ids": torch.arange(3),
            PREFIX + "scores": torch.ones(3),
            "__msg_type__": "output",
        },
        {"a": torch.zeros(2, 2), "b": [torch.ones(1)], "c": 3},
        {PREFIX + "x": torch.arange(4.0)[1:3], "d": {"e": torch.zeros(1)}},
    ]
    out = []
    for value in values:
        buffer = io.BytesIO()
        torch.save(value, buffer)
        out.append(buffer.getvalue())
    return out


def _records(data: bytes) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [(info, archive.read(info)) for info in archive.infolist()]


def _write(records: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are the point of some mutants
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, payload in records:
                archive.writestr(name, payload)
    return buffer.getvalue()


def _end(data: bytes) -> int:
    return data.rfind(b"PK\x05\x06")


# -- mutations ------------------------------------------------------------------------------


def _case_variant(rng: random.Random, data: bytes, other: bytes) -> bytes:
    records = [(i.filename, p) for i, p in _records(data)]
    name = next(n for n, _ in records if n.endswith("/data.pkl"))
    variant = "".join(c.upper() if rng.random() < 0.5 else c for c in name)
    foreign = next(p for i, p in _records(other) if i.filename.endswith("/data.pkl"))
    records.insert(rng.randrange(len(records) + 1), (variant, foreign))
    return _write(records)


def _rename(rng: random.Random, data: bytes, other: bytes) -> bytes:
    records = [(i.filename, p) for i, p in _records(data)]
    k = rng.randrange(len(records))
    name = records[k][0]
    at = rng.randrange(len(name))
    records[k] = (name[:at] + name[at].swapcase() + name[at + 1 :], records[k][1])
    return _write(records)


def _duplicate(rng: random.Random, data: bytes, other: bytes) -> bytes:
    records = [(i.filename, p) for i, p in _records(data)]
    foreign = _records(other)
    name, payload = rng.choice(records)
    replacement = rng.choice(foreign)[1] if rng.random() < 0.7 else payload
    records.insert(rng.randrange(len(records) + 1), (name, replacement))
    return _write(records)


def _prepend(rng: random.Random, data: bytes, other: bytes) -> bytes:
    junk = bytes(rng.randrange(256) for _ in range(rng.choice((1, 4, 30, 64))))
    return b"PK\x03\x04" + junk + data if rng.random() < 0.5 else other + data


def _append(rng: random.Random, data: bytes, other: bytes) -> bytes:
    return data + (other if rng.random() < 0.5 else bytes(rng.randrange(1, 100)))


def _end_field(rng: random.Random, data: bytes, other: bytes) -> bytes:
    at = _end(data)
    out = bytearray(data)
    field = rng.choice(((8, "<H"), (10, "<H"), (12, "<I"), (16, "<I")))
    offset, fmt = field
    value = struct.unpack_from(fmt, out, at + offset)[0]
    value = max(0, value + rng.choice((-64, -46, -1, 1, 30, 46)))
    struct.pack_into(fmt, out, at + offset, min(value, 2 ** (8 * struct.calcsize(fmt)) - 1))
    return bytes(out)


def _header_offset(rng: random.Random, data: bytes, other: bytes) -> bytes:
    infos = [i for i, _ in _records(data)]
    out = bytearray(data)
    start = struct.unpack_from("<I", out, _end(data) + 16)[0]
    entries = [m for m in range(start, _end(data)) if out[m : m + 4] == b"PK\x01\x02"]
    entry = rng.choice(entries)
    struct.pack_into("<I", out, entry + 42, rng.choice(infos).header_offset)
    return bytes(out)


def _flip_tail(rng: random.Random, data: bytes, other: bytes) -> bytes:
    out = bytearray(data)
    start = struct.unpack_from("<I", out, _end(data) + 16)[0]
    for _ in range(rng.randrange(1, 4)):
        out[rng.randrange(start, len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _pickle_mutant(rng: random.Random, data: bytes, other: bytes) -> bytes:
    records = [(i.filename, p) for i, p in _records(data)]
    k = next(n for n, (name, _) in enumerate(records) if name.endswith("/data.pkl"))
    name, pkl = records[k]
    choice = rng.randrange(4)
    if choice == 0:
        mutated = bytearray(pkl)
        for _ in range(rng.randrange(1, 3)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        pkl = bytes(mutated)
    elif choice == 1:
        pkl = pkl[: rng.randrange(len(pkl))]
    elif choice == 2 and b"X\x01\x00\x00\x000" in pkl:
        pkl = pkl.replace(b"X\x01\x00\x00\x000", b"K\x00", 1)  # storage key '0' -> 0
    else:
        at = pkl.find(b"X", rng.randrange(len(pkl)))
        if at >= 0 and at + 6 < len(pkl):
            mutated = bytearray(pkl)
            mutated[at + 5] = (
                ord(chr(mutated[at + 5]).swapcase()) if mutated[at + 5] < 128 else mutated[at + 5]
            )
            pkl = bytes(mutated)
    records[k] = (name, pkl)
    return _write(records)


MUTATIONS = [
    _case_variant,
    _rename,
    _duplicate,
    _prepend,
    _append,
    _end_field,
    _header_offset,
    _flip_tail,
    _pickle_mutant,
]


# -- verdicts -------------------------------------------------------------------------------


def _ppaux(path: Path) -> tuple[str, list[str] | None]:
    """('refused', None), or ('clean' | 'findings', top-level keys as reports show them)."""
    try:
        dump = read_dump(str(path))
    except (ReadMismatch, DumpError):
        return "refused", None
    payloads = find_payloads(dump)
    findings = check_dump(dump, payloads, Limits())
    keys = [key_text(k) for k in dump.root] if isinstance(dump.root, dict) else None
    if any(f.code.startswith("PP2") for f in findings):
        return "refused", None
    if any(f.severity.value == "error" for f in findings):
        return "findings", keys  # not called clean: torch.load may well fail on it
    return "clean", keys


def _torch(path: Path) -> tuple[str, Any]:
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "loaded", torch.load(path, weights_only=True)
        except Exception as exc:
            return "refused", f"{type(exc).__name__}: {exc}"


def _shown(key: object) -> str:
    # The report holds a string key as the file spells it (each format escapes it when it
    # writes it), any other key as its repr.
    return key if isinstance(key, str) else repr(key)


def test_ppaux_never_reads_clean_what_torch_reads_otherwise(tmp_path):
    rng = random.Random(SEED)
    seeds = _seeds()
    deadline = time.monotonic() + SECONDS
    tried = {m.__name__: 0 for m in MUTATIONS}
    agreed = torch_only_refusals = 0
    failures = []
    path = tmp_path / "mutant.pt"
    n = 0
    while time.monotonic() < deadline:
        n += 1
        mutation = MUTATIONS[n % len(MUTATIONS)]
        data, other = rng.choice(seeds), rng.choice(seeds)
        try:
            mutant = mutation(rng, data, other)
        except (StopIteration, ValueError, IndexError, zipfile.BadZipFile, struct.error):
            continue
        path.write_bytes(mutant)
        tried[mutation.__name__] += 1
        verdict, keys = _ppaux(path)
        if verdict == "refused":
            continue
        outcome, loaded = _torch(path)
        if outcome == "refused" and verdict == "clean":
            if not loaded.startswith("UnpicklingError"):
                # torch could not load it for a reason outside the pickle's contents (its zip
                # reader checks fields zipfile does not, an unknown device, a storage size):
                # nothing was unpickled, nothing ran. Counted, not failed.
                torch_only_refusals += 1
                continue
            if "Unsupported operand" in loaded:
                continue  # torch's restricted loader lacks the opcode; pickle would read it
            # torch's unpickler met a global or a stream that ppaux's did not: a clean verdict
            # on a file that reads otherwise.
            failures.append((mutation.__name__, n, f"ppaux clean, torch refuses: {loaded}"[:300]))
        elif outcome == "loaded" and isinstance(loaded, dict):
            if keys != [_shown(k) for k in loaded]:
                failures.append((mutation.__name__, n, f"keys {keys} != {list(loaded)}"[:300]))
            else:
                agreed += 1
        if failures:
            (tmp_path / f"failure_{n}.pt").write_bytes(mutant)
            break
    assert failures == [], failures
    assert all(count > 0 for count in tried.values()), tried
    assert agreed > 0
