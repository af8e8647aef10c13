"""``explain``'s headline keeps the kind whole: within its 200 characters the pointer to triage
and where to look first give way before the kind's words do. A log from a public report
(fixtures/logs/real/README.md); expectations by hand."""

from __future__ import annotations

from pathlib import Path

from helpers import cli
from hypothesis import given
from hypothesis import strategies as st

from ppaux.triage.pastedhints import PastedHint
from ppaux_cli.commands.explain import _headline

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
PREFIX = "ppaux: error: "


def test_a_long_head_keeps_the_kind_whole() -> None:
    text = (REAL / "nccl-1686-vllm-ray-init-unhandled-system.log").read_text()
    result = cli("explain", "-", input=text)
    assert result.exit_code == 2
    head = result.stderr.splitlines()[0]
    assert head == (
        "ppaux: error: -: none of sglang's nine PP messages is in the 10 lines read from stdin: "
        "triage reads it as a communication failure at set-up; set NCCL_DEBUG=INFO"
    )
    assert len(head) <= 200


@given(
    head=st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=120),
    brief=st.lists(
        st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12), min_size=1, max_size=13
    ).map(" ".join),
    look=st.sampled_from(["", "set NCCL_DEBUG=INFO", "check nvidia-smi and the OOM killer"]),
)
def test_the_headline_is_bounded_and_keeps_a_kind_that_fits(
    head: str, brief: str, look: str
) -> None:
    line, _ = _headline(head, PastedHint(brief, "full", look))
    fits = len(PREFIX) + len(head) + 2 + len(brief) <= 200
    if fits:
        assert len(PREFIX + line) <= 200
        assert line.startswith(f"{head}: {brief}")
        rest = line[len(head) + 2 + len(brief) :]
        tail = "; 'ppaux triage' on the whole log names the root"
        allowed = {"", tail, f"; {look}", f"; {look}{tail}"} if look else {"", tail}
        assert rest in allowed
    else:  # cut between words, never below the fewest words kept
        assert line.startswith(f"{head}: ")
