"""Terminal-wrapped pastes: a row that happens to be the width long never swallows the line
after it when that line starts anew."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from triage_pastes import AUX, roots, wrapped

from ppaux.triage import triage_paths
from ppaux.triage.wrapping import Unwrapped, wrap_width


def test_a_code_line_exactly_the_width_long_keeps_the_exception_line_after_it(tmp_path):
    text = AUX.read_text(encoding="utf-8")
    lines = text.split("\n")
    # the width of the root's code line: the row before 'RuntimeError: ...' is not wrapped
    before = next(lines[n - 1] for n, line in enumerate(lines) if line.startswith("RuntimeError"))
    assert before == '    raise RuntimeError("received a non-tensor auxiliary PP output")'
    path = tmp_path / "wrapped.log"
    path.write_text(wrapped(text, len(before)), encoding="utf-8")
    assert roots(triage_paths([str(path)])) == [
        ("PP801", "PP0", "auxiliary-output", "RuntimeError")
    ]


def test_an_exception_line_is_never_joined_to_a_row_that_ends_a_token():
    width = 64
    rows = [
        "x" * 100,  # wrapped: makes the paste one of width 64
        "y" * 100,
        "    tensor_dict = self.pp_group.recv_tensor_dict(all_gather_group=None)".ljust(width)[
            :width
        ],
        "RuntimeError: received a non-tensor auxiliary PP output",
        "^" * width,
        "torch.distributed.DistBackendError: NCCL error in: ../group.cpp:42",
        "[2026-12-03 14:56:07 PP0] Load weight end".ljust(width, "."),
        "ValueError",
    ]
    raw = wrapped("\n".join(rows) + "\n", width).encode()
    out = Unwrapped(io.BytesIO(raw), width, 1 << 16).readall().decode().split("\n")
    for line in ("RuntimeError: received", "torch.distributed.DistBackendError", "ValueError"):
        assert any(row.startswith(line) for row in out), (line, out)
    # a word cut at the width is still joined
    cut = Unwrapped(io.BytesIO(b"a" * 60 + b"Runtime\nError: boom\n"), 67, 1 << 16).readall()
    assert cut == b"a" * 60 + b"RuntimeError: boom\n"


@settings(max_examples=30, deadline=None)
@given(width=st.integers(60, 160))
def test_a_paste_wrapped_at_any_width_has_the_plain_log_s_root(tmp_path_factory, width):
    text = AUX.read_text(encoding="utf-8")
    path = tmp_path_factory.mktemp("wrapped") / "log.txt"
    path.write_text(wrapped(text, width), encoding="utf-8")
    assert roots(triage_paths([str(path)])) == [
        ("PP801", "PP0", "auxiliary-output", "RuntimeError")
    ]


def test_a_json_document_wrapped_by_a_terminal_has_the_plain_log_s_root(tmp_path):
    from test_triage_jq import _documents

    for name, text in _documents().items():
        for width in (80, 120, 200):
            path = tmp_path / f"{name}-{width}.json"
            path.write_text(wrapped(text + "\n", width), encoding="utf-8")
            report = triage_paths([str(path)])
            assert roots(report) == [("PP801", "PP0", "auxiliary-output", "RuntimeError")], (
                name,
                width,
            )


def test_a_frame_line_without_its_source_exactly_the_width_long_keeps_the_exception(tmp_path):
    frame = (
        '  File "/usr/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 9, in f'
    )
    width = len(frame)
    head = (
        "[2026-12-03 14:56:07 PP1] Scheduler hit an exception: Traceback (most recent call last):"
    )
    lines = [
        "[2026-12-03 14:56:06 PP1] " + "Decode batch, #running-req: 3, " * 6,  # wrapped rows
        "[2026-12-03 14:56:06 PP1] " + "Prefill batch, #new-seq: 1, " * 6,
        head,
        frame,  # no source line after it (a frozen module): the exception line follows
        "RuntimeError: stage 1 failed",
    ]
    path = tmp_path / "frames.log"
    path.write_text(wrapped("\n".join(lines) + "\n", width), encoding="utf-8")
    assert roots(triage_paths([str(path)])) == [("PP802", "PP1", "other", "RuntimeError")]


def test_a_tiny_log_of_one_repeated_line_and_a_crash_is_no_wrapped_paste(tmp_path):
    """Rows of one length that seem to continue one another but end at a row as long (one
    line repeated around an exception line of its length) are no terminal's wrapping: the
    crash is found."""
    crash = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"
    repeated = "  batch [a] (b) usage: batch health #running-req: Decode Decode ok INFO"
    repeated = repeated.ljust(len(crash))[: len(crash)]
    path = tmp_path / "tiny.log"
    path.write_text("\n".join([repeated, repeated, crash, repeated, repeated]) + "\n")
    assert wrap_width(path.read_bytes()) is None
    found = [f for f in triage_paths([str(path)]).findings if f.code == "PP802"]
    assert [f.extra["exception"] for f in found] == ["torch.OutOfMemoryError"]


def test_a_paste_whose_rows_are_padded_to_the_width_is_read_as_wrapped(tmp_path):
    """A console that pads every row to its width (the last piece of a wrapped line with
    blanks) wraps as any terminal does: the pieces are joined and the root is read."""
    width = 80
    rows = wrapped(AUX.read_text(encoding="utf-8"), width).split("\n")[:-1]
    path = tmp_path / "padded.log"
    path.write_text("".join(row.ljust(width) + "\n" for row in rows), encoding="utf-8")
    assert wrap_width(path.read_bytes()) == width
    assert roots(triage_paths([str(path)])) == roots(triage_paths([str(AUX)]))
