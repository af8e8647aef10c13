"""Two workers' logger records flattened onto one line, each a traceback whose newlines were
lost: split back into each worker's lines, each failure read whole. Expected lines written by
hand."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.flattened import split_lines

_GLUED = (
    "(VllmWorkerProcess pid=350) ERROR 01-29 20:00:47 multiproc_worker_utils.py:240] "
    'Traceback (most recent call last):   File "/v/w.py", line 1, in f     g() '
    "ValueError: shape mismatch (a) "
    "(VllmWorkerProcess pid=351) ERROR 01-29 20:00:47 multiproc_worker_utils.py:240] "
    'Traceback (most recent call last):   File "/v/w.py", line 1, in f     g() '
    "torch.OutOfMemoryError: CUDA out of memory."
)


def test_two_glued_records_split_into_each_workers_lines():
    assert split_lines(_GLUED) == [
        "(VllmWorkerProcess pid=350) Traceback (most recent call last):",
        '(VllmWorkerProcess pid=350)   File "/v/w.py", line 1, in f',
        "(VllmWorkerProcess pid=350)     g()",
        "(VllmWorkerProcess pid=350) ValueError: shape mismatch (a)",
        "(VllmWorkerProcess pid=351) Traceback (most recent call last):",
        '(VllmWorkerProcess pid=351)   File "/v/w.py", line 1, in f',
        "(VllmWorkerProcess pid=351)     g()",
        "(VllmWorkerProcess pid=351) torch.OutOfMemoryError: CUDA out of memory.",
    ]


def test_glued_records_are_read_whole_not_cut(tmp_path):
    log = tmp_path / "glued.log"
    log.write_text(_GLUED + "\n")
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.key == "VllmWorkerProcess pid=351"
    assert root.extra is not None and root.extra["exception"] == "torch.OutOfMemoryError"
    assert not [f for f in report.findings if f.code == "PP810"]  # nothing read as cut


_WORDS = st.lists(
    st.sampled_from(["shape", "mismatch", "ValueError:", "a.py", "x", "Traceback"]),
    min_size=1,
    max_size=6,
).map(" ".join)


@given(_WORDS, _WORDS)
def test_each_glued_record_is_its_workers_line(one, two):
    text = (
        f"(W pid=1) ERROR 01-29 20:00:47 a.py:1] {one} (W pid=2) ERROR 01-29 20:00:48 a.py:2] {two}"
    )
    assert split_lines(text) == [f"(W pid=1) {one}", f"(W pid=2) {two}"]
