"""``explain``'s headline always ends with the pointer to triage: within its 200 characters the
kind's words are cut first (between words, to 32 characters at the least), then where to look
first gives way. A log from a public report
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


TAIL = "; 'ppaux triage' on the whole log names the root"


def test_a_long_head_keeps_the_pointer_to_triage() -> None:
    text = (REAL / "nccl-1686-vllm-ray-init-unhandled-system.log").read_text()
    result = cli("explain", "-", input=text)
    assert result.exit_code == 2
    head, *under = result.stderr.splitlines()
    assert head == (
        "ppaux: error: -: none of sglang's nine PP messages is in the 10 lines read from stdin: "
        "triage reads it as a communication...; set NCCL_DEBUG=INFO" + TAIL
    )
    assert len(head) <= 200
    # the kind's words cut from the headline stand whole under it
    assert "communication failure at set-up" in " ".join(" ".join(under).split())


@given(
    head=st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=120),
    brief=st.lists(
        st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12), min_size=1, max_size=13
    ).map(" ".join),
    look=st.sampled_from(["", "set NCCL_DEBUG=INFO", "check nvidia-smi and the OOM killer"]),
)
def test_the_headline_is_bounded_and_keeps_the_pointer(head: str, brief: str, look: str) -> None:
    line, _ = _headline(head, PastedHint(brief, "full", look))
    assert line.startswith(head) and line.endswith(TAIL)
    whole = f"{head}: {brief}; {look}{TAIL}" if look else f"{head}: {brief}{TAIL}"
    if len(PREFIX + whole) <= 200:
        assert line == whole
        return
    if len(PREFIX + head + TAIL) <= 200:
        assert len(PREFIX + line) <= 200
    middle = line[len(head) : -len(TAIL)]
    if look and len(PREFIX + head) + 2 + 32 + len(f"; {look}{TAIL}") <= 200:
        assert middle.endswith(f"; {look}")  # where to look first stays while 32 fit
    kind = middle[: -len(f"; {look}")] if look and middle.endswith(f"; {look}") else middle
    # the kind cut between words (its first words, then '...'), or left to the lines under it
    if kind:
        assert kind.startswith(": ")
        kind = kind[2:]
    if kind and kind != brief:
        assert kind.endswith("...") and brief.startswith(kind[:-3])
        assert brief[len(kind) - 3] == " "
