"""Replay reproduces what a capture recorded by default: a capture of rank 0's failing pop is
sent as rank 0 received it; captures at add and plain dumps keep the validating sender."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ppaux_process

pytestmark = pytest.mark.torch

REPO = Path(__file__).resolve().parent.parent
POP_CAPTURE = next((REPO / "fixtures" / "walkthrough").glob("capture-*-pop.pt"))
DUMPS = REPO / "fixtures" / "dumps"
NON_TENSOR = "received a non-tensor auxiliary PP output"


def replay(*args: str) -> tuple[int, dict]:
    done = ppaux_process("replay", "--format", "json", *args)
    return done.returncode, json.loads(done.stdout)


def test_a_pop_capture_reproduces_by_default():
    code, document = replay(str(POP_CAPTURE))
    assert code == 1
    [result] = document["results"]
    assert (result["stage"], result["error"], result["reproduced"]) == ("pop", NON_TENSOR, True)
    assert result["sender"] == "legacy"
    codes = [f["code"] for f in document["findings"]]
    assert codes == ["PP401", "PP410"]
    [pp410] = [f for f in document["findings"] if f["code"] == "PP410"]
    assert pp410["severity"] == "info"
    assert "auxiliary PP output 'scores' is not a tensor" in pp410["message"]
    assert "ppaux check-skew" in pp410["message"]


def test_a_named_sender_is_kept():
    code, document = replay("--sender", "validating", str(POP_CAPTURE))
    assert code == 1
    [result] = document["results"]
    assert (result["stage"], result["reproduced"]) == ("add", False)
    assert "sender" not in result
    assert [f["code"] for f in document["findings"]] == ["PP402", "PP408"]


@pytest.mark.parametrize("name", ["capture_add_error.pt", "aux_list.pt"])
def test_add_captures_and_plain_dumps_keep_the_validating_sender(name: str):
    _, document = replay(str(DUMPS / name))
    [result] = document["results"]
    assert result["stage"] == "add"
    assert "sender" not in result
    assert "PP410" not in [f["code"] for f in document["findings"]]


def test_the_text_header_says_which_sender_each_dump_had():
    done = ppaux_process("replay", str(POP_CAPTURE), str(DUMPS / "aux_list.pt"))
    # the table's title, after the verdict and the findings: its words, wrapped at the width
    at = done.stdout.index("\nreplay: ") + 1
    first = " ".join(done.stdout[at:].split("\n\n", 1)[0].split())
    assert first.startswith(
        "replay: 2 dump(s) on cpu, sender validating (legacy for 1 capture(s) of rank 0's "
        "failing pop, as recorded), transport none"
    )
