"""torch.multiprocessing's ``ProcessRaisedException`` is its parent's relay of a child's
failure (``-- Process N terminated with the following error:``, then the child's own
traceback): the root is that child's failure, named as the relay names it; where the child's
traceback is cut before its exception, the child failed and the relay carries its error."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_PARENT = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/launch.py", line 79, in main\n'
    "    torch.multiprocessing.spawn(run, nprocs=8)\n"
    '  File "/usr/lib/python3/torch/multiprocessing/spawn.py", line 160, in join\n'
    "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
    "torch.multiprocessing.spawn.ProcessRaisedException: \n"
    "\n"
    "-- Process {index} terminated with the following error:\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/torch/multiprocessing/spawn.py", line 69, in _wrap\n'
    "    fn(i, *args)\n"
    '  File "/srv/app/train.py", line 40, in run\n'
)
_OWN = "    load()\nValueError: no weights for layer 3\n"


def _roots(text: str) -> list[tuple[str, str | None, str | None]]:
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    return [
        (f.code, f.key, f.extra.get("exception"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


@settings(max_examples=30, deadline=None)
@given(index=st.integers(0, 4095))
def test_the_child_s_own_failure_is_the_root(index):
    text = _PARENT.format(index=index) + _OWN
    assert _roots(text) == [("PP802", f"Process {index}", "ValueError")]


@settings(max_examples=30, deadline=None)
@given(index=st.integers(0, 4095))
def test_a_child_s_traceback_cut_is_still_the_child_s_failure(index):
    report = triage_paths(
        ["run.log"], {"run.log": io.BytesIO(_PARENT.format(index=index).encode())}
    )
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.key == f"Process {index}"
    assert root.extra["exception"] is None
    assert "ProcessRaisedException relays" in root.message
    assert not [f for f in report.findings if f.code == "PP803"]


def test_another_exception_s_words_name_no_child():
    text = _PARENT.format(index=1).replace("ProcessRaisedException: ", "ValueError: ") + _OWN
    assert ("PP802", "Process 1", "ValueError") not in _roots(text)
