"""``check-skew --distributed`` with real processes: torchrun and gloo on 127.0.0.1.

Each test starts three workers (and torchrun agents), so each takes several seconds on a small
machine; they are marked ``distributed`` and run in the default suite. Rank 0's stdout is the
report; every worker writes its exit code to a file so that the tests can check that all ranks
exit with rank 0's code.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import free_port
from skew_fixtures import TREES

pytestmark = [pytest.mark.distributed, pytest.mark.torch]

TIMEOUT_S = 120


def _env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    # One thread per worker: three of them share a small machine.
    env.update(NO_COLOR="1", COLUMNS="120", OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    return env


def _worker_script(tmp_path: Path, trees: dict[str, str], extra: str, *, die_on: str = "") -> Path:
    """A shell worker: sglang found through PYTHONPATH (a tree per rank), exit code recorded."""
    cases = "\n".join(f'    {rank}) TREE="{TREES / name}" ;;' for rank, name in trees.items())
    die = (
        f'if [ "$RANK" = "{die_on}" ]; then echo dead > "{tmp_path}/rank$RANK.rc"; exit 3; fi\n'
        if die_on
        else ""
    )
    script = tmp_path / "worker.sh"
    script.write_text(
        "#!/bin/sh\n"
        # torchrun stops a node's workers with SIGTERM to their process group once one fails;
        # a trap (not an ignore) lets the worker handle it and the shell still record its code.
        + "trap true TERM\n"
        + die
        + 'case "$RANK" in\n'
        + cases
        + "\nesac\n"
        + f'PYTHONPATH="$TREE" "{sys.executable}" -m ppaux_cli check-skew --distributed {extra}\n'
        + "code=$?\n"
        + f'echo $code > "{tmp_path}/rank$RANK.rc"\n'
        + "exit $code\n"
    )
    return script


def _codes(tmp_path: Path, ranks: int) -> list[str]:
    return [(tmp_path / f"rank{r}.rc").read_text().strip() for r in range(ranks)]


def _torchrun(*args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--master-addr",
        "127.0.0.1",
        "--monitor-interval",
        "0.2",
        *args,
    ]


def test_torchrun_three_ranks_one_on_another_release(tmp_path):
    script = _worker_script(
        tmp_path,
        {"0": "v0523", "1": "v0523", "2": "v0519"},
        "--timeout 30 --pp-size 3 --format json",
    )
    done = subprocess.run(
        _torchrun(
            "--nproc-per-node",
            "3",
            "--master-port",
            str(free_port()),
            "--no-python",
            "sh",
            str(script),
        ),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=_env(),
    )
    assert _codes(tmp_path, 3) == ["1", "1", "1"], done.stderr
    doc = json.loads(done.stdout)
    assert doc["distributed"]["gathered_over"] == "gloo"
    assert doc["distributed"]["world_size"] == 3
    stages = doc["stages"]
    assert [s["label"] for s in stages] == ["pp0", "pp1", "pp2"]
    assert [s["capability"]["version"] for s in stages] == ["0.5.23", "0.5.23", "0.5.19"]
    assert [s["capability"]["origin"] for s in stages] == ["installed"] * 3
    host = socket.gethostname()
    found = [(f["code"], f["path"]) for f in doc["findings"]]
    assert ("PP301", f"rank 2 ({host})") in found
    assert [f["sglang_error"] for f in doc["findings"] if f["code"] == "PP307"] == [
        "KeyError: 'sampling_mask_token_ids'"
    ] * 2
    assert doc["missing_ranks"] == []


def test_torchrun_a_rank_that_dies_does_not_hang_the_others(tmp_path):
    """Three torchrun agents (one per 'node'); the worker of node 2 dies before it reports."""
    script = _worker_script(tmp_path, {"0": "v0523", "1": "v0523"}, "--timeout 5", die_on="2")
    port = str(free_port())
    agents = [
        subprocess.Popen(
            _torchrun(
                "--nnodes",
                "3",
                "--nproc-per-node",
                "1",
                "--node-rank",
                str(node),
                "--master-port",
                port,
                "--no-python",
                "sh",
                str(script),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for node in range(3)
    ]
    outputs = []
    try:
        for agent in agents:
            outputs.append(agent.communicate(timeout=TIMEOUT_S))
    finally:
        for agent in agents:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
    assert _codes(tmp_path, 3) == ["1", "1", "dead"], [err[-2000:] for _, err in outputs]
    report = outputs[0][0]
    assert "PP317 error rank 2: rank 2 sent no fingerprint within 5 s" in report
    assert "2 stage(s)" in report  # the header, below the verdict
    assert outputs[1][0] == ""  # only rank 0 reports


def test_explicit_init_method_and_a_rank_that_never_arrives(tmp_path):
    """No torchrun: rank 0 serves the store at tcp://127.0.0.1:PORT; rank 2 is never started."""
    init = f"tcp://127.0.0.1:{free_port()}"
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ppaux_cli",
                "check-skew",
                "--distributed",
                "--init-method",
                init,
                "--rank",
                str(rank),
                "--world-size",
                "3",
                "--timeout",
                "4",
                "--sglang-path",
                str(TREES / "v0523"),
                "--format",
                "json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for rank in (0, 1)
    ]
    results = [w.communicate(timeout=TIMEOUT_S) for w in workers]
    assert [w.returncode for w in workers] == [1, 1], [err for _, err in results]
    doc = json.loads(results[0][0])
    assert doc["distributed"]["gathered_over"] == "store"
    assert doc["missing_ranks"] == [
        {"rank": 2, "host": None, "message": "rank 2 sent no fingerprint within 4 s"}
    ]
    # PP304 (warnings) says that the fixture tree is not a release's code.
    assert [(f["code"], f["path"]) for f in doc["findings"] if f["code"] != "PP304"] == [
        ("PP317", "rank 2")
    ]
    assert [s["rank"]["rank"] for s in doc["stages"]] == [0, 1]
    assert results[1] == ("", "")
