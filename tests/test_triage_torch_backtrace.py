"""torch's native backtrace frames (``lib(+0x...) [0x...] name``, no frame number) are read as
a native crash of their process; through torch's NCCL watchdog thread
(``c10d::ProcessGroupNCCL::ncclCommWatchdog()``) it is that process's communication failure,
the root, and a Ray raylet's report of a worker's death after it is its consequence.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest

from ppaux.triage import triage_paths

W = "(RayWorkerWrapper pid=2667395) "
FRAMES = (
    W
    + "/lib/x86_64-linux-gnu/libstdc++.so.6(+0xae1fe) [0x7fdb876201fe]\n"
    + W
    + "/env/torch/lib/libtorch_cuda.so(+0xe427c9) [0x7fd15b3007c9] "
    "c10d::ProcessGroupNCCL::ncclCommWatchdog()\n"
    + W
    + "/lib/x86_64-linux-gnu/libc.so.6(+0x94ac3) [0x7fdb899c4ac3]\n"
)
RAYLET = (
    "(raylet) A worker died or was killed while executing a task by an unexpected system error. "
    "Worker PID: 270291 Worker exit type: SYSTEM_ERROR\n"
)


def _report(text: str):
    return triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})


def test_the_watchdog_s_backtrace_is_the_root_and_the_raylet_s_death_follows():
    report = _report(FRAMES + RAYLET)
    (root,) = [f for f in report.findings if f.code in ("PP802", "PP809")]
    assert root.code == "PP802"
    assert root.extra["kind"] == "communication"
    assert root.extra["ranks"][0].endswith("RayWorkerWrapper pid=2667395")
    assert "ncclCommWatchdog" in root.message
    assert [f.code for f in report.findings if f.code == "PP803"] == ["PP803"]


@pytest.mark.parametrize(
    "line",
    [
        "see /lib/libc.so.6(+0x94ac3) [0x7fdb899c4ac3] in the old crash\n",
        "the address [0x7fdb899c4ac3] was freed\n",
    ],
)
def test_words_around_a_frame_are_no_frame(line):
    report = _report("[2026-12-03 14:56:01 TP0] Init torch distributed begin.\n" + line)
    assert [f.code for f in report.findings if f.code in ("PP802", "PP809")] == []
