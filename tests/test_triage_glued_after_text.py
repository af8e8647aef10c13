"""A record written after other text on the same line (a progress bar that ended in a carriage
return, or in nothing, then a rank's record): the record is read as the line it would have
been alone; an exception's name after other text that is no progress bar, without a rank's
tag, stays in its line."""

from __future__ import annotations

from helpers import triage_roots
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage.glued import glued_at

_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 1 has a "
    "total capacity of 23.43 GiB of which 210.06 MiB is free."
)
_BAR = "".join(f"\r  {n}%|▏         | {n}/620 [00:52<50:17,  4.95s/it]" for n in range(3))


def test_a_ranks_exception_after_a_bars_carriage_returns_is_that_ranks_root(tmp_path):
    assert triage_roots(tmp_path, f"{_BAR}[rank1]: {_OOM}\n") == [("PP802", "rank 1", "memory")]


def test_a_ranks_exception_after_a_bar_without_carriage_return_is_read(tmp_path):
    text = f"Epoch 1: 10%  loss=2.08 [rank1]: {_OOM}\n"
    assert triage_roots(tmp_path, text) == [("PP802", "rank 1", "memory")]


def test_a_kernel_fault_after_a_bar_keeps_its_rank(tmp_path):
    text = f"{_BAR}[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert triage_roots(tmp_path, text) == [("PP802", "rank 3", "shape-kernel")]


def test_prose_or_an_unknown_prefix_before_an_exception_makes_no_record():
    assert glued_at(f"we then saw {_OOM}") is None
    assert glued_at(f"]A{_OOM}") is None
    assert glued_at(f"we saw 50% at [00:52]{_OOM}") is None
    assert glued_at(f"{_BAR}{_OOM}") == len(_BAR)  # a bar's update ends where the record starts
    assert glued_at(f"Receive: obj=GenerateReqInput(text='[rank0]: {_OOM}', rid='a')") is None


def test_a_tag_at_the_lines_start_or_twice_over_is_not_glued():
    assert glued_at(f"[rank1]: {_OOM}") is None
    assert glued_at(f"[rank1]:[rank1]: {_OOM}") is None
    bar = "  3%|▏ | 3/620 [00:53<50:00]"
    assert glued_at(f"{bar}[rank0]:[E ProcessGroupNCCL.cpp:616] Watchdog") == len(bar)


@settings(max_examples=60, deadline=None)
@given(
    st.text(
        alphabet=st.characters(
            codec="utf-8", exclude_characters="\n\r[]:", exclude_categories=("Cs", "Cc")
        ),
        min_size=1,
        max_size=40,
    ).filter(str.strip),
    st.integers(min_value=0, max_value=63),
)
def test_any_text_before_a_rank_tag_leaves_the_record_at_the_tag(before, rank):
    text = f"{before}[rank{rank}]: {_OOM}"
    assert glued_at(text) == len(before)
