"""Differential fuzzing of ppaux's reader against the real ``torch.load(weights_only=False)``.

Files written by ``torch.save`` are varied at the zip level (long, non-UTF-8, NUL-holding,
case-varied and duplicated record names, multidisk fields, sizes that disagree, version and
byteorder records, deflated storages) and at the pickle level (keys in every string opcode,
integers in every text form, storage keys that torch's cache treats as equal or not, BUILD on
tensors, requires_grad set by a rebuild's argument, a Parameter or a BUILD state, bytes flipped
or cut). Each variant is read twice:

- by ppaux, in this process, with the safe reader (:func:`ppaux.dump.read_dump` and the checks
  behind ``ppaux inspect``), its tensors rebuilt from ppaux's reading by the replay
  materializer;
- by torch, in the sandbox of ``fuzz/torch_sandbox.py`` (a separate process, an audit hook
  that blocks every global outside torch's own rebuilds, every import, process, code object
  and file write, and torch.jit.load).

The property is what a clean report promises: when ppaux calls a file clean (no error
finding), torch loads it without being blocked, and reads the same keys, types, dtypes,
shapes, strides, values, tensor classes, devices, requires_grad and shared storages
(:func:`torch_sandbox.describe` of both). Whatever ppaux says, a file whose load the sandbox
had to block must get a PP2xx finding or be refused.

:func:`run` is bounded in time and seeded; each disagreement is returned with its bytes, to be
kept as a corpus file (``fixtures/differential/``) once understood.
"""

from __future__ import annotations

import io
import json
import os
import random
import struct
import subprocess
import sys
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from torch_sandbox import describe  # noqa: E402
from writer_mutations import WRITER_MUTATIONS  # noqa: E402

__all__ = ["MUTATIONS", "Disagreement", "Sandbox", "Verdict", "compare", "ppaux_view", "run"]

PREFIX = "__sampling_observer_output__."


class Sandbox:
    """The sandbox server (``fuzz/torch_sandbox.py``) as a context manager; :meth:`load`
    answers for one file."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        env.pop("PYTHONPATH", None)
        self._process = subprocess.Popen(
            [sys.executable, str(HERE / "torch_sandbox.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """torch's answer for ``path``: outcome ('loaded', 'refused', 'blocked'), error,
        blocked events and a description of the value."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(os.fspath(path) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the torch sandbox died")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """Stop the server."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)
        if self._process.stdout is not None:
            self._process.stdout.close()


@dataclass
class Verdict:
    """ppaux's reading: 'refused', 'findings' (an error finding) or 'clean'; the codes of its
    error findings; the description of what it read (None where it could not rebuild it)."""

    verdict: str
    codes: set[str] = field(default_factory=set)
    value: Any = None
    reason: str = ""


def ppaux_view(path: str) -> Verdict:
    """Read ``path`` as ``ppaux inspect`` does; for a file it reads, rebuild the values from its
    reading (the replay materializer) and describe them as the sandbox describes torch's."""
    import torch

    from ppaux.dump.checks import check_dump
    from ppaux.dump.dumpfile import read_dump
    from ppaux.dump.payload import find_payloads
    from ppaux.errors import DumpError, ReadMismatch
    from ppaux.limits import Limits
    from ppaux.replay.materialize import Materializer

    try:
        dump = read_dump(path)
        findings = check_dump(dump, find_payloads(dump), Limits())
    except ReadMismatch as exc:
        return Verdict("refused", {exc.code}, reason=exc.reason)
    except DumpError as exc:
        return Verdict("refused", reason=exc.reason)
    codes = {f.code for f in findings if f.severity.value == "error" or f.code == "PP118"}
    if any(not allowed for allowed in dump.globals_seen.values()):
        codes.add("PP201")
    verdict = "findings" if codes else "clean"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Materializer(dump, torch.device("cpu")) as build:
                value = describe(build.value(dump.root))
    except Exception as exc:
        return Verdict(verdict, codes, None, f"{type(exc).__name__}: {exc}")
    return Verdict(verdict, codes, value)


#: torch refusals that come from this machine, not from the file (a CUDA tensor on a machine
#: without CUDA): counted, never failed.
ENVIRONMENT_REFUSALS = ("torch.cuda.is_available() is False", "Numpy is not available")


@dataclass
class Disagreement:
    """One variant on which ppaux's verdict breaks its promise."""

    mutation: str
    problem: str
    data: bytes


def compare(ours: Verdict, theirs: dict[str, Any]) -> str | None:
    """Why ``ours`` breaks the clean-report promise given torch's answer, or None."""
    if theirs["outcome"] == "blocked":
        if ours.verdict == "refused" or ours.codes & {"PP201", "PP202", "PP203"}:
            return None
        return f"torch had to be blocked ({theirs['blocked']}), ppaux says {ours.verdict}"
    if ours.verdict != "clean":
        return None
    if theirs["outcome"] == "refused":
        error = theirs["error"] or ""
        if any(marker in error for marker in ENVIRONMENT_REFUSALS):
            return None
        return f"ppaux clean, torch refuses: {error}"[:400]
    if ours.value is None:
        return f"ppaux clean, but its reading cannot be rebuilt: {ours.reason}"[:400]
    if ours.value != theirs["value"]:
        mine, torch_read = json.dumps(ours.value)[:300], json.dumps(theirs["value"])[:300]
        return f"ppaux reads {mine}, torch {torch_read}"
    return None


