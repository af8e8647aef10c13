"""PP104's level, decided by what torch does with the file: torch.load reads a key one or two
slips from the auxiliary prefix as written, in both modes, so the file is read as ppaux
describes it and is as torch.save writes it; the misspelling matters to sglang only, whose pop
leaves the entry where it is, without an error. A warning: exit 0 at the default gate, 1 under
``--fail-on warning``."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import cli

pytestmark = pytest.mark.torch

_KEY = "__sampling_obsever_output__.scores"  # a letter dropped


def test_a_misspelled_prefix_is_read_as_written_and_a_warning(tmp_path):
    path = tmp_path / "near.pt"
    torch.save({"next_token_ids": torch.tensor([3, 4]), _KEY: torch.ones(2)}, path)
    for weights_only in (True, False):
        read = torch.load(path, weights_only=weights_only)
        assert list(read) == ["next_token_ids", _KEY]
        assert read[_KEY].tolist() == [1.0, 1.0]
    result = cli("inspect", str(path), "--format", "json")
    found = {f["code"]: f for f in json.loads(result.stdout)["findings"]}
    assert set(found) == {"PP104"}, found
    assert found["PP104"]["severity"] == "warning"
    assert result.exit_code == 0
    assert cli("inspect", str(path), "--fail-on", "warning").exit_code == 1
