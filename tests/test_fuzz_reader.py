"""Structured fuzzing of the dump reader with hypothesis, through the whole inspect pipeline.

Three generators: pickles assembled from random opcodes (every opcode, hostile and allowlisted
globals, memo traffic, odd ints and strings), plain or inside a torch.save-shaped zip; zips with
random lies in their headers; and random mutations (flips, cuts, insertions, splices) of the
fixtures and the adversarial corpus. Each input goes through ``fuzz/reader_harness.py``: no
exception, nothing run, a UTF-8 report, one-line problems, the file unchanged.

The default run is short and derandomized, so CI sees the same inputs every time. For a longer,
random run (by hand)::

    PPAUX_FUZZ_EXAMPLES=20000 PPAUX_FUZZ_RANDOM=1 python -m pytest tests/test_fuzz_reader.py
"""

from __future__ import annotations

import os
import struct
import sys

import pytest
from helpers import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.dump.allowlist import ALLOWED_NAMES
from ppaux.limits import Limits
from ppaux.report.document import Report

sys.path.insert(0, str(REPO / "fixtures"))
sys.path.insert(0, str(REPO / "fuzz"))

import make_adversarial as corpus
from make_adversarial import Rec, by, g, get, i, put, s, torch_zip, zip_archive
from reader_harness import check_input

EXAMPLES = int(os.environ.get("PPAUX_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=os.environ.get("PPAUX_FUZZ_RANDOM") != "1",
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)

#: Small limits reach every limit's refusal path with small inputs.
SMALL = Limits(
    max_pickle_bytes=200_000, max_depth=12, max_items=2_000, max_memo=50, max_zip_records=20
)

_HOSTILE = [
    "os.system",
    "posix.system",
    "builtins.eval",
    "builtins.exec",
    "builtins.getattr",
    "builtins.__import__",
    "subprocess.Popen",
    "pickle.loads",
    "torch.load",
    "functools.partial",
    "types.CodeType",
    "marshal.loads",
    "io.BytesIO",
    "nt.system",
]
_NAMES = sorted(ALLOWED_NAMES) + _HOSTILE

# Opcodes that take no argument, every protocol.
_BARE = [
    bytes([c])
    for c in b"(.0]12)}Ndeltosu\x85\x86\x87\x88\x89\x8f\x90\x91\x92\x93\x94RbaQ\x81\x97\x98"
]


def _global(name: str) -> bytes:
    module, _, attr = name.rpartition(".")
    return g(module, attr)


_opcode = st.one_of(
    st.sampled_from(_BARE),
    st.integers(-(2**70), 2**70).map(i),
    st.sampled_from([0, 1, 255, 256, 65535, 2**31 - 1, -(2**31), 2**63, -1]).map(i),
    st.text(max_size=12).map(s),
    st.sampled_from(
        [
            "storage",
            "cpu",
            "cuda:1",
            "0",
            "1",
            "__msg_type__",
            "output",
            corpus.OUTPUT_PREFIX + "x",
            "latin1",
        ]
    ).map(s),
    st.binary(max_size=12).map(by),
    st.sampled_from(_NAMES).map(_global),
    st.sampled_from(_NAMES).map(lambda n: s(n.rpartition(".")[0]) + s(n.rpartition(".")[2])),
    st.integers(0, 6).map(put),
    st.integers(0, 6).map(get),
    st.floats(allow_nan=True).map(lambda x: b"G" + struct.pack(">d", x)),
    st.sampled_from(
        [
            b"\x80\x02",
            b"\x80\x05",
            b"\x80\x09",
            b"\x95" + struct.pack("<Q", 2**63),
            b"\x82\x01",
            b"\x83\x01\x02",
            b"\x84\x01\x00\x00\x00",
            b"I01\n",
            b"I12\n",
            b"L5L\n",
            b"F1.5\n",
            b"S'a'\n",
            b"Vx\n",
            b"P0\n",
            b"g0\n",
            b"p0\n",
            b"ios\nsystem\n",
            b"\x8b\xff\xff\xff\x7f",
            b"\x8d" + b"\xff" * 8,
        ]
    ),
    st.binary(min_size=1, max_size=4),
)


@st.composite
def pickles(draw) -> bytes:
    body = b"".join(draw(st.lists(_opcode, max_size=40)))
    head = draw(st.sampled_from([b"", b"\x80\x02", b"\x80\x04"]))
    tail = draw(st.sampled_from([b".", b".", b""]))
    return head + body + tail


@pytest.mark.parametrize("limits", [Limits(), SMALL], ids=["default-limits", "small-limits"])
@FUZZ
@given(data=pickles(), zipped=st.booleans())
def test_random_opcodes(tmp_path, limits, data, zipped):
    workdir = tmp_path
    if zipped:
        check_input(torch_zip(data).data, workdir, limits=limits)
    else:
        check_input(data, workdir, limits=limits, suffix=".pkl")


_U32 = st.one_of(st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 0xFFFFFFFF, 2**31]))


