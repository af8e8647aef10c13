"""A launcher's records of the root's own exit (torchrun's agent line ``failed (exitcode: 1)
local_rank: 0``, its ``ChildFailedError`` and its own traceback, DeepSpeed's ``[...] exits with
return code = 1``) are the same failure told again: never collateral, listed in the root's
``launcher_records``. A record of another rank, or of a kill (a signal), is still what followed.
Expectations by hand."""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths

ROOT = (
    'Traceback (most recent call last):\n  File "train.py", line 5, in <module>\n    main()\n'
    "ValueError: bad tokenizer file\n"
)
RANKED = "".join(f"[rank0]: {line}\n" for line in ROOT.splitlines())
AGENT = (
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: {code}) "
    "local_rank: {rank} (pid: 4242) of binary: /usr/bin/python\n"
)
TORCHRUN = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/bin/torchrun", line 8, in <module>\n'
    "    sys.exit(main())\n"
    '  File "/usr/local/lib/python3.10/site-packages/torch/distributed/run.py", line 806, in '
    "main\n"
    "    run(args)\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
)
DEEPSPEED = (
    "[2024-05-01 10:00:01,000] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', "
    "'-u', 'train.py', '--local_rank=0'] exits with return code = {code}\n"
)


def _findings(tmp_path: Path, text: str):
    log = tmp_path / "train.log"
    log.write_text(text)
    findings = triage_paths([str(log)]).findings
    (root,) = [f for f in findings if f.code == "PP802"]
    after = [f for f in findings if f.code in ("PP803", "PP804")]
    return root, [(f.key, f.location.line if f.location else None) for f in after]


def test_torchrun_s_records_of_the_root_s_exit_are_not_collateral(tmp_path: Path) -> None:
    root, after = _findings(tmp_path, ROOT + AGENT.format(code=1, rank=0) + TORCHRUN)
    assert root.extra["exception"] == "ValueError"
    assert after == []
    assert [r["line"] for r in root.extra["launcher_records"]] == [5, 6]


def test_deepspeed_s_return_code_of_the_root_is_not_collateral(tmp_path: Path) -> None:
    root, after = _findings(tmp_path, ROOT + DEEPSPEED.format(code=1))
    assert after == []
    assert [r["line"] for r in root.extra["launcher_records"]] == [5]


def test_a_kill_is_still_what_followed(tmp_path: Path) -> None:
    _, after = _findings(tmp_path, ROOT + AGENT.format(code=-9, rank=0))
    assert after == [("local_rank 0", 5)]
    _, after = _findings(tmp_path, ROOT + DEEPSPEED.format(code=-9))
    assert after == [("local_rank 0", 5)]


def test_another_rank_s_exit_is_still_what_followed(tmp_path: Path) -> None:
    root, after = _findings(tmp_path, RANKED + AGENT.format(code=1, rank=1))
    assert root.key == "rank 0"
    assert after == [("local_rank 1", 5)]
    root, after = _findings(tmp_path, RANKED + AGENT.format(code=1, rank=0))
    assert after == []


def test_only_the_first_exit_is_the_root_s(tmp_path: Path) -> None:
    text = ROOT + AGENT.format(code=1, rank=0) + AGENT.format(code=1, rank=1)
    _, after = _findings(tmp_path, text)
    assert after == [("local_rank 1", 6)]


def test_the_summary_s_child_failed_error_is_the_launcher_s_record(tmp_path: Path) -> None:
    summary = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Failures:\n"
        "[1]:\n"
        "  time      : 2023-05-19_16:39:58\n"
        "  host      : host-a\n"
        "  rank      : 1 (local_rank: 1)\n"
        "  exitcode  : 1 (pid: 78971)\n"
        "  error_file: <N/A>\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2023-05-19_16:39:58\n"
        "  host      : host-a\n"
        "  rank      : 0 (local_rank: 0)\n"
        "  exitcode  : 1 (pid: 78970)\n"
        "  error_file: <N/A>\n"
    )
    root, after = _findings(tmp_path, TORCHRUN + summary)
    assert root.key == "rank 0"
    assert after == [("rank 1", 16)]
