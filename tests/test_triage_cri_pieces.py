"""A line a container runtime split into pieces (``P``, then ``F``), the split inside the
rank's tag or the exception's name: the scanner, which stops only at a line holding a marker,
joins the pieces before the one it stops at, and the record is the rank's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppaux.triage import triage_paths

_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB."
_RANK7 = [
    "[rank7]: Traceback (most recent call last):",
    '[rank7]:   File "/srv/train.py", line 9, in train',
    "[rank7]:     logits = self._model(**batch)",
    f"[rank7]: {_OOM}",
]


def _cri(pieces: list[str]) -> str:
    rows = [f"2024-12-01T10:00:00.00000000{n}Z stderr P {p}" for n, p in enumerate(pieces[:-1])]
    rows.append(f"2024-12-01T10:00:00.00000000{len(pieces) - 1}Z stderr F {pieces[-1]}")
    rows += [f"2024-12-01T10:00:05.000000000Z stderr F {line}" for line in _RANK7]
    return "\n".join(rows) + "\n"


def _docker(pieces: list[str]) -> str:
    rows = [
        json.dumps({"log": p, "stream": "stderr", "time": "2024-12-01T10:00:00Z"})
        for p in pieces[:-1]
    ]
    rows.append(
        json.dumps({"log": pieces[-1] + "\n", "stream": "stderr", "time": "2024-12-01T10:00:00Z"})
    )
    rows += [
        json.dumps({"log": line + "\n", "stream": "stderr", "time": "2024-12-01T10:00:05Z"})
        for line in _RANK7
    ]
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize(
    "pieces",
    [
        ["[ran", "k1]: " + _OOM],
        ["[rank1]: ", _OOM],
        ["[rank1]: torch.OutOf", "MemoryError: CUDA out of memory. Tried to allocate 1.96 GiB."],
        [
            "[rank1]: to",
            "rch.OutOfMem",
            "oryError: CUDA out of memory. Tried to allocate 1.96 GiB.",
        ],
    ],
)
@pytest.mark.parametrize("write", [_cri, _docker])
def test_a_split_ranks_record_is_that_ranks_root(tmp_path: Path, pieces, write):
    path = tmp_path / "x.log"
    path.write_text(write(pieces), encoding="utf-8")
    roots = [f for f in triage_paths([str(path)]).findings if f.code in ("PP801", "PP802")]
    assert [(f.key, f.extra["kind"]) for f in roots] == [("rank 1", "memory")]
    assert f"x.log:1): {_OOM}" in " ".join(roots[0].message.split())
