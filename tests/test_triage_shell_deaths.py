"""A process that a shell or docker compose reports dead is a death (PP809 process-died, exit
1) with the steps of what killed it: bash's ``<script>: line N:  <pid> Killed  <command>``
(SIGKILL: look for the kernel's OOM killer) and compose's ``<service> exited with code 137``
(SIGKILL: the container's memory limit or the host's OOM killer). Words in a sentence are no
record, and a container that exited with 0 did not die.

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

DECODE = (
    "[2026-12-03 14:56:00 PP0] Decode batch. #running-req: 1, #token: 100, token usage: 0.01, "
    "gen throughput (token/s): 10.0, #queue-req: 0\n"
)
#: A compose log as docker compose writes it: the service's column, then its own exit line.
COMPOSE = (
    "scalellm          | ./entrypoint.sh: line 28:     7 Killed                  "
    'LD_LIBRARY_PATH=/app/lib:$LD_LIBRARY_PATH /app/bin/scalellm $ARGS "$@"\n'
    "scalellm exited with code 137\n"
)
BASH = (
    DECODE + "/bin/bash: line 1:     7 Killed                  python3 -m "
    "sglang.launch_server --pp-size 2\n"
)


def _report(text: str):
    return triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})


def _found(text: str):
    (found,) = [f for f in _report(text).findings if f.code == "PP809"]
    return found


def _steps(text: str) -> list[str]:
    report = _report(text)
    return [f"{s['comment']} {' '.join(s['argv'] or [])}" for s in report.data["steps"]]


@pytest.mark.parametrize(
    ("log", "said"),
    [
        (
            BASH,
            "pid 7 (python3 -m sglang.launch_server --pp-size 2) died: killed by SIGKILL "
            "(signal 9; bash's report of its child in /bin/bash)",
        ),
        (
            COMPOSE,
            'pid 7 (LD_LIBRARY_PATH=/app/lib:$LD_LIBRARY_PATH /app/bin/scalellm $ARGS "$@") '
            "died: killed by SIGKILL (signal 9; bash's report of its child in ./entrypoint.sh)",
        ),
        (
            DECODE + "sglang-pp1-1 exited with code 137\n",
            "container sglang-pp1-1 (docker compose) died: killed by SIGKILL (exit code 137: "
            "128 + signal 9;",
        ),
        (
            DECODE + "web exited with code 139\n",
            "container web (docker compose) died: killed by SIGSEGV (exit code 139",
        ),
        (
            DECODE + "web exited with code 1\n",
            "container web (docker compose) died: exited with status 1 (docker compose)",
        ),
        (
            DECODE
            + "./serve.sh: line 9: 4242 Segmentation fault      (core dumped) python3 x.py\n",
            "pid 4242 (python3 x.py) died: killed by SIGSEGV (signal 11;",
        ),
    ],
)
def test_a_shell_s_or_compose_s_record_is_that_process_s_death(log, said):
    found = _found(log)
    assert said in " ".join(found.message.split()), found.message
    assert found.extra["no_root"] == "process-died"
    assert found.severity.name == "ERROR"


def test_a_compose_log_s_two_records_are_one_death_with_the_container_s_steps():
    found = _found(COMPOSE)
    assert "1 more record of a death: container scalellm (docker compose)" in " ".join(
        found.message.split()
    )
    words = _steps(COMPOSE)
    assert any("{{.State.OOMKilled}}" in w for w in words), words
    assert any("Killed process|Out of memory" in w for w in words), words
    assert any("deploy.resources.limits.memory" in w for w in words), words


def test_bash_s_kill_has_the_kernel_s_oom_steps():
    words = _steps(BASH)
    assert any("journalctl -k -g Killed process|Out of memory" in w for w in words), words


def test_the_exit_is_1_on_the_command_line(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(COMPOSE, encoding="utf-8")
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize(
    "line",
    [
        "We saw a line like ./run.sh: line 3:  7 Killed   python x.py in the old log",
        "the docs say web exited with code 137 when the limit is reached",
        "web exited with code 0",
        "the job was Killed by the OOM killer, see above",
    ],
)
def test_words_in_a_sentence_and_a_clean_exit_are_no_record(line):
    report = _report(DECODE + line + "\n")
    assert [f.code for f in report.findings if f.code in ("PP802", "PP809")] == []


@settings(max_examples=30, deadline=None)
@given(
    pid=st.integers(1, 4_000_000),
    service=st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True),
)
def test_any_pid_and_service_are_named(pid, service):
    log = (
        DECODE + f"{service}  | ./entrypoint.sh: line 2: {pid:5d} Killed                  "
        "python3 serve.py\n" + f"{service} exited with code 137\n"
    )
    flat = " ".join(_found(log).message.split())
    assert f"pid {pid} (python3 serve.py) died: killed by SIGKILL (signal 9;" in flat
    assert f"container {service} (docker compose)" in flat


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "/bin/bash: line 1:     7 Killed                  python3 -m sglang.launch_server",
            "killed by SIGKILL (signal 9; bash's report of its child in /bin/bash), and not "
            "what ended it: look for the kernel's OOM killer",
        ),
        ("scalellm exited with code 137", "'docker inspect <container> --format"),
    ],
)
def test_explain_says_the_line_reports_that_death(line, said):
    result = CliRunner().invoke(app, ["explain", line])
    assert result.exit_code == 2
    assert said in " ".join(result.output.split())
