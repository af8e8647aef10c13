"""A file the analysis reads is judged whole, as CPython judges it: whatever definitions the
analysis needs from it, the file's status and reason are what ``ast.parse`` of the whole file
says (a syntax error anywhere makes it unparsable, as Python would refuse to import it).

Sources are made from the fixture trees' files with one fault put in at a statement boundary,
or bytes changed at random; read whole (they are smaller than a part), then in parts far
smaller than the file. The same over the real releases' files is in
``tests/test_skew_wheels.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from skew_fixtures import TREES
from source_faults import FAULTS, cpython_verdict, damaged, with_fault

import ppaux.sglang_source.bounded_parse as bounded_parse
from ppaux.sglang_source import analyse

#: The files read for a few definitions each, by role.
FILES = {
    "scheduler": "sglang/srt/managers/scheduler_pp_mixin.py",
    "logprobs": "sglang/srt/managers/utils.py",
    "wire": "sglang/srt/distributed/parallel_state.py",
}


def verdict_of(root: Path, role: str, relative: str, data: bytes) -> tuple[str, str | None]:
    """The analysis's status and reason for the file ``relative`` of a tree where it holds
    ``data`` (the tree's other files are the fixture's)."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "tree"
        for source in root.rglob("*"):
            if source.is_file():
                target = copy / source.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read_bytes())
        (copy / relative).write_bytes(data)
        capability = analyse(str(copy))
    (file,) = [f for f in capability.files if f.role == role]
    return file.status, file.reason


#: One fault: a line put in at a statement boundary, or one byte changed.
EDITS = st.one_of(
    st.tuples(st.just("fault"), st.sampled_from(FAULTS), st.integers(0, 10_000)),
    st.tuples(
        st.just("damage"), st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), st.none()
    ),
)
TREES_READ = st.sampled_from(["v0523", "v0519", "wire_modified"])


def _edited(original: bytes, edit: tuple[str, object, int | None]) -> bytes:
    kind, what, pick = edit
    if kind == "fault":
        assert isinstance(what, bytes) and pick is not None
        return with_fault(original, what, pick)
    return damaged(original, [what])  # type: ignore[list-item]


@settings(max_examples=120, deadline=None)
@given(tree=TREES_READ, role=st.sampled_from(sorted(FILES)), edit=EDITS)
def test_the_files_status_and_reason_are_cpythons(tree, role, edit):
    """One fault anywhere in the file: the status, the message and its line are CPython's."""
    root = TREES / tree
    relative = FILES[role]
    data = _edited((root / relative).read_bytes(), edit)
    assert verdict_of(root, role, relative, data) == cpython_verdict(data, "<file>")


@settings(max_examples=120, deadline=None)
@given(
    tree=TREES_READ,
    role=st.sampled_from(sorted(FILES)),
    edit=EDITS,
    more=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=3),
    chunk=st.sampled_from([48, 256]),
)
def test_the_files_status_is_cpythons_in_parts(tree, role, edit, more, chunk):
    """The same files read in parts far smaller than the file (as a file of more than
    CHUNK_BYTES is), with any number of faults: the status is CPython's. (Which fault CPython
    names is not followed in every case where one change makes several: see
    docs/benchmarks.md, fingerprint.)"""
    root = TREES / tree
    relative = FILES[role]
    data = _edited((root / relative).read_bytes(), edit)
    if more:
        data = damaged(data, more)
    with mock.patch.object(bounded_parse, "CHUNK_BYTES", chunk):
        status, _ = verdict_of(root, role, relative, data)
    assert status == cpython_verdict(data, "<file>")[0]


def test_a_fault_far_from_every_definition_read_still_makes_the_file_unparsable():
    """The scheduler file is read for one method; a syntax error at its very end, in no
    definition read, is still the file's verdict."""
    root = TREES / "v0523"
    relative = FILES["scheduler"]
    data = (root / relative).read_bytes() + b"\ndef broken(:\n    pass\n"
    expected_line = data.count(b"\n") - 1
    assert verdict_of(root, "scheduler", relative, data) == (
        "unparsable",
        f"not valid Python: invalid syntax (line {expected_line})",
    )
