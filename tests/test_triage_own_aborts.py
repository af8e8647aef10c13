"""A process's traceback (``RuntimeError: CUDA error: ...``) and its own C++ abort on the same
error right after it (``terminate called after throwing an instance of 'c10::Error'``, ``what():
CUDA error: ...``) are one failure: one root, no second incident and no collateral. An abort of
another error, of another rank, or far from the traceback stays a failure of its own.
Expectations by hand."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

IMA = "CUDA error: an illegal memory access was encountered"


def _traceback(message: str, prefix: str = "") -> str:
    return (
        f'{prefix}  File "/srv/train.py", line 12, in step\n'
        f"{prefix}    total = torch.cuda.FloatTensor([norm])\n"
        f"{prefix}RuntimeError: {message}\n"
    )


def _abort(message: str, prefix: str = "") -> str:
    return (
        f"{prefix}terminate called after throwing an instance of 'c10::Error'\n"
        f"{prefix}  what():  {message}\n"
        f"{prefix}Exception raised from create_event_internal at CUDACachingAllocator.cpp:687\n"
    )


def _codes(log: Path) -> list[tuple[str, int]]:
    return [
        (f.code, f.extra["line"])
        for f in triage_paths([str(log)]).findings
        if f.code in ("PP802", "PP803")
    ]


def test_the_abort_on_the_same_error_is_the_same_failure(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(_traceback(IMA) + _abort(IMA))
    assert _codes(log) == [("PP802", 1)]
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert root.extra["exception"] == "RuntimeError"
    assert root.extra["kind"] == "shape-kernel"


def test_an_abort_on_another_error_stays_a_failure(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(_traceback(IMA) + _abort("CUDA error: misaligned address"))
    assert len(_codes(log)) == 2


def test_another_ranks_abort_stays_a_failure(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(_traceback(IMA, "[rank0]: ") + _abort(IMA, "[rank1]: "))
    assert len(_codes(log)) == 2


def test_an_abort_far_after_the_traceback_stays_a_failure(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    between = "".join(f"step {n} done\n" for n in range(100))
    log.write_text(_traceback(IMA) + between + _abort(IMA))
    assert len(_codes(log)) == 2


_WORDS = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=1)


@settings(max_examples=60, deadline=None)
@given(_WORDS, _WORDS, st.sampled_from([None, "rank 1"]), st.integers(1, 200))
def test_an_abort_is_dropped_exactly_when_it_is_the_traceback_s_own(said, what, stream, gap):
    from ppaux.triage.records import Failure, Frame
    from ppaux.triage.sameprocess import without_own_aborts

    frame = Frame("/srv/train.py", 12, "step")
    traced = Failure(
        "a.log", 1, None, None, None, None, None, 0, "RuntimeError", said, frames=[frame]
    )
    aborted = Failure("a.log", 4 + gap, None, None, None, stream, None, 1, "c10::Error", what)
    aborted.aborted = True
    kept = without_own_aborts([traced, aborted])
    own = (
        said.split("\n", 1)[0].strip() == what.split("\n", 1)[0].strip() != ""
        and stream is None
        and gap <= 64
    )
    assert kept == ([traced] if own else [traced, aborted])
    assert kept[0] is traced
