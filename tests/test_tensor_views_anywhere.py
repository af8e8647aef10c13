"""A tensor whose storage is too short for its view makes torch.load fail wherever the tensor
sits: saved bare, in a list at the file's top, or deep in a dict that is no tensor dict. inspect
says so (PP116, an error) in every case, as it does for a tensor in a payload. Each file is one
torch.save wrote, handed the rebuild call torch.save writes for a tensor, with a longer size."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import pytest
import torch

from ppaux.dump import inspect_paths
from ppaux.report import Severity

pytestmark = pytest.mark.torch


class _Rebuilt:
    """Pickled as ``_rebuild_tensor_v2(storage, 0, size, (1,), False, OrderedDict())``."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __reduce_ex__(self, protocol: int) -> tuple[object, tuple[object, ...]]:
        from torch._utils import _rebuild_tensor_v2

        storage = torch.storage.TypedStorage(
            wrap_storage=torch.zeros(4).untyped_storage(), dtype=torch.float32, _internal=True
        )
        return _rebuild_tensor_v2, (storage, 0, (self.size,), (1,), False, OrderedDict())


PLACES = {
    "bare": (lambda t: t, None),
    "list-at-top": (lambda t: [1, {"x": [t]}], None),
    "tuple-in-dict": (lambda t: {"a": {"b": (t, 1)}}, "a"),
    "payload": (lambda t: {"a": t, "next_token_ids": torch.arange(2)}, "a"),
}


def _saved(tmp_path: Path, place: str, size: int) -> Path:
    path = tmp_path / f"{place}.pt"
    torch.save(PLACES[place][0](_Rebuilt(size)), path)
    return path


@pytest.mark.parametrize("place", list(PLACES))
def test_a_tensor_past_its_storage_is_an_error_wherever_it_sits(tmp_path, place):
    path = _saved(tmp_path, place, 6)
    with pytest.raises(RuntimeError, match="not resizable"):
        torch.load(path, weights_only=False)
    report = inspect_paths([str(path)])
    [past] = [f for f in report.findings if f.code == "PP116"]
    assert past.severity is Severity.ERROR and "element 6 of a storage of 4" in past.message
    assert past.key == PLACES[place][1], past


@pytest.mark.parametrize("place", list(PLACES))
def test_a_tensor_within_its_storage_is_no_error_wherever_it_sits(tmp_path, place):
    path = _saved(tmp_path, place, 4)
    torch.load(path, weights_only=False)
    report = inspect_paths([str(path)])
    assert not [f for f in report.findings if f.severity is Severity.ERROR], report.findings
