"""A native failure-signal handler's record (Abseil's through glog in every Ray worker: ``***
SIGSEGV received at time=N on cpu N ***`` and ``PC: @ ...``; glog's own ``*** SIGSEGV (@0x0)
received by PID N ...``) is that process's death of the signal, a root with a core dump's
steps, never "no failure found"; the fault handler's ``Fatal Python error: Segmentation fault``
gets the same steps, never a comparison of the stages. Expectations by hand."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.signalrecords import died_of_signal, signal_pc, signal_record

GLOG = "[2022-02-15 14:53:58,118 E 3763180 3763180] logging.cc:317: "
SEGV = (
    f"{GLOG}*** SIGSEGV received at time=1644908038 on cpu 7 ***\n"
    f"{GLOG}PC: @     0x7f680548f777  (unknown)  xla::gpu::GpuExecutable::ExecuteThunksOrBef()\n"
    f"{GLOG}    @     0x7f71815f7210  (unknown)  (unknown)\n"
)


def _root(tmp_path: Path, text: str) -> tuple[dict, list[str]]:
    log = tmp_path / "worker.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    steps = report.data["steps"]
    assert isinstance(steps, list)
    return (
        {"code": root.code, "key": root.key, **(root.extra or {})},
        [" ".join(s["argv"] or ()) + " " + str(s["comment"] or "") for s in steps],
    )


def test_a_ray_worker_s_segfault_is_its_failure_with_or_without_ray_s_prefix(
    tmp_path: Path,
) -> None:
    prefixed = "".join(f"(MeshHostWorker pid=3763180) {line}\n" for line in SEGV.splitlines())
    for text, who in ((prefixed, "MeshHostWorker pid=3763180"), (SEGV, None)):
        root, steps = _root(tmp_path, text)
        assert root["code"] == "PP802"
        assert root["exception"] == "SIGSEGV"
        assert "signal 11" in root["message"]
        assert "xla::gpu::GpuExecutable::ExecuteThunksOrBef()" in root["message"]
        if who is not None:
            assert root["ranks"][0].endswith(who)
        assert any(s.startswith("coredumpctl list") for s in steps)
        assert not any("check-skew" in s for s in steps)


def test_glog_s_own_header_is_read() -> None:
    said = signal_record("*** SIGBUS (@0x7f00) received by PID 1234 (TID 0x7f12) from PID 0;")
    assert said is not None and said[0] == "SIGBUS" and "signal 7" in said[1]
    assert signal_pc("PC: @     0x7f680548f777  (unknown)  (unknown)") is None
    assert signal_pc("see the PC: line above") is None


def test_the_fault_handler_s_segfault_gets_a_core_dump_s_steps(tmp_path: Path) -> None:
    text = (
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f8b (most recent call first):\n"
        '  File "/srv/app/reward_wrapper.py", line 88 in step\n'
    )
    root, steps = _root(tmp_path, text)
    assert root["exception"] == "Fatal Python error"
    assert any(s.startswith("coredumpctl list") for s in steps)
    assert not any("check-skew" in s for s in steps)
    assert died_of_signal("Fatal Python error", "Aborted (the process aborted)") is False


@settings(max_examples=40)
@given(st.text(max_size=200))
def test_signal_records_never_raise_and_need_their_words(text: str) -> None:
    said = signal_record(text)
    if said is not None:
        assert "*** SIG" in text and " received " in text
    if signal_pc(text) is not None:
        assert "PC: @" in text
