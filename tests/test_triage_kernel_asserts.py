"""A CUDA kernel's assertion, as the device prints it once per failing thread
(``Indexing.cu:1290: indexSelectLargeIndex: block: [...], thread: [...] Assertion `...`
failed.``), is the cause the log shows: before a traceback cut off before its exception, it is
the root, a device-side assert of the shape-or-kernel kind, and ``explain`` says so of the line.
Logs written here or from public reports (fixtures/logs/real/README.md); expectations by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli

from ppaux.triage import triage_paths

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
ASSERT = (
    "../aten/src/ATen/native/cuda/Indexing.cu:1290: indexSelectLargeIndex: block: [949,0,0], "
    "thread: [{t},0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
)
CUT = (
    'Traceback (most recent call last):\n  File "/srv/train.py", line 218, in <module>\n    run()\n'
)


def _roots(path: Path):
    return [f for f in triage_paths([str(path)]).findings if f.code in ("PP801", "PP802")]


def test_the_assertion_before_a_cut_traceback_is_the_root(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(ASSERT.format(t=62) + ASSERT.format(t=63) + CUT)
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["exception"] == "device-side assert"
    assert root.extra["kind"] == "shape-kernel"
    assert root.extra["line"] == 1
    assert "Indexing.cu:1290: indexSelectLargeIndex" in root.message
    assert "`srcIndex < srcSelectDimSize`" in root.message
    # every thread's line is one failure; the cut traceback follows it
    assert [f.code for f in report.findings if f.code == "PP803"] == ["PP803"]


def test_an_assertion_a_web_page_took_the_backticks_of_is_read(tmp_path: Path) -> None:
    log = tmp_path / "quoted.log"
    log.write_text(ASSERT.format(t=1).replace("`", "") + CUT)
    (root,) = _roots(log)
    assert root.extra["exception"] == "device-side assert"
    assert "srcIndex < srcSelectDimSize" in root.message


def test_a_sentence_about_an_assertion_is_none(tmp_path: Path) -> None:
    log = tmp_path / "note.log"
    log.write_text("We saw Indexing.cu fail an Assertion once; see the wiki.\n")
    assert triage_paths([str(log)]).findings == ()


def test_real_logs_name_the_assertion() -> None:
    for name, after in (
        ("deepspeed-6896-indexing-assert-cut", None),
        ("sglang-23828-dp-tp-device-assert-cut", "DP0 TP0"),
    ):
        report = triage_paths([str(REAL / f"{name}.log")])
        (root,) = [f for f in report.findings if f.code == "PP802"]
        assert root.extra["exception"] == "device-side assert", name
        assert root.extra["kind"] == "shape-kernel", name
        assert root.extra["line"] == 1, name
        assert [f.key for f in report.findings if f.code == "PP803"] == [after], name


def test_explain_gives_the_line_its_kind() -> None:
    result = cli("explain", ASSERT.format(t=63).strip())
    assert result.exit_code == 2
    head = result.stderr.splitlines()[0]
    assert "a shape or kernel failure" in head
    assert "CUDA_LAUNCH_BLOCKING=1" in head


@pytest.mark.parametrize(
    ("line", "named"),
    [
        # a lambda's kernel: the compiler names it operator()
        (
            "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], "
            'thread: [1,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of '
            'bounds"` failed.',
            "IndexKernel.cu:92: operator()",
        ),
        # a template's arguments, a negative one among them
        (
            "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1290: indexSelectSmallIndex<float, "
            "long, 2, 2, -2>: block: [0,0,0], thread: [0,0,0] Assertion `srcIndex < "
            "srcSelectDimSize` failed.",
            "indexSelectSmallIndex<float, long, 2, 2, -2>",
        ),
        # an older release's signature with its template's bindings
        (
            "/pytorch/aten/src/THC/THCTensorIndex.cu:272: void indexSelectLargeIndex(TensorInfo<T, "
            "IndexType>, int, long) [with T = float, IndexType = unsigned int, IdxDim = -2]: "
            "block: [52,0,0], thread: [32,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
            "THCTensorIndex.cu:272: void indexSelectLargeIndex(",
        ),
        # a Triton kernel Inductor wrote in Python
        (
            "/tmp/torchinductor_root/ab/cabc123.py:29: triton_poi_fused_embedding_0: block: "
            "[0,0,0], thread: [0,0,0] Assertion `index out of bounds: 0 <= tmp4 < 32000` failed.",
            "cabc123.py:29: triton_poi_fused_embedding_0",
        ),
    ],
)
def test_every_kernel_naming_is_read(tmp_path: Path, line: str, named: str) -> None:
    log = tmp_path / "train.log"
    log.write_text(line + "\n" + CUT)
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert root.extra["exception"] == "device-side assert"
    assert root.extra["kind"] == "shape-kernel"
    assert named in root.message
