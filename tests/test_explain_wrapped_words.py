"""``ppaux explain`` words a failure the same whether its line is pasted plain or as a log
store or launcher wrote it (a table export's time and labels, a worker's logger prefix, a
container's record): the words are those of its exception line. The expected words are
written by hand."""

from __future__ import annotations

import pytest
from helpers import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_IMA = "RuntimeError: CUDA error: an illegal memory access was encountered"
_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"

#: envelopes people paste a line in
WRAPS = {
    "loki-table": '2024-05-01T10:00:01Z {{namespace="llm", pod="sglang-pp-0"}} {}',
    "vllm-worker": "(Worker_TP0 pid=3259) ERROR 04-27 12:56:07 [multiproc_executor.py:852] {}",
    "kubectl-prefix": "[pod/vllm-worker-0/vllm] 2026-04-27T12:56:07.000000007Z {}",
    "torch-rank": "[rank1]: {}",
}


def _said(line: str) -> str:
    return " ".join(cli("explain", "--", line).output.split())


@pytest.mark.parametrize("wrap", sorted(WRAPS))
@pytest.mark.parametrize(
    ("line", "words"),
    [(_IMA, "it is a shape or kernel failure"), (_OOM, "it is a memory failure")],
)
def test_a_wrapped_line_is_worded_as_its_plain_line(wrap, line, words):
    plain = _said(line)
    assert words in plain
    assert _said(WRAPS[wrap].format(line)) == plain


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod=st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True), second=st.integers(0, 59))
def test_any_table_row_around_the_line_keeps_the_plain_words(pod, second):
    row = f'2024-05-01T10:00:{second:02d}Z {{pod="{pod}"}} {_IMA}'
    assert _said(row) == _said(_IMA)
