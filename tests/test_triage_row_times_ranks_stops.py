"""triage on real logs whose reading was at fault: a row's time without a zone, torch's older
``[Rank N]`` NCCL record, a pod named with no container, and torchrun stopped by a signal from
outside the job. The expected values are written by hand from reading the logs
(fixtures/logs/real/, sources in its README), never computed by triage's code."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux.triage.linetimes import wall_time
from ppaux_cli.app import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB."


def _root(path: Path):
    report = triage_paths([str(path)])
    assert not report.problems
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    return root


def test_python_loggings_time_before_torchs_rank_tag_is_the_records_local_time():
    root = _root(REAL / "qwen3coder-174-time-rank-oom.log")
    assert root.code == "PP802" and root.key == "rank 3"
    assert root.extra["time"] == "2024-11-20 14:37:16"
    assert root.extra["time_zone"] is None
    assert "at 2024-11-20 14:37:16 (local time of the host, zone unknown)" in root.message


def test_a_rows_time_with_milliseconds_after_a_dot_or_a_comma_is_read(tmp_path):
    for mark in (".", ","):
        log = tmp_path / "rank.log"
        log.write_text(f"2024-11-20 14:37:16{mark}123 [rank3]: {_OOM}\n")
        root = _root(log)
        assert root.key == "rank 3"
        assert root.extra["time"] == f"2024-11-20 14:37:16{mark}123"
        assert root.extra["time_zone"] is None


def test_a_loki_table_rows_time_without_a_zone_is_no_hosts_time(tmp_path):
    # Grafana's table of a Loki query, newest row first (a time without a zone, a tab, the
    # stream's labels, a tab, the line)
    labels = '{container="trainer", namespace="ml", pod="nanogpt-0"}'
    rows = [
        ("16.104", "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions._"),
        ("15.103", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1."),
        ("13.101", "RuntimeError: CUDA error: device-side assert triggered"),
        ("12.100", "_x = self.transformer.drop(tok_emb + pos_emb)"),
    ]
    log = tmp_path / "loki.log"
    log.write_text("".join(f"2024-04-05 10:11:{t}\t{labels}\t{line}\n" for t, line in rows))
    root = _root(log)
    assert root.key == "pod/nanogpt-0/trainer"
    assert root.extra["exception"] == "RuntimeError"
    # the browser's clock, of a zone the table does not say: never taken for the host's
    assert root.extra["time"] is None


def test_a_pod_with_no_container_is_named_without_a_trailing_slash(tmp_path):
    record = {
        "textPayload": "RuntimeError: CUDA error: device-side assert triggered",
        "severity": "ERROR",
        "timestamp": "2024-04-05T10:11:13Z",
        "resource": {"type": "k8s_container", "labels": {"pod_name": "nanogpt-0"}},
    }
    log = tmp_path / "gcl.jsonl"
    log.write_text(json.dumps(record) + "\n")
    assert _root(log).key == "pod/nanogpt-0"
    loki = tmp_path / "loki.log"
    loki.write_text('2024-04-05T10:11:13Z\t{namespace="ml", pod="nanogpt-0"}\tRuntimeError: boom\n')
    assert _root(loki).key == "pod/nanogpt-0"


def test_torchs_older_nccl_record_names_its_rank():
    root = _root(REAL / "ofa-271-old-watchdog-format.log")
    assert root.extra["no_root"] == "network-or-other-node"
    assert root.extra["ranks"] == ["rank 1", "rank 2", "rank 3", "rank 6", "rank 7"]
    assert "(the first: rank 1 at" in root.message


def test_torchrun_stopped_by_sigterm_from_outside_is_no_root():
    path = REAL / "determined-8915-bars-death-signal.log"
    root = _root(path)
    assert root.code == "PP809"
    assert root.extra["no_root"] == "process-died"
    assert root.extra["killer"] == "outside-stop"
    assert "was stopped by SIGTERM (signal 15) from outside the job" in root.message
    assert "determined-8915-bars-death-signal.log:1)" in root.message
    # The fix says who sends such a signal and where that sender writes, not the network's
    # variables of a collective that failed.
    assert "the kubelet" in root.hint and "kubectl get events" in root.hint
    assert "the agent's own log" in root.hint and "NCCL_SOCKET_IFNAME" not in root.hint
    result = CliRunner().invoke(app, ["triage", "--format", "json", str(path)])
    assert result.exit_code == 1
    comments = " ".join(s["comment"] or "" for s in json.loads(result.output)["steps"])
    assert "who sent the signal" in comments and "kubectl get events" in comments
    assert "NCCL_DEBUG" not in comments


def test_torchruns_signal_exception_is_a_stop_from_outside(tmp_path):
    log = tmp_path / "torchrun.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/local/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n"
        '  File "/usr/lib/python3/site-packages/torch/distributed/elastic/multiprocessing/'
        'api.py", line 86, in _terminate_process_handler\n'
        '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", '
        "sigval=sigval)\n"
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 165 got "
        "signal: 2\n"
    )
    root = _root(log)
    assert root.code == "PP809" and root.extra["killer"] == "outside-stop"
    assert "was stopped by SIGINT (signal 2) from outside the job" in root.message


def test_a_workers_failure_before_the_stop_stays_the_root(tmp_path):
    log = tmp_path / "both.log"
    log.write_text(
        f"[rank3]: {_OOM}\n"
        "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, "
        "shutting down workers\n"
    )
    root = _root(log)
    assert root.code == "PP802" and root.key == "rank 3"


@settings(max_examples=60, deadline=None)
@given(
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2999, 12, 31)),
    st.sampled_from([" ", "T"]),
    st.sampled_from(["", ".", ","]),
    st.integers(1, 9),
)
def test_a_time_without_a_zone_counts_seconds_of_its_wall_clock(moment, sep, mark, digits):
    fraction = str(moment.microsecond).zfill(6).ljust(digits, "0")[:digits] if mark else ""
    text = moment.strftime(f"%Y-%m-%d{sep}%H:%M:%S") + (mark + fraction if mark else "")
    whole = moment.replace(microsecond=0) - datetime(1970, 1, 1)
    expected = whole.total_seconds() + (int(fraction) / 10**digits if mark else 0.0)
    assert wall_time(text) == expected


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 999_999), min_size=1, max_size=4, unique=True))
def test_every_older_nccl_records_rank_is_named(tmp_path_factory, ranks):
    log = tmp_path_factory.mktemp("old") / "old.log"
    log.write_text(
        "".join(
            f"[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
            "1802212 milliseconds before timing out.\n"
            for r in ranks
        )
    )
    root = _root(log)
    assert sorted(root.extra["ranks"]) == sorted(f"rank {r}" for r in ranks)
