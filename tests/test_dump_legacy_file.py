"""The legacy torch.save format (``_use_new_zipfile_serialization=False``, which torch still
writes) read as a writer grammar: what torch.save writes is clean and read as torch reads it;
a change to any byte is a finding, a refusal, or read by torch exactly as ppaux reads it.

Values are compared with torch's own load of the same file (weights-only where torch's default
reads the file), described by the differential harness's ``describe``.
"""

from __future__ import annotations

import io
import pickle
import struct
import sys
import warnings
from pathlib import Path

import pytest
import torch
from helpers import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.torch

sys.path.insert(0, str(REPO / "fuzz"))

import torch_differential as harness  # noqa: E402

from ppaux.dump.dumpfile import read_dump  # noqa: E402
from ppaux.dump.inspection import inspect_file  # noqa: E402
from ppaux.errors import DumpError, ReadMismatch  # noqa: E402

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
    torch.complex64,
    torch.complex128,
]
#: Dtypes without a storage class of their own: the legacy writer names their storage
#: torch.storage.UntypedStorage, which its reader cannot read.
UNREADABLE = [
    torch.uint16,
    torch.uint32,
    torch.uint64,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
    torch.complex32,
]


def _value() -> dict[str, object]:
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 7
    shared = torch.arange(10, dtype=torch.int64)
    value: dict[str, object] = {
        f"t_{str(d).removeprefix('torch.')}": (torch.arange(6) % 2 == 1).to(d).reshape(2, 3)
        if d is torch.bool
        else (torch.arange(6, dtype=torch.float32) - 2).to(d).reshape(2, 3)
        for d in DTYPES
    }
    value.update(
        {
            "view_t": base.t(),
            "view_slice": base[1:, 2:5],
            "view_step": base[:, ::2],
            "base": base,
            "shared_a": shared,
            "shared_b": shared[3:7],
            "param": torch.nn.Parameter(torch.ones(3, 2)),
            "frozen": torch.nn.Parameter(torch.zeros(2), requires_grad=False),
            "nested": {"list": [shared[::3], (base[0], 3, "x")], "none": None, "f": 1.5},
            "empty": torch.empty(0, 5),
            "scalar": torch.tensor(2.5),
        }
    )
    return value


def _save(value: object, protocol: int) -> bytes:
    out = io.BytesIO()
    torch.save(value, out, _use_new_zipfile_serialization=False, pickle_protocol=protocol)
    return out.getvalue()


def _torch_reading(path: Path, weights_only: bool) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return harness.describe(torch.load(path, weights_only=weights_only))


@pytest.mark.parametrize("protocol", [1, 2, 3, 4, 5])
def test_what_torch_save_writes_is_clean_and_read_as_torch_reads_it(tmp_path, protocol):
    path = tmp_path / f"legacy_p{protocol}.pt"
    path.write_bytes(_save(_value(), protocol))
    dump = read_dump(str(path))
    assert dump.container == "legacy"
    assert dump.deviation is None, dump.deviation
    description, findings = inspect_file(str(path))
    assert "PP118" not in {f.code for f in findings}
    assert not [f for f in findings if f.severity.value == "error"], findings
    ours = harness.ppaux_view(str(path))
    assert ours.verdict == "clean", ours
    try:
        theirs = _torch_reading(path, weights_only=True)
    except pickle.UnpicklingError:
        # torch's weights-only reader runs no LONG (protocol 1) and no FRAME (protocol 4, 5):
        # ppaux says so, and reads what torch's full reader reads.
        assert "PP119" in {f.code for f in findings}
        theirs = _torch_reading(path, weights_only=False)
    else:
        assert "PP119" not in {f.code for f in findings}
    assert ours.value == theirs
    assert description["container"] == "legacy"
    assert description["storages"] == len(dump.storages) > 0


def _spans(data: bytes) -> list[tuple[int, int]]:
    """Where each of the five pickles lies, found by Python's own unpickler."""

    class Reader(pickle.Unpickler):
        def persistent_load(self, pid):
            return pid

        def find_class(self, module, name):
            return lambda *args: (module, name, args)

    stream, spans = io.BytesIO(data), []
    for _ in range(5):
        start = stream.tell()
        Reader(stream).load()
        spans.append((start, stream.tell()))
    return spans


@pytest.fixture(scope="module")
def written() -> bytes:
    return _save({"a": torch.arange(6.0).reshape(2, 3), "u": torch.arange(3, dtype=torch.uint8)}, 2)


