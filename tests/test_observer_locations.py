"""check-observer names the line that made the bad value, not the method's ``def``: in the
sender's ``to_pp_tensors`` when the wire already differs, in ``from_pp_tensors`` when rank 0's
rebuild changed it; and ``assert_pp_safe``'s assertion carries the same ``at: file:line``.

Each observer marks the line that makes the bad value with ``# MADE HERE``; the expected line
is found in the file's text, never by ppaux.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli

pytestmark = pytest.mark.torch

TEMPLATE = """
from dataclasses import dataclass

import torch


@dataclass
class Out:
    scores: torch.Tensor
    ids: torch.Tensor

    def copy_to_host(self, copy_tensor):
        return Out(copy_tensor(self.scores), copy_tensor(self.ids))

    def consume(self, batch, commits):
        pass

    def to_pp_tensors(self):
        tensors = {}
        tensors["scores"] = self.scores
        tensors["ids"] = SENT
        return tensors


class Obs:
    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return torch.log_softmax(logits.float(), dim=-1)

    def after_sample(self, state, token_ids):
        chosen = state.gather(-1, token_ids.view(-1, 1)).squeeze(-1)
        return Out(chosen.clone(), state.topk(2, dim=-1).indices.clone())

    def from_pp_tensors(self, tensors):
        ids = tensors["ids"]
        ids = REBUILT
        return Out(tensors["scores"], ids)
"""

CASES = {
    # to_pp_tensors sends a list: add refuses it (PP705), made in to_pp_tensors.
    "list": ("self.ids.tolist()  # MADE HERE", "ids", "PP705", "Out.to_pp_tensors"),
    # to_pp_tensors casts: rank 0 rebuilds int32 (PP711), made by the sender.
    "cast": ("self.ids.to(torch.int32)  # MADE HERE", "ids", "PP711", "Out.to_pp_tensors"),
    # from_pp_tensors slices: the wire is right, the rebuild is not (PP711), made on rank 0.
    "slice": ("self.ids", "ids[:, :1]  # MADE HERE", "PP711", "Obs.from_pp_tensors"),
}


def _observer(tmp_path: Path, case: str) -> tuple[Path, int]:
    sent, rebuilt, _, _ = CASES[case]
    text = TEMPLATE.replace("SENT", sent).replace("REBUILT", rebuilt)
    path = tmp_path / f"{case}.py"
    path.write_text(text, encoding="utf-8")
    (line,) = [n for n, t in enumerate(text.splitlines(), 1) if "# MADE HERE" in t]
    return path, line


@pytest.mark.parametrize("case", list(CASES))
def test_the_location_is_the_line_that_made_the_value(tmp_path, case):
    path, line = _observer(tmp_path, case)
    _, _, code, function = CASES[case]
    result = cli("check-observer", f"{path}:Obs", "--format", "json")
    assert result.exit_code == 1, result.output
    findings = [f for f in json.loads(result.stdout)["findings"] if f["code"] == code]
    assert findings, result.stdout
    location = findings[0]["location"]
    assert (Path(location["file"]).name, location["line"], location["function"]) == (
        path.name,
        line,
        function,
    )
    text = cli("check-observer", f"{path}:Obs", env={"COLUMNS": "1000"}).stdout
    assert f"{path.name}:{line} in {function}" in text


HELPER = """
import torch


class Out:
    def __init__(self, scores, ids):
        self.scores = scores
        self.ids = ids

    def copy_to_host(self, copy_tensor):
        return Out(copy_tensor(self.scores), copy_tensor(self.ids))

    def consume(self, batch, commits):
        pass

    def to_pp_tensors(self):
        return {"scores": self.scores, "ids": self.ids}


class Obs:
    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return torch.log_softmax(logits.float(), dim=-1)

    def after_sample(self, state, token_ids):
        chosen = state.gather(-1, token_ids.view(-1, 1)).squeeze(-1)
        return Out(chosen.clone(), state.topk(2, dim=-1).indices.clone())

    def from_pp_tensors(self, tensors):
        return Out(tensors["ids"], tensors["scores"])  # MADE HERE
"""


def test_a_constructor_the_hook_calls_is_not_the_line_to_change(tmp_path):
    """from_pp_tensors crosses the fields in its own line; the constructor's ``self.ids = ids``
    only stores what it was given."""
    path = tmp_path / "crossed.py"
    path.write_text(HELPER, encoding="utf-8")
    (line,) = [n for n, t in enumerate(HELPER.splitlines(), 1) if "# MADE HERE" in t]
    result = cli("check-observer", f"{path}:Obs", "--format", "json")
    assert result.exit_code == 1, result.output
    findings = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "PP711"]
    assert findings, result.stdout
    for found in findings:
        location = found["location"]
        assert (Path(location["file"]).name, location["line"], location["function"]) == (
            path.name,
            line,
            "Obs.from_pp_tensors",
        )


def test_the_pytest_assertion_carries_the_same_line(tmp_path, monkeypatch):
    from ppaux.testing import assert_pp_safe

    path, line = _observer(tmp_path, "cast")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError) as caught:
        assert_pp_safe(f"{path}:Obs")
    assert f"at: {path.name}:{line} in Out.to_pp_tensors" in str(caught.value)
