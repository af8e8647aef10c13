"""Each error page's example: the code that it says raises the message raises exactly that
message in the transport (ppaux's reference copy of sglang's add and pop), and the code fixed
goes through. The pages, ``explain`` and the JSON show the same pair."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import REPO, cli

from ppaux.replay.transport import (
    add_auxiliary_output_to_pp_tensors,
    pop_auxiliary_output_from_pp_tensors,
)
from ppaux.report.error_pages import ERROR_PAGES
from ppaux.sglang import search_message

pytestmark = pytest.mark.torch

IDS = [page.message_id for page in ERROR_PAGES]


def _send(code: str, side: str) -> object:
    """Run ``code``, then hand what it defines to add (last stage) or pop (rank 0)."""
    names: dict[str, object] = {"torch": torch}
    exec(compile(code, "example", "exec"), names)
    if side == "add":
        tensors = names.get("tensors", {})
        add_auxiliary_output_to_pp_tensors(tensors, names["output"])
        return tensors
    return pop_auxiliary_output_from_pp_tensors(names["message"], names["observer"])


@pytest.mark.parametrize("page", ERROR_PAGES, ids=IDS)
def test_the_example_raises_its_message_and_the_fixed_code_does_not(page):
    with pytest.raises(RuntimeError) as raised:
        _send(page.example.raises, page.side)
    found = search_message(str(raised.value))
    assert found is not None and found.message.id == page.message_id, str(raised.value)
    done = _send(page.example.fixed, page.side)
    if page.side == "add":
        assert done and all(torch.is_tensor(v) for v in done.values())  # type: ignore[union-attr]
    else:
        assert done is not None


def test_the_pages_explain_and_json_show_the_same_example():
    assert sorted(IDS) == sorted(
        [
            "add-unsupported",
            "add-empty",
            "add-bad-name",
            "add-not-tensor",
            "add-duplicate",
            "pop-no-observer",
            "pop-unsupported",
            "pop-non-tensor",
            "pop-not-reconstructed",
        ]
    )
    for page in ERROR_PAGES:
        doc = (REPO / "docs" / "errors" / f"{page.message_id}.md").read_text(encoding="utf-8")
        section = doc.split("## Example\n", 1)[1].split("\n## ", 1)[0]
        assert f"```python\n{page.example.raises}```" in section
        assert f"```python\n{page.example.fixed}```" in section
        assert "(../observers.md#a-worked-example)" in section
        shown = json.loads(
            cli("explain", page.text.replace("{name!r}", "'scores'"), "-f", "json").stdout
        )
        assert shown["example"] == {"raises": page.example.raises, "fixed": page.example.fixed}