@st.composite
def zips(draw) -> bytes:
    recs = []
    for _ in range(draw(st.integers(0, 4))):
        name = draw(
            st.sampled_from(
                [
                    "archive/data.pkl",
                    "archive/data/0",
                    "x/data.pkl",
                    "data.pkl",
                    "../data.pkl",
                    "archive/data.pkl\x00z",
                    "a\nb/data.pkl",
                    "archive/version",
                ]
            )
        )
        data = draw(st.one_of(st.just(corpus.benign_pickle()), st.binary(max_size=64)))
        rec = Rec(name, data, method=draw(st.sampled_from([0, 0, 8, 12, 14, 99])))
        if draw(st.booleans()):
            rec.size = draw(_U32)
        if draw(st.booleans()):
            rec.crc = draw(_U32)
        if draw(st.booleans()):
            rec.flags = draw(st.sampled_from([1, 8, 0x800]))
        if draw(st.booleans()):
            rec.offset = draw(st.integers(0, 400))
        if draw(st.booleans()):
            rec.central_extra = draw(st.binary(max_size=24))
        if draw(st.booleans()):
            rec.local_name = draw(st.text(max_size=10))
        recs.append(rec)
    options = {}
    if draw(st.booleans()):
        options["count"] = draw(st.integers(0, 0xFFFF))
    if draw(st.booleans()):
        options["cd_offset"] = draw(st.integers(0, 600))
    if draw(st.booleans()):
        options["zip64_locator"] = (draw(_U32), draw(_U32), draw(_U32))
    return zip_archive(recs, **options).data


@FUZZ
@given(data=zips())
def test_lying_zips(tmp_path, data):
    check_input(data, tmp_path)


def _seeds() -> list[bytes]:
    files = sorted((REPO / "fixtures").glob("*/*"))
    seeds = [
        p.read_bytes()
        for p in files
        if p.is_file() and p.suffix in (".pt", ".pkl") and p.stat().st_size <= 16_384
    ]
    assert len(seeds) >= 40
    return seeds


SEEDS = _seeds()


@st.composite
def mutants(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "set", "cut", "insert", "delete", "splice"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and data:
            data[at] = draw(st.sampled_from([0, 0xFF, 0x7F, 0x80, ord("."), ord("("), 0x93]))
        elif kind == "cut":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif kind == "splice":
            other = draw(st.sampled_from(SEEDS))
            start = draw(st.integers(0, max(len(other) - 1, 0)))
            data[at:at] = other[start : start + draw(st.integers(1, 64))]
    return bytes(data)


@FUZZ
@given(data=mutants())
def test_mutated_fixtures(tmp_path, data):
    check_input(data, tmp_path)


@settings(FUZZ, max_examples=max(EXAMPLES // 10, 10))
@given(data=mutants())
def test_mutated_fixtures_text_view(tmp_path, data):
    check_input(data, tmp_path, text=True)


def test_every_truncation_of_a_dump(tmp_path):
    # Truncation at every byte, not only at section boundaries.
    whole = torch_zip(corpus.benign_pickle()).data
    for cut in range(len(whole)):
        check_input(whole[:cut], tmp_path)
    pkl = corpus.benign_pickle()
    for cut in range(len(pkl)):
        check_input(pkl[:cut], tmp_path, suffix=".pkl")


def test_harness_catches_execution(tmp_path, monkeypatch):
    # The harness itself can fail: a reader that ran os.system would be caught.
    import reader_harness

    # Warm the harness up with the real reader first: which test runs first in a worker varies.
    reader_harness.warm_up()

    def leaky(paths, limits):
        os.system("true")
        return Report(command="inspect")

    monkeypatch.setattr(reader_harness, "inspect_paths", leaky)
    with pytest.raises(reader_harness.ReaderBroke, match=r"os\.system"):
        check_input(b"\x80\x02N.", tmp_path)
