"""A Parameter whose ``__dict__`` holds ``requires_grad``: torch.save writes that dict as the
state of ``_rebuild_parameter_with_state``, and torch.load's ``setattr`` sets the Parameter's
requires_grad from it. ppaux calls the file as written and describes requires_grad as torch
reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ppaux.dump import inspect_paths, read_dump

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("value", [False, True])
def test_requires_grad_in_a_parameter_dict_is_read_as_torch_reads_it(
    tmp_path: Path, value: bool
) -> None:
    param = torch.nn.Parameter(torch.ones(3), requires_grad=not value)
    param.__dict__["requires_grad"] = value
    path = tmp_path / "param.pt"
    torch.save({"p": param}, path)
    assert b"_rebuild_parameter_with_state" in path.read_bytes()
    loaded = torch.load(path, weights_only=True)["p"]
    assert loaded.requires_grad is value
    assert [f.code for f in inspect_paths([str(path)]).findings] == []
    assert read_dump(str(path)).root["p"].requires_grad is value


def test_requires_grad_on_an_integer_parameter_is_refused(tmp_path: Path) -> None:
    param = torch.nn.Parameter(torch.ones(3, dtype=torch.int64), requires_grad=False)
    param.__dict__["requires_grad"] = True
    path = tmp_path / "param.pt"
    torch.save({"p": param}, path)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.load(path, weights_only=True)
    findings = inspect_paths([str(path)]).findings
    assert [f.code for f in findings] == ["PP117"], findings