def _codes(tmp_path: Path, data: bytes) -> set[str] | str:
    path = tmp_path / "changed.pt"
    path.write_bytes(data)
    try:
        _, findings = inspect_file(str(path))
    except ReadMismatch as exc:
        return {exc.code}
    except DumpError as exc:
        return f"refused: {exc.reason}"
    return {f.code for f in findings}


def _keys(data: bytes) -> list[str]:
    start, end = _spans(data)[4]
    keys = pickle.loads(data[start:end])
    assert len(keys) == 2
    return keys


def test_trailing_bytes_are_a_finding(tmp_path, written):
    codes = _codes(tmp_path, written + b"more")
    assert codes == {"PP118"}


def test_a_short_storage_is_refused_as_torch_refuses_it(tmp_path, written):
    assert _codes(tmp_path, written[:-1]) == {"PP117"}


@pytest.mark.parametrize("change", [-1, 1])
def test_a_storage_count_other_than_its_size_is_refused(tmp_path, written, change):
    start = _spans(written)[4][1]
    (count,) = struct.unpack("<q", written[start : start + 8])
    data = written[:start] + struct.pack("<q", count + change) + written[start + 8 :]
    assert _codes(tmp_path, data) == {"PP117"}


def test_a_key_the_object_never_names_is_refused(tmp_path, written):
    start, end = _spans(written)[4]
    keys = [*_keys(written), "12345"]
    data = written[:start] + pickle.dumps(keys, protocol=2) + written[end:]
    assert _codes(tmp_path, data) == {"PP117"}


def test_an_unlisted_storage_is_a_severe_finding(tmp_path, written):
    # torch.load leaves that storage's memory uninitialised.
    spans = _spans(written)
    start, end = spans[4]
    keys = _keys(written)
    first = 8 + struct.unpack("<q", written[end : end + 8])[0] * 4  # the float32 storage
    data = written[:start] + pickle.dumps(keys[:1], protocol=2) + written[end : end + first]
    path = tmp_path / "unlisted.pt"
    path.write_bytes(data)
    dump = read_dump(str(path))
    assert dump.deviation is not None and dump.deviation.severe
    assert "not listed" in dump.deviation.what


def test_big_endian_system_info_is_a_finding(tmp_path, written):
    start, end = _spans(written)[2]
    info = pickle.loads(written[start:end])
    assert info["little_endian"] is True
    info["little_endian"] = False
    data = written[:start] + pickle.dumps(info, protocol=2) + written[end:]
    assert _codes(tmp_path, data) == {"PP118"}


def test_another_version_is_refused(tmp_path, written):
    start, end = _spans(written)[1]
    data = written[:start] + pickle.dumps(1000, protocol=2) + written[end:]
    assert _codes(tmp_path, data) == {"PP117"}


@pytest.mark.parametrize("dtype", UNREADABLE, ids=str)
def test_a_dtype_the_legacy_reader_cannot_read_is_refused(tmp_path, dtype):
    path = tmp_path / "untyped.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex32 is experimental
        path.write_bytes(_save({"t": torch.zeros(3, dtype=dtype)}, 2))
        with pytest.raises(AttributeError):  # torch's own answer, for this test's claim
            torch.load(path, weights_only=False)
    assert _codes(tmp_path, path.read_bytes()) == {"PP117"}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_changed_byte_is_a_finding_or_read_as_torch_reads_it(data, sandbox, written, tmp_path):
    # Promise: whatever one changed, dropped or added byte does to a file torch.save wrote,
    # ppaux refuses it, reports it, or reads what torch.load reads from it.
    changed = bytearray(written)
    at = data.draw(st.integers(0, len(written) - 1), label="offset")
    how = data.draw(st.sampled_from(["set", "drop", "insert"]), label="how")
    byte = data.draw(st.integers(0, 255), label="byte")
    if how == "set":
        changed[at] = byte
    elif how == "drop":
        del changed[at]
    else:
        changed.insert(at, byte)
    _keeps_the_promise(tmp_path, bytes(changed), sandbox)


def _keeps_the_promise(tmp_path: Path, data: bytes, sandbox: harness.Sandbox) -> None:
    """A clean file is read as torch reads it; a file whose only finding is a PP118 warning
    (torch reads the same values) too."""
    path = tmp_path / "mutant.pt"
    path.write_bytes(data)
    ours, theirs = harness.ppaux_view(str(path)), sandbox.load(path)
    problem = harness.compare(ours, theirs)
    assert problem is None, problem
    if ours.codes == {"PP118"} and theirs["outcome"] == "loaded":
        deviation = read_dump(str(path)).deviation
        assert deviation is not None
        if not deviation.severe:
            assert ours.value == theirs["value"], deviation


