"""A line that is an exception's ``repr()`` whole (PiPPy's driver logs
``RuntimeError('Got the following error when running the callback: IndexError: ...\\n\\nAt:
...')`` before the worker's traceback of it) is that exception, not a line the cut traceback
after it leaves unread. Expected values written by hand."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.tracelines import raised

_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/env/lib/python3.9/site-packages/torch/distributed/rpc/internal.py", '
    "line 206, in _run_function\n"
    "    result = python_udf.func(*python_udf.args, **python_udf.kwargs)\n"
)


def test_a_repr_line_is_its_exception():
    line = (
        "RuntimeError('callback failed: IndexError: list index out of range"
        "\\n\\nAt:\\n  x.py(1): f\\n')"
    )
    assert raised(line) == ("RuntimeError", "callback failed: IndexError: list index out of range")
    # a call that is no exception's shape, or a repr not closed, is no exception line
    assert raised("print('IndexError: x')") is None
    assert raised("RuntimeError('not closed") is None


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["RuntimeError", "ValueError", "IndexError", "pippy.errors.StageError"]),
    words=st.from_regex(r"[A-Za-z][A-Za-z0-9 :,.]{0,60}", fullmatch=True),
)
def test_a_repr_line_before_a_cut_traceback_is_the_root(tmp_path_factory, kind, words):
    log = tmp_path_factory.mktemp("repr") / "driver.log"
    log.write_text(f"{kind}({words!r})\n" + _TRACEBACK)
    report = triage_paths([str(log)])
    roots = [f for f in report.findings if f.code in ("PP801", "PP802")]
    assert len(roots) == 1 and roots[0].extra is not None
    assert roots[0].extra["exception"] == kind
    assert roots[0].location is not None and roots[0].location.line == 1
