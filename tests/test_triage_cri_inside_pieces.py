"""A line a container runtime split (``P`` pieces, then the ``F`` one) inside another
collector's records, one piece a record (Loki's values, Cloud Logging's ``textPayload``,
CloudWatch's events, journald's ``MESSAGE``): joined as a CRI log's pieces are, the split inside
the rank's tag or the exception's name, and the record is the rank's, at the first piece's
line and time. Expected roots written by hand."""

from __future__ import annotations

import io
import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.crilines import cri_lines
from ppaux.triage.heldpieces import HeldPieces
from ppaux.triage.peeled import Peeled

_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB."
_LINE = f"[rank1]: {_OOM}"
_RANK7 = [
    "[rank7]: Traceback (most recent call last):",
    '[rank7]:   File "/srv/train.py", line 9, in train',
    "[rank7]:     logits = self._model(**batch)",
    f"[rank7]: {_OOM}",
]


def _runtime(pieces: list[str]) -> list[str]:
    """The runtime's lines: ``pieces`` of rank 1's line from 10:00:03, then rank 7's traceback
    at 10:00:05 (so rank 1 is the root, rank 7 its collateral)."""
    tags = ["P"] * (len(pieces) - 1) + ["F"]
    rows = [
        f"2024-12-01T10:00:03.00000000{n}Z stderr {tag} {piece}"
        for n, (tag, piece) in enumerate(zip(tags, pieces, strict=True))
    ]
    return rows + [f"2024-12-01T10:00:05.000000000Z stderr F {line}" for line in _RANK7]


def _loki(rows: list[str]) -> str:
    result = [{"stream": {"pod": "tt-0"}, "values": [["1733047260000000000", r] for r in rows]}]
    return json.dumps({"data": {"resultType": "streams", "result": result}})


def _cloud(rows: list[str]) -> str:
    return json.dumps([{"textPayload": r, "timestamp": "2024-12-01T10:01:00Z"} for r in rows])


def _cloudwatch(rows: list[str]) -> str:
    events = [{"message": r, "timestamp": 1733047260000, "logStreamName": "s/1"} for r in rows]
    return json.dumps({"events": events})


def _journald(rows: list[str]) -> str:
    return "\n".join(
        json.dumps({"MESSAGE": r, "__REALTIME_TIMESTAMP": "1733047260000000"}) for r in rows
    )


_WRITERS = {"loki": _loki, "cloud": _cloud, "cloudwatch": _cloudwatch, "journald": _journald}
_SPLITS = [
    ["[ran", "k1]: " + _OOM],
    ["[rank1]: ", _OOM],
    ["[rank1]: torch.OutOf", "MemoryError: CUDA out of memory. Tried to allocate 1.96 GiB."],
    ["[rank1]: to", "rch.OutOfMem", "oryError: CUDA out of memory. Tried to allocate 1.96 GiB."],
]


def _roots(text: str) -> list[tuple[str | None, str, str]]:
    report = triage_paths(["x.json"], {"x.json": io.BytesIO(text.encode())})
    assert not report.problems, [p.message for p in report.problems]
    return [
        (f.key, f.extra["kind"], " ".join(f.message.split()))
        for f in report.findings
        if f.code in ("PP801", "PP802")
    ]


@pytest.mark.parametrize("pieces", _SPLITS)
@pytest.mark.parametrize("writer", sorted(_WRITERS))
def test_a_split_ranks_record_inside_records_is_that_ranks_root_at_its_first_piece(pieces, writer):
    ((key, kind, message),) = _roots(_WRITERS[writer](_runtime(pieces)) + "\n")
    assert key.rsplit(", ", 1)[-1] == "rank 1"
    assert kind == "memory"
    assert "2024-12-01T10:00:03.000000000Z (x.json:" in message
    assert message.endswith(f"): {_OOM}") or f"): {_OOM} " in message


def test_pieces_of_a_line_in_one_message_are_joined():
    lines = cri_lines(
        [
            "2024-12-01T10:00:03Z stderr P [rank1]: torch.OutOf",
            "2024-12-01T10:00:03Z stderr F MemoryError: x",
            "2024-12-01T10:00:04Z stderr P [rank2]: Key",
        ]
    )
    assert lines is not None
    assert lines.texts == ["[rank1]: torch.OutOfMemoryError: x", "[rank2]: Key"]
    assert lines.partial is True
    whole = cri_lines(["2024-12-01T10:00:03Z stderr F a"])
    assert whole is not None and whole.partial is False


def _peeled(lines: list[str], stream: str | None, cri: bool, partial: bool) -> Peeled:
    peeled = Peeled(lines)
    peeled.stream, peeled.cri, peeled.partial = stream, cri, partial
    return peeled


def test_a_held_piece_is_joined_per_stream_and_read_as_it_stands_otherwise():
    held = HeldPieces(max_line=1000)
    assert held.take(1, _peeled(["a", "b1"], "s", True, True))[0][1].lines == ["a"]
    assert held.take(2, _peeled(["c1"], "t", True, True)) == []  # another stream's piece
    assert held.take(3, _peeled(["b2"], "s", True, True)) == []  # a piece in the middle
    ((number, joined), (at, rest)) = held.take(4, _peeled(["b3", "d"], "s", True, False))
    assert (number, joined.lines, at, rest.lines) == (1, ["b1b2b3"], 4, ["d"])
    ((number, alone), (at, plain)) = held.take(5, _peeled(["e"], "t", False, False))
    assert (number, alone.lines, at, plain.lines) == (2, ["c1"], 5, ["e"])
    assert not held
    held.take(6, _peeled(["f"], None, True, True))
    assert [(n, p.lines) for n, p in held.rest()] == [(6, ["f"])]


#: Where the exception's ``Error:`` stands in the line: a split inside it leaves no piece that
#: the scanner stops at, in a CRI log as in these records (the pieces are joined only once one
#: is read), so the property's splits are elsewhere.
_MARKER = range(_LINE.index("Error:") + 1, _LINE.index("Error:") + len("Error:"))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.integers(1, len(_LINE) - 1).filter(lambda cut: cut not in _MARKER),
        max_size=4,
        unique=True,
    ),
    st.sampled_from(sorted(_WRITERS)),
)
def test_any_split_of_a_ranks_line_inside_records_reads_as_the_whole_line(cuts, writer):
    bounds = [0, *sorted(cuts), len(_LINE)]
    pieces = [_LINE[a:b] for a, b in itertools.pairwise(bounds)]
    split = _roots(_WRITERS[writer](_runtime(pieces)) + "\n")
    assert split == _roots(_WRITERS[writer](_runtime([_LINE])) + "\n")
    assert [key.rsplit(", ", 1)[-1] for key, _, _ in split] == ["rank 1"]
