"""A record glued after a progress bar's update with no rank's tag (a bare exception's line or a
traceback's header, after a carriage return or after nothing at all), and several ranks'
records glued on one line: each record is read as the line it would have been alone.
Expected roots written by hand."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.glued import glued_at, glued_starts, unglued
from ppaux.triage.lineformat import LogLine

_LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
_IMA = "RuntimeError: CUDA error: an illegal memory access was encountered"
_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
_CUDA_NOTE = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
)
_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/train.py", line 41, in <module>\n'
    "    main()\n"
    '  File "/srv/train.py", line 30, in step\n'
    "    loss.backward()\n"
    f"{_OOM}\n"
)


def _found(text: str) -> list[tuple[str, str | None, str, object]]:
    """(code, key, message, location) of every finding of triage on ``text``."""
    data = text.encode("utf-8")
    report = triage_paths(["x.log"], {"x.log": io.BytesIO(data)})
    return [(f.code, f.key, f.message, f.location) for f in report.findings]


def _roots(text: str) -> list[tuple[str, str | None, object, object]]:
    data = text.encode("utf-8")
    report = triage_paths(["x.log"], {"x.log": io.BytesIO(data)})
    assert not report.problems, [p.message for p in report.problems]
    return [
        (f.code, f.key, (f.extra or {}).get("kind"), (f.extra or {}).get("exception"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def test_a_bare_exception_after_a_bar_with_a_carriage_return_is_the_root():
    text = f"Epoch 1:  10%|#  | 1/10 [00:01<00:09]\r{_IMA}\n{_CUDA_NOTE}"
    assert _roots(text) == [("PP802", None, "shape-kernel", "RuntimeError")]


def test_a_bare_exception_right_after_a_bar_is_the_root():
    bars = [
        "Loading:  50%|#####     | 5/10 [00:01<00:01,  3.2it/s]",
        "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.20it/s]",
        "5it [00:01,  4.98it/s]",
        "\r  0%|          | 0/2 [00:00<?, ?it/s]\r 50%|#####     | 1/2 [00:01<00:01, loss=2.1]",
    ]
    for bar in bars:
        assert _roots(f"{bar}{_OOM}\n") == [("PP802", None, "memory", "torch.OutOfMemoryError")]


def test_a_traceback_right_after_a_bar_is_read_with_its_frames():
    text = f"Loading:  50%|#####     | 5/10 [00:01<00:01,  3.2it/s]{_TRACEBACK}"
    report = triage_paths(["x.log"], {"x.log": io.BytesIO(text.encode())})
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.location.to_json() == {"file": "x.log", "line": 1, "function": "step"}
    assert root.extra is not None and root.extra["kind"] == "memory"


def test_a_bar_ends_where_the_record_starts():
    bar = " 50%|#####     | 5/10 [00:01<00:01,  3.2it/s]"
    assert glued_starts(f"{bar}{_OOM}") == [(len(bar), False)]
    assert glued_starts(f"{bar}Traceback (most recent call last):") == [(len(bar), False)]
    assert glued_starts(f"{bar}KeyError") == [(len(bar), False)]


#: Progress bars of other libraries as their last update stands in a file: rich's, pip's,
#: Keras' (during an epoch and at its end), tqdm's with block cells.
_OTHER_BARS = [
    "\u2501" * 8 + " 100% 0:00:01",
    "   " + "\u2501" * 20 + "\u257a" + "\u2501" * 9 + " 1.2/2.5 GB 45.1 MB/s eta 0:00:30",
    "120/500 [======>.......................] - ETA: 35s - loss: 0.6931",
    "5/5 [==============================] - 1s 2ms/step",
    "|\u2588\u2588\u2588\u2588| 3/3 [00:01<00:00]",
    "\u2588" * 6 + "  60%",
    "\u2588" * 6,
    " 7.5 it/s \u2588\u2588\u2588 12/40 3.1it/s",
]


def test_a_bare_exception_glued_after_any_bar_shape_is_the_root():
    for bar in _OTHER_BARS:
        assert glued_starts(f"{bar}{_IMA}") == [(len(bar), False)], bar
        assert _roots(f"start\n{bar}{_OOM}\n") == [
            ("PP802", None, "memory", "torch.OutOfMemoryError")
        ], bar
        assert _roots(f"start\n{bar}ValueError: bad shape 3\n")[0][3] == "ValueError", bar


def test_a_sentence_after_a_bar_or_without_one_is_never_split():
    sentences = [
        f"the job reached 100%{_IMA}",
        f"error 404{_OOM}",
        f"took 2ms/step{_IMA}",
        "\u2501" * 8 + f" finished, then the server said{_IMA}",
        "\u2501" * 8 + f" then {_IMA}",
        "\u2501" * 8 + f" 100% (see the docs){_IMA}",
        f"5/5 [=====] - 1s 2ms/step {_IMA}",
    ]
    for text in sentences:
        assert glued_at(text) is None, text


def test_prose_a_literal_or_a_bar_followed_by_other_text_starts_no_record():
    assert glued_at(f"we saw 50% at [00:01]{_OOM}") is None
    assert glued_at(f"see the docs [link]{_OOM}") is None
    bar = " 50%|#####     | 5/10 [00:01<00:01,  3.2it/s]"
    assert glued_at(f"{bar}torch.cuda.synchronize()") is None
    assert glued_at(f"{bar}Errors: 3") is None
    echo = f"Receive: obj=GenerateReqInput(text='5it [00:01, 4.98it/s]{_OOM}', rid='a')"
    assert glued_at(echo) is None
    assert _roots(f"[2026-12-03 14:56:07 TP0] {echo}\n") == []


def test_two_or_three_ranks_records_on_one_line_each_yield_their_own():
    two = f"[rank0]: {_OOM} [rank1]: {_IMA}\n"
    assert _roots(two) == [
        ("PP802", "rank 0", "memory", "torch.OutOfMemoryError"),
        ("PP802", "rank 1", "shape-kernel", "RuntimeError"),
    ]
    three = f"Epoch 1: 3% [rank2]: {_IMA} [rank0]: {_OOM} [rank1]: ValueError: bad shape\n"
    starts = glued_starts(three.rstrip("\n"))
    assert [at for at, tagged in starts if tagged] == [
        three.index("[rank2]"),
        three.index("[rank0]"),
        three.index("[rank1]"),
    ]
    line = LogLine(7, three.rstrip("\n"), 5.0, "t", None, None)
    parts = unglued(line)
    assert [(p.text, p.stream, p.number, p.time) for p in parts] == [
        ("Epoch 1: 3%", None, 7, 5.0),
        (_IMA, "rank 2", 7, 5.0),
        (_OOM, "rank 0", 7, 5.0),
        ("ValueError: bad shape", "rank 1", 7, 5.0),
    ]


def test_a_record_after_a_tagged_ranks_bar_keeps_that_rank():
    text = f"[rank3]:  50%|#####     | 5/10 [00:01<00:01,  3.2it/s]{_OOM}\n"
    assert _roots(text) == [("PP802", "rank 3", "memory", "torch.OutOfMemoryError")]
    again = f"[rank0]: {_OOM} [rank1]: {_IMA}"
    line = LogLine(1, again.split("]: ", 1)[1], None, None, None, "pod/a/b, rank 0")
    assert [p.stream for p in unglued(line)] == ["pod/a/b, rank 0", "pod/a/b, rank 1"]


_DESC = st.text(
    alphabet=st.characters(categories=("L", "Nd"), include_characters=" -_."), max_size=20
)


@st.composite
def _bars(draw: st.DrawFn) -> str:
    """A tqdm progress bar's updates as a file holds them: one or more, each after a carriage
    return but perhaps the first, in tqdm's own forms (with a total, or a count only)."""
    updates = []
    for _ in range(draw(st.integers(1, 3))):
        desc = draw(_DESC)
        total = draw(st.integers(1, 10_000))
        done = draw(st.integers(0, total))
        elapsed = draw(st.sampled_from(["00:00", "00:52", "1:02:03"]))
        rate = draw(st.sampled_from(["?it/s", " 3.21it/s", "4.95s/it", "1.20MB/s"]))
        postfix = draw(st.sampled_from(["", ", loss=2.08", ", lr=1e-4 acc=0.5"]))
        lead = f"{desc}: " if desc else ""
        if draw(st.booleans()):
            cells = draw(st.integers(0, 10))
            bar = draw(st.sampled_from(["#", "█"])) * cells + " " * (10 - cells)
            percent = done * 100 // total
            update = f"{lead}{percent:3d}%|{bar}| {done}/{total} [{elapsed}<00:09, {rate}{postfix}]"
        else:
            update = f"{lead}{done}it [{elapsed}, {rate}{postfix}]"
        updates.append(update)
    first = "\r" if draw(st.booleans()) else ""
    return first + "\r".join(updates)


