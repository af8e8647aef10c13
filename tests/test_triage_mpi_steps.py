"""An MPI call's error gets MPI's steps, never NCCL's or torch's settings. Expected values are
written by hand from reading the real log (fixtures/logs/real/, its source in the README)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.mpisteps import mpi_failure
from ppaux.triage.records import Failure

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
#: TensorRT-LLM#1826: MPI error in AllreducePlugin::initialize.
TRTLLM = REAL / "trtllm-1826-tllm-mpi-error-allreduce-init.log"


def _nccl_set_up_failure(tmp_path: Path) -> Path:
    """A log whose one traceback is NCCL's failure to set up a process group."""
    log = tmp_path / "nccl.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 10, in <module>\n'
        "    dist.init_process_group('nccl')\n"
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details)\n",
        encoding="utf-8",
    )
    return log


def _commands(path: Path) -> list[str]:
    report = triage_paths([str(path)])
    assert not report.problems
    return [" ".join(s["argv"]) for s in report.data["steps"] if s["argv"]]


def test_an_mpi_error_gets_mpi_s_steps_not_nccl_s():
    commands = _commands(TRTLLM)
    assert "mpirun --version" in commands
    assert not any("NCCL" in c or "TORCH_NCCL" in c for c in commands), commands


def test_an_nccl_set_up_failure_keeps_nccl_s_steps(tmp_path):
    log = _nccl_set_up_failure(tmp_path)
    commands = _commands(log)
    assert "export NCCL_DEBUG=INFO" in commands
    assert "mpirun --version" not in commands


def _failure(message: str) -> Failure:
    return Failure(
        source="x.log",
        line=1,
        time=None,
        time_text=None,
        ranks=None,
        stream=None,
        process=None,
        order=1,
        exception="RuntimeError",
        message=message,
    )


_SAID = ("MPI error", "MPI_ERR_TRUNCATE", "MPI_ERRORS_ARE_FATAL", "common/mpiUtils.cpp:211")
#: Text around the words: no quotes (a quoted phrase is a value, never MPI's words).
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="'\"‘“"),
    max_size=60,
)


@settings(max_examples=50, deadline=None)
@given(before=_TEXT, said=st.sampled_from([None, *_SAID]), after=_TEXT)
def test_only_mpi_s_own_words_make_an_mpi_failure(before, said, after):
    message = f"{before} {said} {after}" if said else before + after
    if said is not None:
        assert mpi_failure(_failure(message))
    elif mpi_failure(_failure(message)):
        assert any(w.split("_T")[0] in message for w in ("MPI error", "MPI_ERR", "mpiUtils.cpp"))


def test_a_memory_failure_naming_mpi_s_handler_gets_no_mpi_steps(tmp_path):
    log = tmp_path / "oom.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 10, in <module>\n'
        "    x = model(batch)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
        "(while the handler set MPI_ERRORS_ARE_FATAL)\n",
        encoding="utf-8",
    )
    assert "mpirun --version" not in _commands(log)


@settings(max_examples=30, deadline=None)
@given(said=st.sampled_from(_SAID), quote=st.sampled_from(["'", '"']))
def test_mpi_s_words_in_a_quoted_value_make_no_mpi_failure(said, quote):
    failure = _failure(f"no such key {quote}{said}{quote}")
    assert not mpi_failure(replace(failure, exception="KeyError"))


def _root(path: Path):
    report = triage_paths([str(path)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    return root


def test_an_mpi_error_s_fix_line_names_mpi_not_nccl_s_settings():
    for path in (TRTLLM, REAL / "trtllm-1826-tllm-mpi-error.log"):
        root = _root(path)
        assert root.extra["kind"] == "communication-init"  # the kind is kept
        assert root.extra["collectives"] == "mpi"
        assert "MPI" in root.hint and "mpirun" in root.hint
        assert "NCCL_" not in root.hint, root.hint


def test_an_nccl_set_up_failure_keeps_nccl_s_fix_line(tmp_path):
    log = _nccl_set_up_failure(tmp_path)
    root = _root(log)
    assert root.extra["collectives"] is None and "NCCL_DEBUG" in root.hint