# -- seeds ----------------------------------------------------------------------------------


def seeds() -> list[bytes]:
    """Small files torch.save writes: tensor dicts as sglang sends them, views, several dtypes."""
    import torch

    values = [
        {
            "next_token_ids": torch.arange(3),
            PREFIX + "scores": torch.ones(3),
            "__msg_type__": "output",
        },
        {"a": torch.zeros(2, 2), "b": [torch.ones(1, dtype=torch.float16)], "c": 3},
        {PREFIX + "x": torch.arange(4.0)[1:3], "d": {"e": torch.zeros(1, dtype=torch.bool)}},
        {"t": torch.arange(6, dtype=torch.int32).reshape(2, 3).t(), "s": "text", "f": 0.5},
    ]
    out = []
    for value in values:
        buffer = io.BytesIO()
        torch.save(value, buffer)
        out.append(buffer.getvalue())
    # torch.save's other layouts in the writer model: pickle_protocol=1 (no PROTO, text INT
    # for a bool), and the byteorder record written late (_disable_byteorder_record=True).
    for options in ({"pickle_protocol": 1}, {"_disable_byteorder_record": True}):
        buffer = io.BytesIO()
        torch.save(values[1], buffer, **options)
        out.append(buffer.getvalue())
    return out


# -- zip-level variation ------------------------------------------------------------------


@dataclass
class _Rec:
    name: bytes
    data: bytes
    method: int = 0
    payload: bytes | None = None
    utf8_flag: bool = False
    size: int | None = None
    disk: int = 0


def _records(data: bytes) -> list[_Rec]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [_Rec(i.filename.encode(), archive.read(i)) for i in archive.infolist()]


def _pack(recs: list[_Rec], *, disks: tuple[int, int] = (0, 0)) -> bytes:
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


def _folder(recs: list[_Rec]) -> bytes:
    return recs[0].name.split(b"/", 1)[0]