#: Records as a program writes them at a line's start, in a plain log: a bare exception, a
#: traceback, torch's tagged lines, sglang's own log (PP0's root, PP1's collateral, SIGQUIT).
_RECORDS = [
    f"{_IMA}\n{_CUDA_NOTE}",
    f"{_OOM}\n",
    _TRACEBACK,
    f"[rank1]: {_OOM}\n"
    "[rank0]: [E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout\n",
    (_LOGS / "sglang-aux-list.log").read_text(encoding="utf-8"),
    (_LOGS / "watchdog-aux-list.log").read_text(encoding="utf-8"),
]


@settings(max_examples=30, deadline=None)
@given(_bars(), st.sampled_from(_RECORDS))
@example(  # three carriage returns and one newline: no log whose lines end in '\r'
    "\r  0%|          | 0/1 [00:00<00:09, ?it/s]\r  0%|          | 0/1 [00:00<00:09, ?it/s]",
    f"{_OOM}\n",
)
def test_a_record_after_a_bar_and_a_carriage_return_is_read_as_alone(bar, record):
    assert _found(f"{bar}\r{record}") == _found(record)


@settings(max_examples=30, deadline=None)
@given(_bars(), st.sampled_from(_RECORDS[:4]))
def test_a_record_glued_right_after_a_bar_is_read_as_alone(bar, record):
    assert _found(f"{bar}{record}") == _found(record)


@st.composite
def _other_bars(draw: st.DrawFn) -> str:
    """The last update of another library's bar: rich's or pip's (cells, then figures only),
    or Keras' (during an epoch, or at its end)."""
    lead = draw(_DESC)
    if draw(st.booleans()):
        cells = chr(0x2501) * draw(st.integers(1, 40))
        figures = draw(st.sampled_from([" 100% 0:00:01", " 1.2/2.5 GB 45.1 MB/s eta 0:00:30"]))
        return f"{lead} {cells}{figures}"
    total = draw(st.integers(1, 10_000))
    done = draw(st.integers(0, total))
    width = draw(st.integers(0, 29))
    tail = draw(st.sampled_from([" - ETA: 35s - loss: 0.6931", " - 1s 2ms/step"]))
    return f"{lead} {done}/{total} [{'=' * width}>{'.' * (29 - width)}]{tail}"


@settings(max_examples=30, deadline=None)
@given(_other_bars(), st.sampled_from(_RECORDS[:3]))
def test_a_record_glued_right_after_another_librarys_bar_is_read_as_alone(bar, record):
    assert _found(f"{bar}{record}") == _found(record)