def _edited(data: bytes, draw: st.DataObject) -> bytes:
    """``data`` with one of its parts rewritten as another writer (or a hand) might."""
    spans = _spans(data)
    parts = [data[start:end] for start, end in spans] + [data[spans[4][1] :]]
    protocol = data[1]
    edit = draw.draw(
        st.sampled_from(["header protocol", "system info", "keys", "tail"]), label="edit"
    )
    if edit == "header protocol":
        index = draw.draw(st.integers(0, 2), label="pickle")
        other = draw.draw(st.integers(1, 5).filter(lambda p: p != protocol), label="protocol")
        parts[index] = pickle.dumps(pickle.loads(parts[index]), protocol=other)
    elif edit == "system info":
        info = pickle.loads(parts[2])
        field = draw.draw(st.sampled_from(["little_endian", "protocol_version", "long"]))
        if field == "long":
            info["type_sizes"]["long"] = 8
        else:
            info[field] = draw.draw(st.sampled_from([False, 1000, None]), label="value")
        parts[2] = pickle.dumps(info, protocol=protocol)
    elif edit == "keys":
        keys = pickle.loads(parts[4])
        listed = draw.draw(
            st.lists(st.sampled_from(keys), max_size=len(keys) + 1), label="listed keys"
        )
        parts[4] = pickle.dumps(listed, protocol=protocol)
    else:
        parts.append(draw.draw(st.binary(min_size=1, max_size=16), label="tail"))
    return b"".join(parts)


@pytest.fixture(scope="module")
def same_sized() -> bytes:
    # Storages of one size: listed in another order, each is read into another.
    return _save({"a": torch.arange(4.0), "b": torch.arange(4.0) + 10, "c": torch.ones(4)}, 2)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_an_edited_part_is_a_finding_or_read_as_torch_reads_it(data, sandbox, same_sized, tmp_path):
    _keeps_the_promise(tmp_path, _edited(same_sized, data), sandbox)


def test_the_json_report_of_a_legacy_file_keeps_the_schema(tmp_path):
    import json

    import jsonschema

    path = tmp_path / "legacy.pt"
    path.write_bytes(_save({"a": torch.ones(2)}, 2))
    from ppaux.dump.inspection import inspect_paths
    from ppaux.report.formats.json import render

    report = json.loads(render(inspect_paths([str(path)])))
    schema = json.loads((REPO / "docs" / "report.schema.json").read_text())
    jsonschema.validate(report, schema)
    assert [f["container"] for f in report["files"]] == ["legacy"]


def test_a_whole_module_is_refused_with_its_class_named(tmp_path):
    path = tmp_path / "module.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(torch.nn.Linear(2, 2), path, _use_new_zipfile_serialization=False)
    with pytest.raises(ReadMismatch) as info:
        read_dump(str(path))
    assert info.value.calls == ("torch.nn.modules.linear.Linear",)
    assert "module class saved by reference" in info.value.reason


def test_stdin_reads_a_legacy_file_as_the_file_itself(tmp_path):
    from ppaux.dump.dumpfile import read_dump_stream

    data = _save(_value(), 2)
    path = tmp_path / "legacy.pt"
    path.write_bytes(data)
    from_stream = read_dump_stream("<stdin>", io.BytesIO(data))
    from_file = read_dump(str(path))
    assert from_stream.container == from_file.container == "legacy"
    assert [s.data for s in from_stream.storages] == [s.data for s in from_file.storages]
    assert from_stream.deviation is None


def test_diff_compares_a_legacy_file_with_a_zip_by_value(tmp_path):
    from ppaux.dump.diff import diff_paths

    value = {"a": torch.arange(6.0).reshape(2, 3).t(), "b": torch.ones(2, dtype=torch.int32)}
    legacy, zipped, changed = tmp_path / "l.pt", tmp_path / "z.pt", tmp_path / "c.pt"
    legacy.write_bytes(_save(value, 2))
    torch.save(value, zipped)
    assert diff_paths(str(legacy), str(zipped)).findings == ()
    torch.save({**value, "b": torch.tensor([1, 2], dtype=torch.int32)}, changed)
    found = diff_paths(str(legacy), str(changed)).findings
    assert [f.key for f in found] == ["b"]


