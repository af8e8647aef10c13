"""What torch.save of each release 2.0 to 2.14.1 writes around its pickle: the files under
fixtures/releases/ were written by the real torch of each release (see the README there).
Each is as its release writes it (no PP118), and torch 2.13.0 reads it with the values
saved; the records of one release in the order of another are not as any release writes
them (PP118, the first record out of place), though torch.load reads them the same."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import torch
from helpers import REPO

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch

RELEASES = REPO / "fixtures" / "releases"
SAVED = sorted(RELEASES.glob("v*/*.pt"))


def _codes(path: Path) -> list[tuple[str, str, str]]:
    return [(f.code, f.severity.value, f.message) for f in inspect_paths([str(path)]).findings]


def test_every_release_is_represented() -> None:
    releases = {path.parent.name for path in SAVED}
    assert {"v2.0.1", "v2.1.2", "v2.4.1", "v2.6.0", "v2.13.0", "v2.14.1"} <= releases


@pytest.mark.parametrize("path", SAVED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_release_s_own_save_is_as_written(path: Path) -> None:
    assert _codes(path) == []
    loaded = torch.load(path, weights_only=True)
    if path.stem == "twelve_storages":
        assert [float(t[0]) for t in loaded.values()] == [float(i) for i in range(12)]
    elif path.stem == "linear_state_dict":
        assert list(loaded) == ["weight", "bias"]
    else:
        assert torch.equal(loaded["x"], torch.arange(4.0))


def test_the_layouts_differ_as_modelled() -> None:
    """The fixtures hold what the model says: 2.0 no byteorder nor id, keys sorted as
    strings up to 2.6, .format_version and .storage_alignment from 2.7."""

    def names(release: str) -> list[str]:
        with zipfile.ZipFile(RELEASES / release / "twelve_storages.pt") as archive:
            return [n.split("/", 1)[1] for n in archive.namelist()]

    as_strings = [f"data/{k}" for k in sorted(str(i) for i in range(12))]
    in_use = [f"data/{i}" for i in range(12)]
    assert names("v2.0.1") == ["data.pkl", *as_strings, "version"]
    tail = ["version", ".data/serialization_id"]
    assert names("v2.6.0") == ["data.pkl", "byteorder", *as_strings, *tail]
    head = ["data.pkl", ".format_version", ".storage_alignment", "byteorder"]
    assert names("v2.14.1") == [*head, *in_use, *tail]


def _rewritten(source: Path, target: Path, order: list[str]) -> Path:
    """``source``'s records written again by torch's own stream writer, in ``order`` (the
    writer adds version, byteorder and the serialization id as it closes)."""
    with zipfile.ZipFile(source) as archive:
        bodies = {n.split("/", 1)[1]: archive.read(n) for n in archive.namelist()}
    writer = torch._C.PyTorchFileWriter(str(target))
    for name in order:
        writer.write_record(name, bodies[name], len(bodies[name]))
    writer.write_end_of_file()
    del writer
    return target


@pytest.mark.parametrize(
    ("release", "head", "sort", "want"),
    [
        ("v2.6.0", ["data.pkl", "byteorder"], False, ("record 4", "data/2", "data/10")),
        (
            "v2.14.1",
            ["data.pkl", ".format_version", ".storage_alignment", "byteorder"],
            True,
            ("record 6", "data/10", "data/2"),
        ),
    ],
    ids=["2.6-records-numeric-order", "2.14-records-string-order"],
)
def test_two_releases_mixed_are_not_as_written(
    tmp_path: Path, release: str, head: list[str], sort: bool, want: tuple[str, str, str]
) -> None:
    keys = [str(i) for i in range(12)]
    order = head + [f"data/{k}" for k in (sorted(keys) if sort else keys)]
    path = _rewritten(RELEASES / release / "twelve_storages.pt", tmp_path / "mixed.pt", order)
    loaded = torch.load(path, weights_only=True)
    assert [float(t[0]) for t in loaded.values()] == [float(i) for i in range(12)]
    record, have, wanted = want
    assert _codes(path) == [
        (
            "PP118",
            "warning",
            f"not as torch.save writes it: {record} ('mixed/{have}'): "
            f"torch.save writes 'mixed/{wanted}' here",
        )
    ]


LEAF = "a leaf Variable that requires grad is being used in an in-place operation"


@pytest.mark.parametrize(
    "path", sorted(RELEASES.glob("v*/refused/float8_*.pt")), ids=lambda p: p.parent.parent.name
)
def test_a_float8_tensor_requiring_grad_is_torch_s_refusal(path: Path, sandbox) -> None:
    """torch.save writes a float8 tensor under _rebuild_tensor_v3, which makes an empty tensor
    that requires grad and then calls set_ on it: torch refuses the file in both modes."""
    answer = sandbox.load(path)
    assert answer["outcome"] == "refused" and LEAF in answer["error"], answer
    with pytest.raises(RuntimeError, match=LEAF):
        torch.load(path, weights_only=True)
    codes = _codes(path)
    assert [(code, severity) for code, severity, _ in codes] == [("PP117", "error")], codes
    assert "set_" in codes[0][2] and "requires grad" in codes[0][2], codes
