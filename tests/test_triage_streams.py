"""bzip2 and xz logs of several streams are read stream after stream: a later stream that is
corrupt, cut, or bytes after the last stream that begin none, are reported (PP812 when nothing
before them failed, exit 1), never dropped unsaid; xz's NUL padding in fours is part of a valid
file; a later stream is bounded as the first is."""

from __future__ import annotations

import bz2
import itertools
import lzma
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

LOG = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "sglang-aux-list.log"
COMPRESS = {"bzip2": bz2.compress, "xz": lzma.compress}

#: The log's lines before its first traceback (no failure), and the rest (the failures).
_LINES = LOG.read_bytes().splitlines(keepends=True)
QUIET = b"".join(_LINES[:16])
LOUD = b"".join(_LINES[16:])


def _codes(path: Path) -> list[str]:
    report = triage_paths([str(path)])
    assert not report.problems
    return [f.code for f in report.findings]


def _flipped(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


@pytest.mark.parametrize("kind", sorted(COMPRESS))
@pytest.mark.parametrize("share", [0.3, 0.7, 0.98])
def test_a_corrupt_later_stream_is_an_error_not_dropped(kind, share, tmp_path):
    compress = COMPRESS[kind]
    second = compress(LOUD)
    path = tmp_path / "server.log"
    path.write_bytes(compress(QUIET) + _flipped(second, int(len(second) * share)))
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 1
    assert f"PP812 error {path}: the {kind} stream" in " ".join(result.stdout.split())
    assert "PP802" not in " ".join(result.stdout.split())


@pytest.mark.parametrize("kind", sorted(COMPRESS))
@pytest.mark.parametrize("junk", [b"\x00garbage not compressed", b"BZ", b"PK\x03\x04"])
def test_bytes_after_the_last_stream_that_begin_none_are_reported(kind, junk, tmp_path):
    compress = COMPRESS[kind]
    path = tmp_path / "server.log"
    path.write_bytes(compress(QUIET) + junk + compress(LOUD))
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 1
    assert f"PP812 error {path}: the {kind} stream ends early (bytes after" in " ".join(
        result.stdout.split()
    )


@pytest.mark.parametrize("pad", [4, 1000, 1 << 17])
def test_xz_padding_in_fours_is_a_valid_end(pad, tmp_path):
    path = tmp_path / "server.log"
    path.write_bytes(lzma.compress(QUIET) + b"\x00" * pad + lzma.compress(LOUD) + b"\x00" * pad)
    codes = _codes(path)
    assert "PP801" in codes
    assert not {"PP810", "PP812"} & set(codes)


@pytest.mark.parametrize("pad", [1, 3, 999])
def test_xz_padding_not_in_fours_is_said(pad, tmp_path):
    path = tmp_path / "server.log"
    path.write_bytes(lzma.compress(QUIET + LOUD) + b"\x00" * pad)
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 1
    assert f"PP810 info {path}: the xz stream ends early (bytes after" in " ".join(
        result.stdout.split()
    )


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_a_later_stream_is_bounded_as_the_first(kind, tmp_path):
    path = tmp_path / "server.log"
    bomb = COMPRESS[kind](b"\n" * (4 << 20))
    path.write_bytes(COMPRESS[kind](QUIET) + bomb)
    tight = ["--limit", "max_inflated_bytes=100000", "--limit", "max_inflation_ratio=20"]
    result = CliRunner().invoke(app, ["triage", *tight, str(path)])
    assert result.exit_code == 2
    assert f"{kind} stream inflates more than 20 times its size past" in result.stderr
    assert "(limit max_inflation_ratio=20 reached)" in result.stderr


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(sorted(COMPRESS)),
    cuts=st.lists(st.integers(0, len(QUIET + LOUD)), min_size=1, max_size=4),
    flip=st.one_of(st.none(), st.floats(0.0, 0.999)),
)
def test_streams_read_whole_or_said_to_be_damaged(kind, cuts, flip, tmp_path):
    """Any split of the log into streams reads as the log itself; a flipped byte in a later
    stream never passes unsaid."""
    whole = QUIET + LOUD
    bounds = [0, *sorted(cuts), len(whole)]
    streams = [COMPRESS[kind](whole[a:b]) for a, b in itertools.pairwise(bounds)]
    if flip is not None:
        streams[-1] = _flipped(streams[-1], int(len(streams[-1]) * flip))
    path = tmp_path / "server.log"
    path.write_bytes(b"".join(streams))
    report = triage_paths([str(path)])
    codes = {f.code for f in report.findings}
    if flip is None:
        assert not report.problems
        assert "PP801" in codes
        assert not {"PP810", "PP812"} & codes
    else:  # a finding, or (nothing before the damage) the log refused
        assert {"PP810", "PP812"} & codes or report.problems