def _long_folder(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = _records(data)
    old = _folder(recs)
    new = b"f" * rng.choice((100, 480, 497, 498, 503, 520))
    for rec in recs:
        rec.name = new + rec.name[len(old) :]
    if rng.random() < 0.5:
        tail = b"z" * rng.randrange(1, 60)
        recs.append(_Rec(new + b"/" + rng.choice((b"constants.pkl", b"data.pkl")) + tail, b"x"))
    return _pack(recs)


def _odd_name(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = _records(data)
    rec = rng.choice(recs)
    at = rng.randrange(len(rec.name) + 1)
    odd = rng.choice((b"\xff", b"\xc3\xa9", b"\x00", b"\x00x", b"\xed\xa0\x80", b"/"))
    if rng.random() < 0.5:
        rec.name = rec.name[:at] + odd + rec.name[at:]
    else:
        rec.name = rec.name + odd + rng.choice((b"", b"constants.pkl", b"pkl"))
    rec.utf8_flag = rng.random() < 0.5
    if rng.random() < 0.3:
        recs.append(_Rec(_folder(recs) + b"/constants.pkl\x00" + odd, b""))
    return _pack(recs)


def _case_name(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = _records(data)
    rec = rng.choice(recs)
    rec.name = bytes(c ^ 32 if 97 <= c <= 122 and rng.random() < 0.5 else c for c in rec.name)
    if rng.random() < 0.3:
        spelling = rng.choice((b"CONSTANTS.PKL", b"Constants.pkl"))
        recs.append(_Rec(_folder(recs) + b"/" + spelling, b""))
    return _pack(recs)


def _duplicate_name(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = _records(data)
    foreign = _records(other)
    rec = rng.choice(recs)
    copy = _Rec(rec.name, rng.choice(foreign).data if rng.random() < 0.6 else rec.data)
    recs.insert(rng.randrange(len(recs) + 1), copy)
    return _pack(recs)


def _multidisk(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = _records(data)
    if rng.random() < 0.5:
        rng.choice(recs).disk = rng.choice((1, 2, 0xFFFF))
        return _pack(recs)
    return _pack(recs, disks=(rng.choice((0, 1, 3)), rng.choice((0, 1, 2))))


def _size_lie(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = _records(data)
    rec = rng.choice(recs)
    rec.size = max(0, len(rec.data) + rng.choice((-8, -4, -1, 1, 4, 8, 1000)))
    if rng.random() < 0.5:
        rec.method = 8
    return _pack(recs)


def _special_record(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = _records(data)
    which = rng.choice((b"version", b".data/version", b"byteorder", b".storage_alignment"))
    text = rng.choice(
        (b"3\n", b"11", b"10", b"0", b"1", b" 3", b"+2", b"0x3", b"3abc", b"-1", b"", b"x",
         b"big", b"little", b"little\n", b"Little", b"64", b" 64\n", b"6_4")
    )  # fmt: skip
    name = _folder(recs) + b"/" + which
    recs = [r for r in recs if r.name.lower() != name.lower()]
    if rng.random() < 0.2:
        name = name.upper()
    recs.insert(rng.randrange(1, len(recs) + 1), _Rec(name, text))
    return _pack(recs)


def _deflate_storage(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = _records(data)
    storages = [r for r in recs if b"/data/" in r.name] or recs
    rec = rng.choice(storages)
    rec.method = 8
    if rng.random() < 0.4:
        packer = zlib.compressobj(6, zlib.DEFLATED, -15)
        good = packer.compress(rec.data) + packer.flush()
        cut = rng.randrange(len(good) + 1)
        rec.payload = good[:cut] + bytes(rng.randrange(256) for _ in range(rng.randrange(4)))
    return _pack(recs)


def _end_field(rng: random.Random, data: bytes, other: bytes) -> bytes:
    at = data.rfind(b"PK\x05\x06")
    out = bytearray(data)
    offset, fmt = rng.choice(((4, "<H"), (6, "<H"), (8, "<H"), (10, "<H"), (12, "<I"), (16, "<I")))
    value = struct.unpack_from(fmt, out, at + offset)[0]
    value = max(0, value + rng.choice((-46, -1, 1, 30, 46)))
    struct.pack_into(fmt, out, at + offset, min(value, 2 ** (8 * struct.calcsize(fmt)) - 1))
    return bytes(out)


# -- pickle-level variation ---------------------------------------------------------------


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
    recs = [_Rec(b"archive/data.pkl", data_pkl), _Rec(b"archive/byteorder", b"little")]
    for skey, (kind, count) in storages.items():
        item = {"FloatStorage": 4, "LongStorage": 8, "HalfStorage": 2}[kind]
        recs.append(_Rec(b"archive/data/" + skey.encode(), os.urandom(item * count)))
    if rng.random() < 0.1:
        recs.append(_Rec(b"archive/data/True", os.urandom(16)))
    recs.append(_Rec(b"archive/version", b"3\n"))
    return _pack(recs)


def _pickle_variant(rng: random.Random, data: bytes, other: bytes) -> bytes:
    return _pickled(rng)


def _pickle_flip(rng: random.Random, data: bytes, other: bytes) -> bytes:
    recs = _records(data)
    rec = next(r for r in recs if r.name.endswith(b"/data.pkl"))
    mutated = bytearray(rec.data)
    if rng.random() < 0.3:
        mutated = mutated[: rng.randrange(len(mutated))]
    else:
        for _ in range(rng.randrange(1, 3)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
    rec.data = bytes(mutated)
    return _pack(recs)


Mutation = Callable[[random.Random, bytes, bytes], bytes]

MUTATIONS: list[Mutation] = [
    _long_folder,
    _odd_name,
    _case_name,
    _duplicate_name,
    _multidisk,
    _size_lie,
    _special_record,
    _deflate_storage,
    _end_field,
    _pickle_variant,
    _pickle_variant,
    _pickle_flip,
    # Edits in place, keeping the writer's layout: opcode swaps, memo indexes, record names,
    # local header and central directory fields.
    *WRITER_MUTATIONS,
]


@dataclass
class Result:
    """What a run did: variants tried per mutation, how many ppaux and torch read alike,
    torch's outcomes, and the disagreements (empty when ppaux kept its promise)."""

    tried: dict[str, int]
    agreed: int
    outcomes: dict[str, int]
    disagreements: list[Disagreement]


def run(seconds: float, seed: int, workdir: Path, sandbox: Sandbox, *, stop_at: int = 1) -> Result:
    """Vary the seeds for ``seconds``; stop after ``stop_at`` disagreements."""
    rng = random.Random(seed)
    bases = seeds()
    tried = {m.__name__: 0 for m in MUTATIONS}
    outcomes: dict[str, int] = {}
    agreed = 0
    found: list[Disagreement] = []
    path = workdir / "variant.pt"
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline and len(found) < stop_at:
        mutation = MUTATIONS[n % len(MUTATIONS)]
        n += 1
        try:
            data = mutation(rng, rng.choice(bases), rng.choice(bases))
        except (StopIteration, ValueError, IndexError, zipfile.BadZipFile, struct.error):
            continue
        path.write_bytes(data)
        tried[mutation.__name__] += 1
        ours = ppaux_view(os.fspath(path))
        theirs = sandbox.load(path)
        outcomes[theirs["outcome"]] = outcomes.get(theirs["outcome"], 0) + 1
        problem = compare(ours, theirs)
        if problem is not None:
            found.append(Disagreement(mutation.__name__, problem, data))
        elif ours.verdict == "clean" and theirs["outcome"] == "loaded":
            agreed += 1
    return Result(tried, agreed, outcomes, found)
