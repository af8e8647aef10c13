"""A log whose lines end in a carriage return alone (no ``\\n`` in its first 64 KiB) is read with
each lone ``\\r`` as a line's end; in a log whose lines end in ``\\n``, a ``\\r`` inside a line
(a progress bar redrawn) is left as it is, and ``\\r\\n`` is one line's end. Logs written here;
expectations by hand."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.crended import cr_ended, cr_lines

FAILURE = [
    "[2026-01-01 00:00:00 PP0] Load weight end.",
    "[2026-01-01 00:00:01 PP1] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 10, '
    "in run_scheduler_process",
    "    scheduler.event_loop_pp()",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
]


def _root(path: Path):
    (root,) = [f for f in triage_paths([str(path)]).findings if f.code == "PP802"]
    return root


def test_a_cr_ended_log_is_read_line_by_line(tmp_path: Path) -> None:
    log = tmp_path / "cr.log"
    log.write_bytes("\r".join(FAILURE).encode() + b"\r")
    root = _root(log)
    assert root.key == "PP1"
    assert root.extra["exception"] == "torch.OutOfMemoryError"
    assert root.extra["line"] == 2


TRAINING = [
    "Traceback (most recent call last):",
    '  File "/app/train.py", line 10, in <module>',
    "    main()",
    "ValueError: bad shape 3",
    "cleanup done",
    "exiting",
]


@pytest.mark.parametrize(
    ("data", "line"),
    [
        # a newline put at the file's end
        (("\r".join(TRAINING) + "\n").encode(), 1),
        # a banner line written with a newline, then the carriage-return lines
        (("boot banner\nstep 1\rstep 2\r" + "\r".join(TRAINING) + "\r").encode(), 4),
        # both
        (("boot banner\nstep 1\r" + "\r".join(TRAINING) + "\r\n").encode(), 3),
    ],
)
def test_a_cr_ended_log_with_a_newline_or_two_is_read(tmp_path: Path, data: bytes, line: int):
    log = tmp_path / "cr.log"
    log.write_bytes(data)
    root = _root(log)
    assert root.extra["exception"] == "ValueError"
    assert root.extra["line"] == line


def test_a_bar_redrawn_twice_on_a_newline_line_is_no_cr_ended_log() -> None:
    assert not cr_ended(b"10%|#  |\r20%|## |\rRuntimeError: boom\n")
    assert not cr_ended(b"a\rb\rc\rd\n1\n2\n3\n")  # three newlines: a newline log
    assert cr_ended(b"a\rb\rc\rd\n")


def test_a_tqdm_bar_redrawn_then_a_record_is_one_line() -> None:
    bar = b"  0%|          | 0/1 [00:00<00:09, ?it/s]"
    oom = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert not cr_ended(b"\r" + bar + b"\r" + bar + b"\r" + oom + b"\n")
    assert not cr_ended(b"\r" + bar + b"\r" + bar + b"\r" + oom)
    assert not cr_ended(b"5it [00:01, 4.98it/s]\r6it [00:01, 4.98it/s]\r7it [00:02]\rx\n")
    # lines of text, not a bar's updates: a log whose lines end in '\r'
    assert cr_ended(b"\r" + bar + b"\rstep 1\rstep 2\rstep 3\r" + oom + b"\n")
    assert cr_ended(b"\r\r\r")
    report = triage_paths(
        ["x.log"], {"x.log": io.BytesIO(b"\r" + bar + b"\r" + bar + b"\r" + oom + b"\n")}
    )
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["line"] == 1


def test_a_fragment_with_cr_endings_is_read() -> None:
    fragment = (
        "_x = self.transformer.drop(tok_emb + pos_emb)\rRuntimeError: CUDA error: device-side "
        "assert triggered\rFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.\r"
    )
    report = triage_paths(["<stdin>"], {"<stdin>": io.BytesIO(fragment.encode())})
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["exception"] == "RuntimeError"
    assert root.extra["line"] == 2


def test_progress_bars_in_a_newline_log_keep_its_line_numbers(tmp_path: Path) -> None:
    log = tmp_path / "bars.log"
    bars = "\r".join(f"{n}%|###| {n}/100" for n in range(0, 100, 10))
    log.write_bytes(("\n".join([bars, *FAILURE]) + "\n").encode())
    assert _root(log).extra["line"] == 3


def test_the_reader_makes_lone_carriage_returns_line_ends() -> None:
    assert cr_ended(b"a\rb\r") and not cr_ended(b"a\r\nb") and not cr_ended(b"ab")
    # a '\r\n' past the head that decided: one line's end still
    long = b"x\r" * 40000 + b"y\r\nz\r"
    assert cr_lines(io.BytesIO(long)).read() == b"x\n" * 40000 + b"y\r\nz\n"
    assert cr_lines(io.BytesIO(b"a\r\nb\rc")).read() == b"a\r\nb\rc"  # a newline log: as it is


@settings(max_examples=60)
@given(
    lines=st.lists(st.text(st.characters(exclude_characters="\r\n"), max_size=20), max_size=8),
    chunk=st.integers(1, 5),
)
def test_cr_lines_are_the_lines_whatever_the_chunks(lines: list[str], chunk: int) -> None:
    data = "".join(line + "\r" for line in lines).encode()

    class Chunked(io.RawIOBase):  # a source that hands out a few bytes at a time
        def __init__(self) -> None:
            self.at = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer):  # type: ignore[no-untyped-def, override]
            piece = data[self.at : self.at + min(chunk, len(buffer))]
            buffer[: len(piece)] = piece
            self.at += len(piece)
            return len(piece)

    read = cr_lines(io.BufferedReader(Chunked())).read()  # type: ignore[arg-type]
    assert read == data.replace(b"\r", b"\n")
    assert read.decode().split("\n")[: len(lines)] == lines


@settings(max_examples=30)
@given(
    lines=st.lists(st.from_regex(r"[ -~]{0,30}", fullmatch=True), min_size=1, max_size=6),
)
def test_a_cr_ended_log_reads_as_its_newline_twin(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("twins")
    cr, lf = folder / "cr.log", folder / "lf.log"
    body = [*lines, *FAILURE]
    cr.write_bytes("\r".join(body).encode() + b"\r")
    lf.write_bytes("\n".join(body).encode() + b"\n")
    assert _said(cr) == _said(lf)


def _said(path: Path) -> list[tuple[str, str | None, object]]:
    return [
        (f.code, f.key, (f.extra or {}).get("line")) for f in triage_paths([str(path)]).findings
    ]
