"""A compressed log whose data is corrupt (bytes flipped in transfer or on disk) fails the
gate, and nothing of what it garbled to is read as a failure."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux_cli.app import app

SITE = "/usr/local/lib/python3.11/site-packages/sglang/srt"
LOG = "".join(
    f"[2026-12-03 14:56:0{n % 10} PP{n % 4}] Decode batch, #running-req: 3, #token: {n}\n"
    for n in range(40)
) + (
    "[2026-12-03 14:56:42 PP2] Scheduler hit an exception: Traceback (most recent call last):\n"
    f'  File "{SITE}/managers/scheduler.py", line 2950, in run_scheduler_process\n'
    "    scheduler.event_loop_pp()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
)
COMPRESS = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}
DECOMPRESS = {"gzip": gzip.decompress, "bzip2": bz2.decompress, "xz": lzma.decompress}
#: Bytes of each format's own header and trailer, left alone: a flip inside its data.
MARGINS = {"gzip": (10, 8), "bzip2": (10, 10), "xz": (24, 12)}


def _triage(data: bytes):
    return CliRunner().invoke(app, ["triage", "-", "--format", "json"], input=data)


def _error(kind: str, data: bytes) -> BaseException | None:
    try:
        DECOMPRESS[kind](data)
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
        return exc
    return None


def _unreadable(kind: str, data: bytes) -> bool:
    return _error(kind, data) is not None


def test_a_gzip_whose_crc_fails_reports_no_garbled_failure():
    whole = bytearray(gzip.compress(LOG.encode(), mtime=0))
    whole[len(whole) // 2] ^= 0x55
    assert _unreadable("gzip", bytes(whole))
    result = _triage(bytes(whole))
    assert result.exit_code == 1, result.output
    document = json.loads(result.output)
    codes = [f["code"] for f in document["findings"]]
    assert codes == ["PP812"], codes
    assert "corrupt" in document["findings"][0]["message"]
    assert document["incidents"] == []


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(COMPRESS)), where=st.floats(0.0, 1.0), bits=st.integers(1, 255))
def test_a_flipped_byte_in_a_compressed_log_fails_the_gate_with_no_root(kind, where, bits):
    whole = bytearray(COMPRESS[kind](LOG.encode()))
    head, tail = MARGINS[kind]
    at = head + int(where * (len(whole) - head - tail - 1))
    whole[at] ^= bits
    error = _error(kind, bytes(whole))
    if error is None:
        return  # a flip the format does not see (none in practice): nothing to promise
    result = _triage(bytes(whole))
    assert result.exit_code in (1, 2), result.output
    if result.exit_code == 2:  # nothing could be inflated: refused with one clear line
        assert result.stderr.startswith("ppaux: error: <stdin>: "), result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
        # The JSON document still comes, holding that problem alone.
        document = json.loads(result.stdout)
        assert [p["path"] for p in document["problems"]] == ["<stdin>"]
        assert document["findings"] == []
        return
    codes = [f["code"] for f in json.loads(result.output)["findings"]]
    if isinstance(error, EOFError):
        # the flip ended the stream early, as a cut does: what came before is read, said cut
        assert "PP810" in codes or "PP812" in codes, codes
        return
    assert "PP812" in codes, (codes, error)
    assert not {"PP801", "PP802", "PP803", "PP809"} & set(codes), codes
