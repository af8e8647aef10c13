"""Text from the check's child records (a reason, an exit code, an error's type) reaches an error
line or a report cut at 500 characters, saying how long it was."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ppaux.observer.judge import Judge
from ppaux.observer.phrasing import cut, fault_of


def test_a_long_text_keeps_its_start_and_says_its_length():
    assert cut("x" * 10_000) == "x" * 500 + "... (10,000 characters)"


def test_a_text_of_500_characters_is_kept_whole():
    assert cut("y" * 500) == "y" * 500


def test_a_value_that_is_not_text_is_its_text():
    assert cut(None) == "None"
    assert cut(int("7" * 600)) == "7" * 500 + "... (600 characters)"


def test_a_forged_reason_reaches_the_report_cut():
    judge = Judge("forged.py:Observer", "wire", "ppaux", "ppaux", (1,), 1)
    judge.take({"event": "rank0_failed", "reason": "r" * 100_000})
    [found] = [f for f in judge.report().findings if f.code == "PP710"]
    assert found.message == (
        "making rank 0's observer failed: " + "r" * 500 + "... (100,000 characters)"
    )


def test_a_forged_fault_keeps_500_characters_of_its_type():
    fault = fault_of({"stage": "s", "error_type": "E" * 100_000, "message": "m", "side": "pp"})
    assert fault is not None
    assert fault.error_type == "E" * 500 + "... (100,000 characters)"
    assert fault.message == "m"


@given(st.text(max_size=2000))
def test_a_cut_text_is_never_longer_than_its_limit_and_a_note(text):
    assert len(cut(text)) <= 500 + len("... (2,000 characters)")
    assert cut(text).startswith(text[:500])
