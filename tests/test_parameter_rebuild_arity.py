"""torch's Parameter rebuilds called with another count of arguments: torch.save writes such a
call for an object whose ``__reduce_ex__`` names the rebuild (the file is torch.save's own),
and torch.load calls it in either mode, where Python refuses the count (TypeError). ppaux says
PP117 with Python's reason, never clean."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
import torch

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch


class _Call:
    def __init__(self, function: Any, args: tuple[Any, ...]) -> None:
        self.call = (function, args)

    def __reduce_ex__(self, protocol: object) -> tuple[Any, ...]:
        return self.call


@pytest.mark.parametrize(
    ("name", "count", "reason"),
    [
        (
            "_rebuild_parameter_with_state",
            3,
            "missing 1 required positional argument: 'state'",
        ),
        ("_rebuild_parameter", 4, "takes 3 positional arguments but 4 were given"),
        (
            "_rebuild_parameter",
            1,
            "missing 2 required positional arguments: 'requires_grad' and 'backward_hooks'",
        ),
    ],
)
def test_a_parameter_rebuild_given_another_count_is_torch_s_refusal(
    tmp_path: Path, sandbox, name: str, count: int, reason: str
) -> None:
    args = (torch.zeros(2), False, OrderedDict(), {})[:count]
    path = tmp_path / "param.pt"
    torch.save({"p": _Call(getattr(torch._utils, name), args)}, path)
    answer = sandbox.load(path)
    assert answer["outcome"] == "refused" and reason in answer["error"], answer
    with pytest.raises(TypeError, match=reason):
        torch.load(path, weights_only=True)
    findings = inspect_paths([str(path)]).findings
    assert [(f.code, f.severity.value) for f in findings] == [("PP117", "error")], findings
    assert f"{name}() {reason}" in findings[0].message


def test_the_counts_torch_save_writes_are_read(tmp_path: Path) -> None:
    path = tmp_path / "param.pt"
    parameter = torch.nn.Parameter(torch.ones(2))
    parameter.note = "kept"  # a Parameter with state: _rebuild_parameter_with_state, 4 args
    torch.save({"p": parameter, "q": torch.nn.Parameter(torch.zeros(3))}, path)
    assert [f.code for f in inspect_paths([str(path)]).findings] == []
