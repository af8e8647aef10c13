"""Tracebacks of two processes interleaved behind a prefix ppaux does not know (learned from
the text before each traceback's header) are told apart by what the prefix names, as known
prefixes keep processes apart; the prefix's time, which changes from line to line, names no
process. Expected results are written by hand."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

OOM = [
    "Traceback (most recent call last):",
    '  File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 10, in run',
    "    self.step()",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
]
NCCL = [
    "Traceback (most recent call last):",
    '  File "/srv/sglang/python/sglang/srt/distributed/parallel_state.py", line 20, in recv',
    "    self.group.recv()",
    "RuntimeError: NCCL error: remote process exited or there was a network error",
]


def _found(path: Path, lines: list[str]) -> list[tuple[str, str | None, str]]:
    """Each failure found: its code, the process it names, and the exception it says."""
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = []
    for f in triage_paths([str(path)]).findings:
        if f.code in ("PP802", "PP803", "PP809"):
            said = [t for t in ("torch.OutOfMemoryError", "RuntimeError") if t in f.message]
            found.append((f.code, f.key, " ".join(said)))
    return found


def _interleaved(first: str, second: str, clock: list[str]) -> list[str]:
    lines = []
    for n, (a, b) in enumerate(zip(OOM, NCCL, strict=True)):
        lines += [f"{first} {clock[2 * n]} {a}", f"{second} {clock[2 * n + 1]} {b}"]
    return lines


def test_two_processes_interleaved_behind_an_unknown_prefix_are_two_failures(tmp_path):
    clock = [f"12:00:0{n}" for n in range(8)]
    assert _found(tmp_path / "two.log", _interleaved("<w0>", "<w1>", clock)) == [
        ("PP802", None, "torch.OutOfMemoryError"),
        ("PP803", "<w1>", "RuntimeError"),
    ]


def test_one_process_behind_an_unknown_prefix_with_a_running_clock_is_one_failure(tmp_path):
    lines = [f"<w0> 12:00:0{n}.{n}31 {text}" for n, text in enumerate(OOM)]
    assert _found(tmp_path / "one.log", lines) == [("PP802", None, "torch.OutOfMemoryError")]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    names=st.lists(
        st.from_regex(r"\A<[a-z]{1,6}[0-9]{1,3}>\Z"), min_size=2, max_size=2, unique=True
    ),
    seconds=st.lists(st.integers(0, 59), min_size=8, max_size=8),
)
def test_any_two_names_behind_any_clock_keep_their_failures_apart(tmp_path, names, seconds):
    clock = [f"12:{s:02d}:{s:02d}" for s in seconds]
    assert _found(tmp_path / "any.log", _interleaved(names[0], names[1], clock)) == [
        ("PP802", None, "torch.OutOfMemoryError"),
        ("PP803", names[1], "RuntimeError"),
    ]
