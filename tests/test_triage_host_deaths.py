"""A process's death as the kernel or an interactive shell reports it in one line is a death
(PP809 process-died, exit 1), after a server's lines or alone: the shell's bare
``Segmentation fault (core dumped)``, ``Killed``, ``Aborted (core dumped)``, ``Bus error (core
dumped)``, and the kernel's OOM killer as ``dmesg``, ``dmesg -T``, ``journalctl -k`` and syslog
print it (``Out of memory: Killed process N (python)``, ``oom-kill:...,task=python,pid=N``),
the output of the very command triage's steps give. Words in a sentence are no record.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

LOAD = (
    "[2026-12-03 14:56:01 PP1 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16\n"
)
#: dmesg -T's records of one kill (the lines of a public report, pids and sizes kept).
DMESG_T = (
    "[Sun Mar 24 23:54:53 2024] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
    "mems_allowed=0,global_oom,task_memcg=/user.slice/user-1000.slice/session-3.scope,"
    "task=python,pid=6154,uid=1000\n"
    "[Sun Mar 24 23:54:53 2024] Out of memory: Killed process 6154 (python) "
    "total-vm:18109076kB, anon-rss:14095848kB, file-rss:0kB, shmem-rss:0kB, UID:1000 "
    "pgtables:29036kB oom_score_adj:0\n"
)


def _report(text: str):
    return triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})


def _found(text: str):
    (found,) = [f for f in _report(text).findings if f.code == "PP809"]
    return found


def _flat(text: str) -> str:
    return " ".join(_found(text).message.split())


def _steps(text: str) -> list[str]:
    report = _report(text)
    return [f"{s['comment']} {' '.join(s['argv'] or [])}" for s in report.data["steps"]]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("Segmentation fault (core dumped)", "killed by SIGSEGV (signal 11; the shell's report"),
        ("Segmentation fault", "killed by SIGSEGV (signal 11;"),
        ("Killed", "killed by SIGKILL (signal 9; the shell's report"),
        ("Aborted (core dumped)", "killed by SIGABRT (signal 6;"),
        ("Bus error (core dumped)", "killed by SIGBUS (signal 7;"),
    ],
)
@pytest.mark.parametrize("before", [LOAD, "$ python3 -m sglang.launch_server --pp-size 2\n", ""])
def test_a_shell_s_bare_line_is_a_death(line, said, before):
    found = _found(before + line + "\n")
    assert said in " ".join(found.message.split()), found.message
    assert found.extra["no_root"] == "process-died"
    assert found.severity.name == "ERROR"


def test_a_crash_gets_the_core_dump_steps_and_a_kill_the_oom_killer_s():
    crash = _steps(LOAD + "Segmentation fault (core dumped)\n")
    assert any("coredumpctl list" in w for w in crash), crash
    killed = _steps(LOAD + "Killed\n")
    assert any("journalctl -k -g Killed process|Out of memory" in w for w in killed), killed


@pytest.mark.parametrize(
    ("log", "who"),
    [
        (DMESG_T, "pid 6154 (python)"),
        (
            "[300974.215769] Out of memory: Killed process 336943 (python) total-vm:20061840kB, "
            "anon-rss:13408616kB, file-rss:128kB, shmem-rss:0kB, UID:1000 pgtables:27924kB "
            "oom_score_adj:0\n",
            "pid 336943 (python)",
        ),
        (
            LOAD + "Dec 03 14:56:08 node-a kernel: Out of memory: Killed process 12345 (python3) "
            "total-vm:1kB, anon-rss:1kB\n",
            "pid 12345 (python3)",
        ),
        (
            LOAD + "Dec 03 14:56:08 node-a kernel: Memory cgroup out of memory: Killed process "
            "12345 (python3) total-vm:1kB\n",
            "pid 12345 (python3)",
        ),
    ],
)
def test_the_kernel_s_oom_killer_record_is_that_process_s_death(log, who):
    flat = _flat(log)
    assert f"{who} died: killed by the kernel's OOM killer (SIGKILL;" in flat, flat
    words = _steps(log)
    assert any("free -g" in w for w in words), words
    assert any("use less host memory" in w for w in words), words


def test_a_cgroup_s_kill_says_its_limit():
    flat = _flat(
        "Dec 03 14:56:08 node-a kernel: Memory cgroup out of memory: Killed process 7 (python3)\n"
    )
    assert "its memory cgroup's limit ran out of memory" in flat, flat


def test_dmesg_s_two_records_of_one_kill_are_one_death():
    flat = _flat(DMESG_T)
    assert flat.count("pid 6154 (python)") >= 1
    assert len([f for f in _report(DMESG_T).findings if f.code == "PP809"]) == 1


@pytest.mark.parametrize(
    "line",
    [
        "We saw Segmentation fault (core dumped) in the old run",
        "the process was Killed",
        "look for 'Out of memory: Killed process' in journalctl -k",
        "Killed processes are listed by the kernel",
        "Aborted!",
    ],
)
def test_words_in_a_sentence_are_no_record(line):
    report = _report(LOAD + line + "\n")
    assert [f.code for f in report.findings if f.code in ("PP802", "PP809")] == []


@settings(max_examples=15, deadline=None)
@given(
    pid=st.integers(1, 4_000_000),
    name=st.from_regex(r"[a-z][a-z0-9_.-]{0,14}", fullmatch=True),
    uptime=st.integers(0, 9_999_999),
)
def test_any_pid_and_name_of_a_kernel_record_are_named(pid, name, uptime):
    log = f"[{uptime:>6}.123456] Out of memory: Killed process {pid} ({name}) total-vm:1kB\n"
    assert f"pid {pid} ({name}) died: killed by the kernel's OOM killer" in _flat(log)


@pytest.mark.parametrize(
    "log",
    [
        "Segmentation fault (core dumped)\n",
        "Killed\n",
        DMESG_T,
    ],
)
def test_alone_on_the_command_line_it_exits_1(tmp_path, log):
    path = tmp_path / "run.log"
    path.write_text(log, encoding="utf-8")
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 1, result.output
    assert "not an sglang log" not in result.output
