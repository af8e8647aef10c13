"""A real final line that is none of sglang's nine messages gets one bounded headline (the
kind, where to look first, a pointer to triage) with triage's whole reading under it, every
command included. Lines from public reports (fixtures/logs/real/README.md); what each headline
and the lines under it must say is written by hand."""

from __future__ import annotations

import shlex

import pytest
from helpers import cli

#: line, then by hand: words the headline must hold, and words of the lines under it.
LINES = {
    "cuda-oom": (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.06 GiB is free.",
        # a device's memory: the command triage's steps give first for it, not the host's
        ["a memory failure", "check what holds the GPUs' memory (nvidia-smi)"],
        "it is a memory failure (the device or host ran out of memory): 'ppaux triage' on the "
        "whole log",
    ),
    "dataloader-killed": (
        "RuntimeError: DataLoader worker (pid 4321) is killed by signal: Killed.",
        ["a memory failure", "check the kernel's OOM killer (dmesg -T)"],
        "it is a memory failure",
    ),
    "torchrun-sigkill": (
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: "
        "0 (pid: 20327) of binary: /usr/bin/python3",
        ["a process was killed by SIGKILL", "check the OOM killer (journalctl -k)"],
        "look for the kernel's OOM killer on its host (dmesg, journalctl -k: 'Killed process')",
    ),
    "deepspeed-sigsegv": (
        "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/usr/bin/python3', "
        "'-u', 'train.py', '--local_rank=1'] exits with return code = -11",
        ["a process died", "look for a core dump (coredumpctl)"],
        "killed by SIGSEGV (signal 11; DeepSpeed's launcher)",
    ),
    "heartbeat-monitor": (
        "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! "
        "Process will be terminated after dumping debug info. workMetaList_.size()=0",
        ["triage reads it as a communication failure", "set NCCL_DEBUG=INFO"],
        "one a line: export NCCL_DEBUG=INFO export NCCL_DEBUG_SUBSYS=INIT,NET",
    ),
    "nccl-remote-exit": (
        "RuntimeError: NCCL error: remote process exited or there was a network error",
        ["triage reads it as a communication failure", "set NCCL_DEBUG=INFO"],
        "the cause is on the network or another node",
    ),
}


@pytest.mark.parametrize("name", sorted(LINES))
def test_the_headline_is_one_short_line_and_the_reading_stands_under_it(name):
    line, headline_words, detail_words = LINES[name]
    result = cli("explain", "--", line)
    assert result.exit_code == 2
    assert result.stdout == ""
    first, *under = result.stderr.splitlines()
    assert first.startswith("ppaux: error: none of sglang's nine PP messages: ")
    assert len(first) <= 200, first
    for words in headline_words:
        assert words in first, first
    assert first.endswith("; 'ppaux triage' on the whole log names the root")
    # the commands and the full hints are not on the headline: they stand under it
    assert "next steps triage gives it" not in first
    assert under and all(u.startswith("  ") for u in under)
    assert detail_words in " ".join(" ".join(under).split())


def test_every_format_gives_the_same_refusal():
    line = LINES["cuda-oom"][0]
    said = {form: cli("explain", "--format", form, "--", line) for form in ("text", "json")}
    said["markdown"] = cli("explain", "--format", "markdown", "--", line)
    assert {r.exit_code for r in said.values()} == {2}
    assert len({r.stderr for r in said.values()}) == 1


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_the_reading_under_the_headline_is_wrapped_at_the_width(columns):
    line = "RuntimeError: NCCL error: unhandled system error"
    result = cli("explain", "--", line, env={"COLUMNS": str(columns)})
    assert result.exit_code == 2
    first, *under = result.stderr.splitlines()
    assert first.startswith("ppaux: error: ")  # the error itself stays one line
    # the reading, then the commands, one a line at the margin (continuations are further in)
    end = next(i for i, u in enumerate(under) if i and not u.startswith("    "))
    reading, steps = under[:end], under[end:]
    assert len(reading) > 1, under  # the reading, several hundred characters, is wrapped
    assert all(len(u) <= columns for u in reading), [len(u) for u in reading]
    assert reading[0].startswith("  ") and not reading[0].startswith("   ")
    assert all(u.startswith("    ") for u in reading[1:])  # continuations, further in
    # a command too long is broken between its words with ' \' (a word longer than the
    # line stays whole): joined back, each is the command, to paste as it is
    assert all(len(u) <= columns or len(shlex.split(u.removesuffix("\\"))) == 1 for u in steps)
    commands = "\n".join(steps).replace(" \\\n      ", " ").splitlines()
    assert "  export NCCL_DEBUG=INFO" in commands
    assert "  nvidia-smi --query-gpu=index,name,driver_version --format=csv" in commands
    assert all(u.startswith("  ") and not u.startswith("   ") for u in commands), steps
    said = " ".join(" ".join(reading).split())
    assert said.startswith("'ppaux triage -' reads it as a communication failure")
    assert said.endswith(", one a line:")
    # wrapping only breaks lines: at a width it all fits in, the reading is the one line it was
    wide = cli("explain", "--", line, env={"COLUMNS": "10000"}).stderr.splitlines()
    assert wide[1:] == ["  " + said, *commands], wide
    # the same refusal whatever the format
    assert cli("explain", "-f", "json", "--", line, env={"COLUMNS": str(columns)}).stderr == (
        result.stderr
    )


def test_the_next_steps_under_a_headline_are_one_command_a_line():
    # A communication failure in flight alone: triage's six commands, each a whole line that
    # pastes as it is (the list written by hand from triage's steps for it).
    line = "RuntimeError: NCCL error: remote process exited or there was a network error"
    result = cli("explain", line, env={"COLUMNS": "40"})
    assert result.exit_code == 2
    under = result.stderr.splitlines()[1:]
    reading = " ".join(" ".join(under[:-6]).split())
    assert reading.startswith("'ppaux triage -' reads it as a communication failure")
    assert reading.endswith("; the 6 next steps triage gives it, one a line:")
    assert under[-6:] == [
        "  export NCCL_DEBUG=INFO",
        "  export NCCL_DEBUG_SUBSYS=INIT,NET",
        "  export TORCH_NCCL_TRACE_BUFFER_SIZE=2000",
        "  export TORCH_NCCL_DUMP_ON_TIMEOUT=1",
        "  ip -brief address",
        "  nvidia-smi topo -m",
    ]
