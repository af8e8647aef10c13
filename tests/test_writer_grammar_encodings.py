"""Bytes spelled as a str and its encoding: CPython's pickler writes bytes at protocol 2 as
``_codecs.encode(text, 'latin1')`` and a bytearray as ``bytearray`` of that, so any other
encoding, or the str given to ``bytes``/``bytearray`` with its encoding, is not as torch.save
writes it (PP118). ppaux reads Latin-1, UTF-8 and ASCII as Python does (a warning: torch reads
the same bytes); torch.load runs any other codec it names, which ppaux never does: an error
naming the encoding, not a malformed pickle."""

from __future__ import annotations

import codecs
import io
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_archives import StoragePickler, torch_archive

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch


class _Call:
    def __init__(self, fn: object, *args: object) -> None:
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def _saved(tmp_path: Path, fn: object, encoding: str) -> Path:
    buffer = io.BytesIO()
    StoragePickler(buffer, protocol=2).dump({"b": _Call(fn, "ab\xe9", encoding)})
    return torch_archive(tmp_path / "t.pt", buffer.getvalue(), {})


def _torch_reads(path: Path) -> object:
    try:
        return torch.load(path, weights_only=False)["b"]
    except Exception as exc:  # torch's codec refuses: the file is refused, not read otherwise
        return exc


def _found(path: Path) -> list[tuple[str, str, str]]:
    report = inspect_paths([str(path)])
    assert not report.problems, report.problems
    return [(f.code, f.severity.value, f.message) for f in report.findings]


@pytest.mark.parametrize("encoding", ["cp1252", "utf-16", "rot13", "hex", "utf_32_be"])
@pytest.mark.parametrize("fn", [codecs.encode, bytes, bytearray], ids=lambda f: f.__name__)
def test_an_encoding_ppaux_does_not_run_is_named(tmp_path, fn, encoding):
    path = _saved(tmp_path, fn, encoding)
    read = _torch_reads(path)
    if encoding in ("utf-16", "utf_32_be") and fn is not bytes:
        # torch reads bytes other than Latin-1's: what ppaux would guess is not what it reads
        assert bytes(read) != "ab\xe9".encode("latin-1"), read
    found = _found(path)
    assert [(code, level) for code, level, _ in found] == [("PP118", "error")], found
    message = found[0][2]
    assert f"{encoding!r}" in message and "outside what torch.save writes" in message
    assert "malformed" not in message


@pytest.mark.parametrize(
    ("fn", "encoding", "named"),
    [
        (codecs.encode, "utf8", "_codecs.encode(text, 'utf8'), where the pickler writes"),
        (codecs.encode, "ascii", "_codecs.encode(text, 'ascii')"),
        (bytearray, "utf-8", "bytearray(text, 'utf-8')"),
        (bytearray, "latin1", "bytearray(text, 'latin1')"),
    ],
)
def test_an_encoding_ppaux_reads_is_a_warning_torch_reads_alike(tmp_path, fn, encoding, named):
    text = "ab\xe9" if encoding != "ascii" else "ab"
    buffer = io.BytesIO()
    StoragePickler(buffer, protocol=2).dump({"b": _Call(fn, text, encoding)})
    path = torch_archive(tmp_path / "t.pt", buffer.getvalue(), {})
    assert bytes(_torch_reads(path)) == text.encode(encoding)
    found = _found(path)
    assert [(code, level) for code, level, _ in found] == [("PP118", "warning")], found
    assert named in found[0][2]


@pytest.mark.parametrize("value", [b"ab\xe9", bytearray(b"ab\xe9")])
def test_bytes_as_torch_save_writes_them_are_clean(tmp_path, value):
    path = tmp_path / "t.pt"
    torch.save({"b": value}, path)
    assert torch.load(path, weights_only=False)["b"] == value
    assert _found(path) == []


_READ = {"latin1", "latin-1", "iso-8859-1", "iso8859-1", "l1", "utf-8", "utf8", "ascii", "us-ascii"}


@settings(max_examples=40, deadline=None)
@given(
    encoding=st.text(max_size=12).filter(lambda e: e.lower().replace("_", "-") not in _READ),
    fn=st.sampled_from([codecs.encode, bytes, bytearray]),
)
def test_any_other_encoding_is_never_clean_nor_malformed(encoding, fn):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        found = _found(_saved(Path(folder), fn, encoding))
    assert [(code, level) for code, level, _ in found] == [("PP118", "error")], found
    assert "outside what torch.save writes" in found[0][2] and "malformed" not in found[0][2]


@pytest.mark.parametrize("errors", ["strict", "ignore", "replace"])
def test_a_third_argument_to_codecs_encode_is_not_as_written(tmp_path, errors):
    # torch.save's pickler writes _codecs.encode(text, 'latin1'); torch.load passes a third
    # argument on to the codec and reads the file, so it is not malformed, and never clean.
    buffer = io.BytesIO()
    StoragePickler(buffer, protocol=2).dump({"b": _Call(codecs.encode, "ab\xe9", "latin1", errors)})
    path = torch_archive(tmp_path / "t.pt", buffer.getvalue(), {})
    assert _torch_reads(path) == b"ab\xe9"
    found = _found(path)
    assert [(code, level) for code, level, _ in found] == [("PP118", "error")], found
    assert f"'latin1', {errors!r})" in found[0][2] and "malformed" not in found[0][2]