def test_tensorize_reads_a_legacy_file_and_writes_the_zip_form(tmp_path):
    from ppaux.fix import tensorize_dump

    source, out = tmp_path / "legacy.pt", tmp_path / "out.pt"
    ids = torch.arange(4)[::2]
    source.write_bytes(_save({"ids": ids, "__sampling_observer_output__.n": 5}, 2))
    result = tensorize_dump(str(source), str(out))
    assert result.written
    assert out.read_bytes()[:4] == b"PK\x03\x04"
    back = torch.load(out, weights_only=True)
    assert torch.equal(back["ids"], ids)
    assert torch.equal(back["__sampling_observer_output__.n"], torch.tensor(5))


@pytest.mark.parametrize(
    "fixture, outcome",
    [
        ("clean_output.pt", ("ok", None)),
        ("aux_list.pt", ("error", "received a non-tensor auxiliary PP output")),
    ],
)
def test_replay_reads_a_legacy_file(tmp_path, fixture, outcome):
    from ppaux.replay import ReplayOptions, Sender, replay_paths

    value = torch.load(REPO / "fixtures" / "dumps" / fixture, weights_only=True)
    path = tmp_path / fixture
    path.write_bytes(_save(value, 2))
    report = replay_paths([str(path)], ReplayOptions(sender=Sender.LEGACY))
    (result,) = report.data["results"]
    assert (result["outcome"], result["error"]) == outcome


def test_the_pickles_are_bounded_as_pickles_and_the_file_as_a_stream(tmp_path):
    from ppaux.errors import LimitExceeded
    from ppaux.limits import Limits

    path = tmp_path / "big.pt"
    path.write_bytes(_save({"a": torch.zeros(4096)}, 2))  # 16 KiB of storage after the pickles
    pickles_end = _spans(path.read_bytes())[4][1]
    assert pickles_end < 1024
    dump = read_dump(str(path), Limits(max_pickle_bytes=1024))  # the storage is past it: read
    assert dump.deviation is None and len(dump.storages[0].data) == 4 * 4096
    with pytest.raises(LimitExceeded) as info:
        read_dump(str(path), Limits(max_pickle_bytes=pickles_end - 1))
    assert info.value.limit == "max_pickle_bytes"
    with pytest.raises(LimitExceeded) as info:
        read_dump(str(path), Limits(max_pickle_bytes=1024, max_stream_bytes=8192))
    assert info.value.limit == "max_stream_bytes"


def test_keys_listed_out_of_order_are_read_in_the_listed_order(tmp_path, same_sized):
    start, end = _spans(same_sized)[4]
    keys = pickle.loads(same_sized[start:end])
    path = tmp_path / "swapped.pt"
    path.write_bytes(
        same_sized[:start]
        + pickle.dumps([keys[1], keys[0], keys[2]], protocol=2)
        + same_sized[end:]
    )
    dump = read_dump(str(path))
    assert dump.deviation is not None and not dump.deviation.severe
    theirs = _torch_reading(path, weights_only=True)
    assert harness.ppaux_view(str(path)).value == theirs
    original = tmp_path / "original.pt"
    original.write_bytes(same_sized)
    assert theirs != _torch_reading(original, weights_only=True)  # the swap did move values


def test_a_key_that_is_no_address_is_a_warning_torch_reads_the_same():
    # The fixture's one storage key is '0' (in its key list too): torch keeps one storage per
    # key whatever its text, so it reads what ppaux reads.
    path = REPO / "fixtures" / "corrupt" / "legacy_format.pt"
    dump = read_dump(str(path))
    assert dump.deviation is not None and not dump.deviation.severe
    assert "storage key '0' is not an address" in dump.deviation.what
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = harness.describe(torch.load(path, weights_only=True))
    assert harness.ppaux_view(str(path)).value == theirs


@pytest.mark.parametrize("location", [b"foo", b"CPU", b"xla"])
def test_a_location_torch_cannot_restore_is_refused_as_torch_refuses_it(
    tmp_path, written, location
):
    cpu = b"X\x03\x00\x00\x00cpu"
    assert cpu in written
    data = written.replace(cpu, b"X\x03\x00\x00\x00" + location)
    path = tmp_path / "moved.pt"
    path.write_bytes(data)
    for weights_only in (True, False):
        with pytest.raises(Exception, match="restore"):
            torch.load(path, weights_only=weights_only)
    assert _codes(tmp_path, data) == {"PP117"}
