"""DeepSpeed's record of a cuBLAS GEMM that failed (``!!!! kernel execution error. (m: 768, n:
4608, k: 3072, error: 13)``, written by its transformer kernels' GEMM wrapper) is a kernel's
failure the log shows: the root before a traceback cut in its frames, of the shape-or-kernel
kind (of memory where cuBLAS's status is its allocation's, 3), the status named as cuBLAS names
it; the next GEMMs' lines are the same failure. Expectations by hand (cuBLAS's
``cublasStatus_t``: 3 ALLOC_FAILED, 7 INVALID_VALUE, 13 EXECUTION_FAILED)."""

from __future__ import annotations

from pathlib import Path

from helpers import cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

GEMM = "!!!! kernel execution error. (m: {m}, n: {n}, k: {k}, error: {status}) \n"
CUT = 'Traceback (most recent call last):\n  File "train.py", line 998, in main\n    loss.step()\n'


def _root(log: Path):
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    return root


def test_the_gemm_records_before_a_cut_traceback_are_the_root(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    lines = [GEMM.format(m=768, n=4608, k=k, status=13) for k in (3072, 768, 64)]
    log.write_text("".join(lines) + CUT)
    root = _root(log)
    assert root.extra["exception"] == "cuBLAS error"
    assert root.extra["kind"] == "shape-kernel"
    assert root.extra["line"] == 1
    assert "(m: 768, n: 4608, k: 3072)" in root.message
    assert "cuBLAS status 13, CUBLAS_STATUS_EXECUTION_FAILED" in root.message
    # the three GEMMs are one failure; the cut traceback after them is what followed
    findings = triage_paths([str(log)]).findings
    assert [f.extra["line"] for f in findings if f.code == "PP803"] == [4]


def test_an_allocation_status_is_memory(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(GEMM.format(m=64, n=384, k=384, status=3))
    root = _root(log)
    assert root.extra["kind"] == "memory"
    assert "CUBLAS_STATUS_ALLOC_FAILED" in root.message


def test_explain_reads_the_line() -> None:
    result = cli("explain", GEMM.format(m=1, n=2, k=3, status=7).strip())
    assert "shape or kernel failure" in result.output


def test_prose_about_the_words_is_no_record(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "ValueError: bad config\n"
        "we saw kernel execution error lines earlier (error: 13)\n"
    )
    assert _root(log).extra["exception"] == "ValueError"


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 10**9 - 1),
    st.integers(0, 10**9 - 1),
    st.integers(0, 10**9 - 1),
    st.integers(0, 9999),
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40),
)
def test_any_gemm_record_is_read_with_its_numbers(m, n, k, status, before):
    from ppaux.triage.crashlines import cublas_gemm

    found = cublas_gemm(before + GEMM.format(m=m, n=n, k=k, status=status))
    assert found is not None
    assert found[0] == "cuBLAS error"
    assert f"(m: {m}, n: {n}, k: {k})" in found[1]
    assert f"status {status}," in found[1]
    assert ("CUBLAS_STATUS_ALLOC_FAILED" in found[1]) == (status == 3)
