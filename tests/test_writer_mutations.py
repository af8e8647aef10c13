"""The writer grammar's promise as a property: a file ``torch.save`` wrote (this torch), edited
in place one field or opcode at a time (an opcode swapped for another of the same argument
shape, a memo index changed, a record renamed, a field of a local header or of the central
directory changed), is either a finding (never clean) or read by ppaux exactly as torch.load
reads it; ppaux refuses it as unreadable (exit 2) or as refused by torch (PP117) only where
torch.load(weights_only=False) refuses it too.

torch.load runs in the harness's sandbox (``fuzz/torch_sandbox.py``), never in this process.
"""

from __future__ import annotations

import random
import sys

import pytest
from helpers import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_file

pytestmark = pytest.mark.torch

sys.path.insert(0, str(REPO / "fuzz"))

import torch_differential as harness  # noqa: E402
import writer_mutations  # noqa: E402

_WRITTEN: list[bytes] = []


def _written() -> list[bytes]:
    if not _WRITTEN:
        _WRITTEN.extend(harness.seeds())
    return _WRITTEN


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    mutation=st.sampled_from(writer_mutations.WRITER_MUTATIONS),
    which=st.integers(0, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_an_edit_in_place_is_a_finding_or_read_as_torch_reads_it(
    mutation, which, seed, sandbox, tmp_path_factory
):
    written = _written()
    base = written[which % len(written)]
    data = mutation(random.Random(seed), base, base)
    path = tmp_path_factory.mktemp("edit") / "edited.pt"
    path.write_bytes(data)
    ours, theirs = harness.ppaux_view(str(path)), sandbox.load(path)
    problem = harness.compare(ours, theirs)
    assert problem is None, (mutation.__name__, problem)
    if ours.verdict == "refused" and theirs["outcome"] == "loaded":
        # A file torch reads is never "unreadable" nor "refused by torch": at most a finding
        # that ppaux does not read it the way torch does (PP202).
        assert ours.codes and ours.codes != {"PP117"}, (mutation.__name__, ours.reason)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    mutation=st.sampled_from(writer_mutations.GRAMMAR_BREAKS),
    which=st.integers(0, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_an_edit_out_of_the_grammar_is_never_clean(
    mutation, which, seed, sandbox, tmp_path_factory
):
    # A batch the pickler never writes, NONE POP, a tensor's hooks fetched from the memo:
    # torch reads each as it reads the file torch.save wrote, and ppaux says where it left
    # the writer's grammar (PP118).
    written = _written()
    base = written[which % len(written)]
    try:
        data = mutation(random.Random(seed), base, base)
    except ValueError:  # nothing to edit in this file (no GET, one tensor)
        return
    folder = tmp_path_factory.mktemp("break")
    (folder / "base.pt").write_bytes(base)
    (folder / "edited.pt").write_bytes(data)
    ours = harness.ppaux_view(str(folder / "edited.pt"))
    _, findings = inspect_file(str(folder / "edited.pt"))
    assert "PP118" in {f.code for f in findings}, (mutation.__name__, ours)
    theirs, expected = sandbox.load(folder / "edited.pt"), sandbox.load(folder / "base.pt")
    assert theirs["outcome"] == expected["outcome"], (mutation.__name__, theirs)
    assert theirs["value"] == expected["value"], mutation.__name__


def test_each_edit_changes_the_file_and_keeps_its_size():
    # The mutations edit in place: same length, some byte other (checked for every mutation
    # over a few seeds, so a mutation that silently did nothing would fail here).
    base = _written()[0]
    for mutation in writer_mutations.WRITER_MUTATIONS:
        edited = [mutation(random.Random(seed), base, base) for seed in range(8)]
        assert all(len(e) == len(base) for e in edited), mutation.__name__
        assert any(e != base for e in edited), mutation.__name__


def _pickle_record_edited(edit) -> bytes:
    """A file torch.save wrote with ``edit(out, info, central, start)`` applied to its pickle
    record (``out`` a bytearray of the file)."""
    data = _written()[0]
    info, central, start = next(
        e for e in writer_mutations._entries(data) if e[0].filename.endswith("data.pkl")
    )
    out = bytearray(data)
    edit(out, info, central, start)
    return bytes(out)


def _wrong_central_crc(out, info, central, start):
    out[central + 16 : central + 20] = b"\x39\x30\x00\x00"


def _other_local_name(out, info, central, start):
    at = info.header_offset + 30 + info.filename.index("/")
    out[at] = ord(".")  # archive.data.pkl in the local header, archive/data.pkl in the directory


@pytest.mark.parametrize("edit", [_wrong_central_crc, _other_local_name])
def test_what_torchs_zip_reader_skips_is_a_finding_not_a_refusal(edit, sandbox, tmp_path):
    # torch's zip reader checks no CRC and takes a record's name from the central directory
    # only; Python's zipfile refuses both. ppaux reads as torch does and reports the edit.
    path = tmp_path / "edited.pt"
    path.write_bytes(_pickle_record_edited(edit))
    ours, theirs = harness.ppaux_view(str(path)), sandbox.load(path)
    assert theirs["outcome"] == "loaded", theirs
    assert ours.verdict == "findings" and ours.codes == {"PP118"}, ours
    assert ours.value == theirs["value"]
