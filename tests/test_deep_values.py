"""A value nested deeper than Python's recursion lets replay, diff or tensorize follow, within a
``max_depth`` the user raised: one line naming the file, exit 2, and the other files of the run
still reported (it was an internal error that ended the whole run). inspect reads such a value
without recursing, so it reads it."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from helpers import REPO, ppaux_process

DEPTH = 3000
RAISED = ("--limit", f"max_depth={DEPTH + 100}")
GOOD = str(REPO / "fixtures" / "dumps" / "clean_output.pt")


@pytest.fixture
def deep(tmp_path: Path) -> str:
    # {"__sampling_observer_output__.x": [[...[1.0]...]]}, spelt opcode by opcode (pickle.dumps
    # itself recurses): the dict, the key, DEPTH + 1 empty lists, the float, then each list
    # appended to the one below it.
    key = b"__sampling_observer_output__.x"
    data = (
        b"\x80\x04}\x8c"
        + bytes([len(key)])
        + key
        + b"]" * (DEPTH + 1)
        + b"G"
        + struct.pack(">d", 1.0)
        + b"a" * (DEPTH + 1)
        + b"s."
    )
    path = tmp_path / "deep.pkl"
    path.write_bytes(data)
    return str(path)


def _line(path: str, work: str) -> str:
    return (
        f"ppaux: error: {path}: nests too deeply to {work} (Python's recursion limit was "
        f"reached before max_depth={DEPTH + 100}; a larger max_depth does not help)\n"
    )


@pytest.mark.torch
def test_replay_names_the_file_and_replays_the_others(deep):
    done = ppaux_process("replay", deep, GOOD, *RAISED, "--format", "json")
    assert (done.returncode, done.stderr) == (2, _line(deep, "rebuild and replay"))
    report = json.loads(done.stdout)
    assert [r["path"] for r in report["results"]] == [GOOD]


@pytest.mark.torch
def test_diff_names_the_deeper_file(deep):
    done = ppaux_process("diff", GOOD, deep, *RAISED, "--format", "json")
    assert done.returncode in (1, 2), done.stderr
    alone = ppaux_process("diff", deep, deep, *RAISED, "--format", "json")
    assert (alone.returncode, alone.stderr) == (2, _line(deep, "compare"))


@pytest.mark.torch
def test_tensorize_names_the_file_and_writes_nothing(deep, tmp_path):
    out = tmp_path / "fixed.pt"
    done = ppaux_process("tensorize", deep, "-o", str(out), *RAISED)
    assert (done.returncode, done.stderr) == (2, _line(deep, "rewrite"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep.pkl"]


def test_inspect_reads_it(deep):
    done = ppaux_process("inspect", deep, *RAISED, "--format", "json")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
