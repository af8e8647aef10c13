"""A traceback cut before its exception, and the line just above it that says what failed:
torch's c10d store whose port another process holds (errno 98), NCCL's message received
truncated in flight. The cause is given to the root where it stands just above it, nothing else
between; an unrelated warning (torch's IPv6 attempt, errno 97), a port in use above a traceback
of a running step, or a warning with another failure between them is never attached. The
words expected are written by hand from reading each log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.causeabove import c10d_cause
from ppaux.triage.ncclflight import flight_failure
from ppaux.triage.passedcauses import same_process_above, spoken_above

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"

_BANNER = (
    "WARNING:torch.distributed.run:\n"
    "*****************************************\n"
    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default.\n"
    "*****************************************\n"
)
_INIT_CUT = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 180, in <module>\n'
    "    train()\n"
    '  File "train.py", line 47, in train\n'
    "    dist.init_process_group(\n"
    '  File "/env/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 5'
)
_IN_USE = (
    "[W socket.cpp:401] [c10d] The server socket has failed to bind to 0.0.0.0:29500 "
    "(errno: 98 - Address already in use).\n"
    "[E socket.cpp:435] [c10d] The server socket has failed to listen on any local network "
    "address.\n"
)


def _report(path: Path) -> tuple[dict[str, Any], list[tuple[tuple[str, ...] | None, str]]]:
    report = triage_paths([str(path)])
    assert not report.problems
    roots = [f for f in report.findings if f.code == "PP802"]
    assert len(roots) == 1
    steps = report.data["steps"]
    assert isinstance(steps, list)
    return {**(roots[0].extra or {}), "message": roots[0].message, "hint": roots[0].hint}, [
        (tuple(s["argv"]) if s["argv"] else None, str(s["comment"] or "")) for s in steps
    ]


def test_a_port_in_use_just_above_a_cut_set_up_is_its_cause():
    root, steps = _report(REAL / "pytorch-85604-eaddrinuse-init-process-group-cut.log")
    assert root["kind"] == "communication-init"
    assert root["nccl_setup"] == "address-in-use"
    assert "the cause is not in it" not in root["message"]
    assert "[::]:47531" in root["message"] and "pytorch-85604" in root["message"]
    assert root["message"].endswith("-cut.log:5)")  # the first line that names the port
    assert "ss -ltnp" in root["hint"]
    # the port of the log's c10d line ``[::]:47531``: only who holds that one, and its flag
    argvs = [argv for argv, _ in steps]
    assert ("ss", "-ltnp", "sport = :47531") in argvs and ("ss", "-ltnp") not in argvs
    assert any("MASTER_PORT" in comment for _, comment in steps)
    assert not any("whole log" in comment for _, comment in steps)


@pytest.mark.parametrize(
    ("above", "holder"),
    [
        (_IN_USE, ("ss", "-ltnp", "sport = :29500")),
        (
            "[E socket.cpp:435] [c10d] The server socket has failed to listen on any local "
            "network address.\n",
            ("ss", "-ltnp"),
        ),
    ],
)
def test_a_port_in_use_above_a_cut_set_up_names_its_port_where_it_is_said(tmp_path, above, holder):
    log = tmp_path / "rank0.log"
    log.write_text(_BANNER + above + _INIT_CUT)
    root, steps = _report(log)
    assert root["nccl_setup"] == "address-in-use"
    holders = [argv for argv, _ in steps if argv is not None and argv[0] == "ss"]
    assert holders == [holder]


def test_a_truncated_message_in_flight_above_a_cut_step_is_its_cause():
    root, steps = _report(REAL / "written-nccl-warn-truncated-rank9-cut.log")
    assert root["kind"] == "communication"
    assert root["nccl_setup"] == "size-mismatch"
    assert "8 bytes received instead of 4" in root["message"]
    assert "-cut.log:1)" in root["message"]
    words = " ".join(" ".join(argv or ()) + " " + comment for argv, comment in steps)
    assert "NCCL_PROTO" in words and "tensor's size" in words
    # the steps of a set-up (which interface, the bootstrap address) do not fit a message
    assert "NCCL_SOCKET_IFNAME" not in words


def test_torch_s_ipv6_attempt_is_no_cause(tmp_path):
    log = tmp_path / "ipv6.log"
    log.write_text(
        _BANNER + "[W socket.cpp:663] [c10d] The server socket cannot be initialized on "
        "[::]:29500 (errno: 97 - Address family not supported by protocol).\n" + _INIT_CUT
    )
    root, _ = _report(log)
    assert root["kind"] == "communication-init"  # cut in the set-up: where, not why
    assert "nccl_setup" not in root
    assert "the cause is not in it" in root["message"]


def test_a_port_in_use_above_a_running_step_is_no_cause(tmp_path):
    log = tmp_path / "step.log"
    log.write_text(
        _IN_USE + "Traceback (most recent call last):\n"
        '  File "train.py", line 90, in <module>\n'
        "    main()\n"
        '  File "train.py", line 71, in main\n'
        "    loss = train_step(model, batch)\n"
        '  File "train.py", line 55, in train_step\n'
        "    out = model(batch)\n"
        '  File "/env/lib/python3.10/site-packages/torch/nn/modules/modu'
    )
    root, _ = _report(log)
    assert "nccl_setup" not in root
    assert "the cause is not in it" in root["message"]


def test_a_port_in_use_far_above_a_cut_set_up_is_no_cause(tmp_path):
    # more lines between them than the scanner keeps of what it passed over
    log = tmp_path / "far.log"
    log.write_text(_IN_USE + "".join(f"step {n}: loading\n" for n in range(12)) + _INIT_CUT)
    root, _ = _report(log)
    assert "nccl_setup" not in root


def test_nccl_s_truncated_message_with_another_failure_between_is_no_cause(tmp_path):
    log = tmp_path / "between.log"
    log.write_text(
        "node-c:51200:51388 [1] transport/net_socket.cc:488 NCCL WARN NET/Socket : peer "
        "10.0.0.7<50412> message truncated : receiving 8 bytes instead of 4.\n"
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "train.py", line 12, in <module>\n'
        "[rank3]:     main()\n"
        "[rank3]: ValueError: bad batch\n"
        "[rank9]: Traceback (most recent call last):\n"
        '[rank9]:   File "train.py", line 12, in <module>\n'
        "[rank9]:     main()\n"
        '[rank9]:   File "train.py", line 30, in run_steps\n'
    )
    report = triage_paths([str(log)])
    assert all(f.extra is None or "nccl_setup" not in f.extra for f in report.findings)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=200), max_size=8))
def test_a_cause_is_read_only_from_its_own_words(lines):
    found = c10d_cause(lines)
    if found is not None:
        index, name, _ = found
        assert name == "address-in-use" and 0 <= index < len(lines)
        assert "98" in lines[index] or "listen on any local network address" in lines[index]
    said = flight_failure(" ".join(lines))
    assert said is None or "NCCL WARN NET/" in " ".join(lines)


_SGLANG_INIT_CUT = (
    "Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2100, in run_scheduler_process\n'
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank)\n"
    '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 300, in __init__\n'
    "    self.tp_worker = TpModelWorker(\n"
    '  File "/sgl/python/sglang/srt/managers/tp_wor'
)


def _prefixed(prefix: str, text: str) -> str:
    return "".join(f"{prefix}{line}\n" for line in text.splitlines())


@pytest.mark.parametrize(
    "text",
    [
        # another rank's port error above rank 0's set-up
        _prefixed("[rank1]: ", _IN_USE) + _prefixed("[rank0]: ", _INIT_CUT),
        # another pipeline stage's
        "[2026-03-01 10:00:00 PP1 TP0] [W socket.cpp:401] [c10d] The server socket has failed "
        "to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).\n"
        "[2026-03-01 10:00:00 PP0 TP0] " + _SGLANG_INIT_CUT,
        # a launcher's retry that succeeded stands between
        _IN_USE + "launcher: port 29500 busy, retried on 29501: rendezvous ok\n" + _INIT_CUT,
        # the test that raised it passed; the next test's traceback is cut
        "tests/test_store.py::test_port_in_use_is_reported \n" + _IN_USE + "PASSED\n"
        "tests/test_dist.py::test_init \n" + _INIT_CUT,
        # two hours earlier, by the log's own times
        _prefixed("2026-03-01T08:00:00.000000000Z ", _IN_USE)
        + _prefixed("2026-03-01T10:00:00.000000000Z ", _INIT_CUT),
    ],
    ids=["other-rank", "other-stage", "retry-between", "test-passed", "hours-earlier"],
)
def test_a_port_in_use_of_another_process_or_moment_is_no_cause(tmp_path, text):
    log = tmp_path / "other.log"
    log.write_text(text)
    root, _ = _report(log)
    assert "nccl_setup" not in root
    assert "the cause is not in it" in root["message"]


def test_a_port_in_use_of_the_same_rank_and_moment_is_its_cause(tmp_path):
    log = tmp_path / "same.log"
    log.write_text(
        _prefixed("2026-03-01T10:00:00.000000000Z [rank0]: ", _IN_USE)
        + _prefixed("2026-03-01T10:00:01.000000000Z [rank0]: ", _INIT_CUT)
    )
    root, _ = _report(log)
    assert root["nccl_setup"] == "address-in-use"


_LABEL = st.sampled_from(["", "[rank0]: ", "[rank1]: ", "[2026-03-01 10:00:00 PP0 TP0] "])


@settings(max_examples=60, deadline=None)
@given(_LABEL, _LABEL, st.lists(st.text(max_size=60), max_size=3))
def test_a_cause_above_is_of_its_own_process_only(above, below, between):
    cause = above + _IN_USE.splitlines()[0]
    same = same_process_above(cause, between, below + "Traceback (most recent call last):")
    if above != below:
        assert not same
    if any(line.strip() and "c10d" not in line and "socket.cpp" not in line for line in between):
        assert not same


_TRUNCATED = (
    "node-b:2222:3333 [1] transport/net_socket.cc:540 NCCL WARN NET/Socket : peer "
    "10.0.0.4<56849> message truncated : receiving 8 bytes instead of 4.\n"
)
_SGLANG_STEP_CUT = (
    "[2026-03-01 10:00:02 PP0 TP0] Scheduler hit an exception: Traceback (most recent call "
    "last):\n"
    '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 900, in event_loop_pp\n'
    "    result = self.run_batch(batch)\n"
    '  File "/sgl/python/sglang/srt/managers/sch'
)


def test_nccl_s_warning_with_sglang_records_between_is_no_cause(tmp_path):
    log = tmp_path / "records.log"
    log.write_text(
        _TRUNCATED + "[2026-03-01 10:00:01 PP0 TP0] Prefill batch. #new-seq: 1, #new-token: 10\n"
        "[2026-03-01 10:00:01 PP0 TP0] Decode batch. #running-req: 1\n" + _SGLANG_STEP_CUT
    )
    root, _ = _report(log)
    assert "nccl_setup" not in root
    assert "the cause is not in it" in root["message"]


def test_nccl_s_warning_with_only_its_own_lines_between_is_the_cause(tmp_path):
    log = tmp_path / "own.log"
    log.write_text(
        _TRUNCATED + "node-b:2222:3333 [1] NCCL INFO include/net.h:35 -> 6\n\n" + _SGLANG_STEP_CUT
    )
    root, _ = _report(log)
    assert root["nccl_setup"] == "size-mismatch"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=60), max_size=4))
def test_only_words_other_than_nccl_s_stand_between(previous):
    spoken = spoken_above(b"Traceback (most recent call last):", previous)
    if all(b"NCCL" in line or not line.strip() for line in previous):
        assert not spoken
    assert not spoken_above(b"no traceback here", previous)
