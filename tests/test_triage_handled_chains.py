"""A chain's header after a piece of a traceback whose header the paste lost (its caret line,
then its exception line) joins the traceback below it: one process's chained traceback, never a
second process's failure. Expected values are written by hand from reading the logs (the real
one in fixtures/logs/real/, its source in the README)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.handledchains import chained_above

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
#: Model-Optimizer#220: an illegal memory access, then the executor's traceback handling it, cut.
MODELOPT = REAL / "modelopt-220-trtllm-ima-during-handling.log"

_PIECE = (
    "    out = self.model(x)\n"
    "          ^^^^^^^^^^^^^\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "\n"
)
_HANDLING = "During handling of the above exception, another exception occurred:\n\n"
_BELOW = (
    "Traceback (most recent call last):\n"
    '  File "/app/executor.py", line 278, in _event_loop_wrapper\n'
    "    self.event_loop()\n"
)


def _failures(path: Path) -> list[tuple[str, int, str | None]]:
    report = triage_paths([str(path)])
    assert not report.problems
    return sorted(
        (f.code, f.location.line, (f.extra or {}).get("exception"))
        for f in report.findings
        if f.code in ("PP802", "PP803") and f.location is not None
    )


def test_a_cut_traceback_handling_a_piece_s_exception_is_the_same_process():
    assert _failures(MODELOPT) == [("PP802", 2, "RuntimeError")]


def test_a_complete_traceback_handling_a_piece_s_exception_carries_it_in_its_chain(tmp_path):
    path = tmp_path / "chain.log"
    path.write_text(_PIECE + _HANDLING + _BELOW + "ValueError: bad response\n", encoding="utf-8")
    report = triage_paths([str(path)])
    roots = [f for f in report.findings if f.code in ("PP802", "PP803")]
    assert [(f.code, (f.extra or {}).get("exception")) for f in roots] == [("PP802", "ValueError")]


def test_without_a_chain_s_header_the_two_stay_two(tmp_path):
    path = tmp_path / "two.log"
    path.write_text(_PIECE + "some other line\n\n" + _BELOW, encoding="utf-8")
    assert [code for code, _, _ in _failures(path)] == ["PP802", "PP803"]


@settings(max_examples=50, deadline=None)
@given(
    previous=st.lists(st.binary(max_size=80), max_size=6),
    raw=st.binary(max_size=80),
    header=st.sampled_from(
        [
            None,
            _HANDLING.encode(),
            b"The above exception was the direct cause of the following exception:\n",
        ]
    ),
    traceback=st.booleans(),
)
def test_only_a_chain_s_header_above_a_traceback_joins(previous, raw, header, traceback):
    if header is not None:
        previous = [*previous, header]
    if traceback:
        raw += b"Traceback (most recent call last):"
    said = any(
        words in p
        for p in previous
        for words in (b"During handling of the above exception", b"The above exception was the")
    )
    assert chained_above(raw, previous) == (b"Traceback" in raw and said)


def test_a_chain_exported_newest_first_is_still_one_process(tmp_path):
    lines = MODELOPT.read_text(encoding="utf-8").splitlines()
    records = [
        {"textPayload": text, "timestamp": f"2025-06-01T10:00:00.{n:06d}Z"}
        for n, text in enumerate(lines)
    ]
    path = tmp_path / "newest-first.json"
    path.write_text(json.dumps(records[::-1], indent=2) + "\n", encoding="utf-8")
    report = triage_paths([str(path)])
    assert not report.problems
    codes = [f.code for f in report.findings if f.code in ("PP802", "PP803")]
    assert codes == ["PP802"]


@given(
    words=st.sampled_from(
        [
            ("RuntimeError", "CUDA out of memory. Tried to allocate 1024.00 MiB"),
            ("ValueError", "bad response"),
        ]
    )
)
def test_a_traceback_cut_while_handling_names_the_handled_exception_in_its_data(words):
    # the data say what the headline says: the exception the cut traceback was raised from
    exception, message = words
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/train.py", line 9, in main\n'
        "    step()\n"
        f"{exception}: {message}\n\n" + _HANDLING + _BELOW
    )
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "handled.log"
        path.write_text(text, encoding="utf-8")
        (root,) = [f for f in triage_paths([str(path)]).findings if f.code == "PP802"]
    assert root.extra is not None
    assert (root.extra["exception"], root.extra["message"]) == (exception, message)
    assert f"{exception}: {message}" in root.message
