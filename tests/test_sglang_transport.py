"""``ppaux replay --transport sglang`` on real sglang releases, and the emulated wires against it.

Each release runs from its prepared runtime (``tests/sglang_runtime.py``): the unmodified wheel
plus the packages its imports need. ppaux runs with ``--sglang-path`` at the unpacked wheel and
the rest of the runtime on ``PYTHONPATH``, as a user with an unpacked tree would.

- Every bundled fixture replays through sglang's own ``send_tensor_dict``/``recv_tensor_dict``
  with the outcome written down for the emulated wire in ``test_replay_fixtures.py``: the two
  must agree, and the outcome is sglang's.
- The differential test: 500 random messages per release (``pp_messages.py``) go through
  ``--transport wire``, ``--transport torch-distributed`` and ``--transport sglang``; the
  received auxiliary entries, the outcome, the error and the round trip must be the same on all
  three. A difference is a fault of the emulation, to be fixed there.

Both ask the same question of sglang's wire (the same settings) about different files, so each
release's ``--transport sglang`` runs once over the fixtures and the messages together
(``sglang_run``): most of a run's cost is starting sglang's two processes. ppaux and the
receivers it starts are forked from the release's zygote (``tests/runtime_zygote.py``) for the
same reason; ``test_wire.py`` and ``test_story_real_path.py`` start them fresh.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import runtime_zygote
import sglang_runtime
import torch
from helpers import REPO
from pp_messages import AUX, messages
from test_replay_fixtures import EXPECTED, observed

from ppaux.dump import inspect_paths

pytestmark = [pytest.mark.sglang_runtime, pytest.mark.torch]

RELEASES = ["0.5.19", "0.5.23"]
MESSAGES = 500


def replay(
    runtime: sglang_runtime.SglangRuntime, *args: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], str]:
    """``ppaux replay ARGS --format json`` in a process that can import the release.

    The report goes to a file (``--output``), not a pipe: what these tests compare is the wire,
    and a report that does not parse fails with the exit code and stderr that explain it.
    (Reports written whole to a slow pipe are ``test_output_blocking.py``'s subject.)
    """
    # The tree itself comes from --sglang-path; the packages it imports from PYTHONPATH.
    environment = runtime.packages_env(env)
    with tempfile.TemporaryDirectory(prefix="ppaux-replay-report-") as scratch:
        report = Path(scratch) / "report.json"
        done = runtime_zygote.run(
            runtime.version,
            ["-m", "ppaux_cli", "replay", "--format", "json", "--output", str(report), *args],
            environment,
            timeout=1200,
            cwd=REPO,
            zygote_env=runtime.env(env),
            helpers_forked=True,
        )
        text = report.read_text(encoding="utf-8") if report.exists() else ""
    try:
        document = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise AssertionError(
            f"the report does not parse ({exc}; {len(text)} characters); "
            f"exit {done.returncode}; stderr ends:\n{done.stderr[-3000:]}"
        ) from None
    return done.returncode, document, done.stderr


def settings(runtime: sglang_runtime.SglangRuntime) -> tuple[str, ...]:
    """The settings of every run here: the release's own add and pop, the legacy sender."""
    return ("--impl", "sglang", "--sender", "legacy", "--sglang-path", str(runtime.sglang_dir))


FIXTURES = ("fixtures/dumps", "fixtures/malicious", "fixtures/corrupt")


@pytest.fixture(scope="module")
def sglang_run(message_dir: Path) -> Callable[[str], tuple[int, dict[str, Any], str]]:
    """``sglang_run(version)``: the release's one ``--transport sglang`` run over the bundled
    fixtures and the differential's messages, made on first use."""
    made: dict[str, tuple[int, dict[str, Any], str]] = {}

    def run(version: str) -> tuple[int, dict[str, Any], str]:
        if version not in made:
            runtime = sglang_runtime.sglang_runtime(version)
            made[version] = replay(
                runtime, "--transport", "sglang", *settings(runtime), *FIXTURES, str(message_dir)
            )
        return made[version]

    return run


@pytest.mark.parametrize("version", RELEASES)
def test_every_fixture_meets_sglangs_own_wire_as_emulated(
    version: str, sglang_run: Callable[[str], tuple[int, dict[str, Any], str]]
) -> None:
    runtime = sglang_runtime.sglang_runtime(version)
    code, document, stderr = sglang_run(version)
    # 2: some fixtures are unusable on purpose (each named on stderr and in "problems").
    assert code == 2, stderr[-2000:]
    # Exit 2 is also a run that stopped before its report (a wire that could not be set up):
    # its stderr says why.
    assert "replay" in document, stderr[-3000:]
    info = document["replay"]
    assert info["transport"] == "sglang"
    assert info["sglang_runtime"] == {
        "version": version,
        "file": str(runtime.sglang_dir / "sglang/srt/distributed/parallel_state.py"),
        "all_gather_emulated": False,
    }
    assert info["implementations"]["sglang"]["version"] == version
    outcomes = {
        result["path"].removeprefix("fixtures/"): observed(result)
        for result in document["results"]
        if result["path"].startswith("fixtures/")
    }
    # Every problem of the run, the messages' too (they have none).
    problems = {problem["path"].removeprefix("fixtures/") for problem in document["problems"]}
    legacy_wire = {name: expected[2] for name, expected in EXPECTED.items()}
    assert outcomes == {
        name: expected
        for name, expected in legacy_wire.items()
        if expected[0] not in ("problem", "judged")
    }
    assert problems == {name for name, expected in legacy_wire.items() if expected[0] == "problem"}
    # A file with nothing to replay is judged as inspect judges it: its finding, no result.
    judged = {
        name: expected[1] for name, expected in legacy_wire.items() if expected[0] == "judged"
    }
    assert judged
    for name, code in judged.items():
        codes = {f["code"] for f in document["findings"] if f["path"] == f"fixtures/{name}"}
        assert code in codes, name


def replay_without_runtime(*args: str) -> subprocess.CompletedProcess[str]:
    """``ppaux replay --transport sglang ARGS`` where nothing of the runtime is importable."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "replay", "--transport", "sglang", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_an_sglang_that_cannot_be_imported_is_one_line_exit_2(tmp_path: Path) -> None:
    runtime = sglang_runtime.sglang_runtime(RELEASES[-1])
    # The tree alone: its third-party imports do not resolve.
    done = replay_without_runtime(
        "--sglang-path", str(runtime.sglang_dir), "fixtures/dumps/clean_output.pt"
    )
    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert re.fullmatch(
        r"ppaux: error: --transport sglang: sglang's runtime "
        r"\(sglang\.srt\.distributed\.parallel_state\) cannot be imported: No module named "
        r"'[\w.]+' \(at " + re.escape(str(runtime.sglang_dir)) + r"/sglang/[\w/]+\.py:\d+\); "
        r"install the packages the tree imports$",
        line,
    ), line
    # Without any sglang at all.
    done = replay_without_runtime("fixtures/dumps/clean_output.pt")
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "ppaux: error: --transport sglang: sglang's runtime "
        "(sglang.srt.distributed.parallel_state) cannot be imported: No module named 'sglang'; "
        "give --sglang-path an unpacked sglang release wheel (unzip sglang-X.whl -d DIR) "
        "whose own imports resolve\n",
    )
    # A tree that imports but is not sglang's runtime: one line, not an internal error.
    tree = tmp_path / "not-a-runtime"
    (tree / "sglang").mkdir(parents=True)
    (tree / "sglang" / "__init__.py").write_text("")
    done = replay_without_runtime("--sglang-path", str(tree), "fixtures/dumps/clean_output.pt")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "ppaux: error: --transport sglang: sglang's runtime "
        "(sglang.srt.distributed.parallel_state) cannot be imported: No module named "
        "'sglang.srt'; give --sglang-path an unpacked sglang release wheel (unzip "
        "sglang-X.whl -d DIR) whose own imports resolve\n"
    )


# ----------------------------------------------------------------------------------------------
# The differential test

#: What must be the same on every wire, per payload run.
COMPARED = (
    "outcome",
    "stage",
    "error_type",
    "error",
    "received",
    "output",
    "remaining_keys",
    "mismatches",
    "changes",
)


@pytest.fixture(scope="module")
def message_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("messages")
    for index, message in enumerate(messages(MESSAGES, seed=20261202)):
        torch.save(message, folder / f"m{index:04d}.pt")
    # Sent with the scheduler's one-rank attention-TP group: a transposed view is copied by the
    # group's reshape and arrives, a strided one it keeps is refused by gloo on the sender, and
    # the reshape refuses a sparse tensor.
    torch.save(
        {
            "next_token_ids": torch.ones(2, dtype=torch.int64),
            f"{AUX}v": torch.arange(6.0)[::2],
            "__msg_type__": "output",
        },
        folder / "z_strided.pt",
    )
    torch.save(
        {
            "next_token_ids": torch.ones(2, dtype=torch.int64),
            f"{AUX}t": torch.arange(6.0).reshape(2, 3).t(),
            "__msg_type__": "output",
        },
        folder / "z_non_contiguous.pt",
    )
    torch.save(
        {
            "next_token_ids": torch.ones(2, dtype=torch.int64),
            f"{AUX}s": torch.eye(3).to_sparse(),
            "__msg_type__": "output",
        },
        folder / "z_sparse.pt",
    )
    # A nested tensor: sglang takes each tensor's size for the metadata, which it has not.
    with warnings.catch_warnings():  # torch: the strided layout's API is a prototype
        warnings.simplefilter("ignore", UserWarning)
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    torch.save(
        {
            "next_token_ids": torch.ones(2, dtype=torch.int64),
            f"{AUX}n": nested,
            "__msg_type__": "output",
        },
        folder / "z_nested.pt",
    )
    # A sparse tensor under a key that is not auxiliary: sent as every top-level tensor is.
    torch.save(
        {
            "next_token_ids": torch.eye(3).to_sparse(),
            f"{AUX}s": torch.ones(2),
            "__msg_type__": "output",
        },
        folder / "z_sparse_other.pt",
    )
    return folder


def runs(document: dict[str, Any], folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Per dump of ``folder``, the compared fields of each payload's run."""
    found = {}
    for result in document["results"]:
        if Path(result["path"]).parent != folder:
            continue
        name = Path(result["path"]).name
        found[name] = [
            {field: run[field] for field in COMPARED}
            for payload in result["payloads"]
            for run in payload["runs"].values()
        ]
    return found


@pytest.mark.parametrize("version", RELEASES)
def test_emulated_wires_receive_what_sglangs_wire_receives(
    version: str, message_dir: Path, sglang_run: Callable[[str], tuple[int, dict[str, Any], str]]
) -> None:
    runtime = sglang_runtime.sglang_runtime(version)
    code, document, stderr = sglang_run(version)
    # The run's problems are the fixtures' (test_every_fixture_meets_sglangs_own_wire_as_emulated
    # names each); none is a message's.
    assert code == 2 and "problems" in document, stderr[-3000:]
    assert all(problem["path"].startswith("fixtures/") for problem in document["problems"]), stderr[
        -2000:
    ]
    results = {"sglang": runs(document, message_dir)}
    for transport in ("wire", "torch-distributed"):
        code, document, stderr = replay(
            runtime, "--transport", transport, *settings(runtime), str(message_dir)
        )
        assert code in (0, 1) and "problems" in document, stderr[-3000:]
        assert document["problems"] == [], stderr[-2000:]
        results[transport] = runs(document, message_dir)
    real = results["sglang"]
    assert len(real) == MESSAGES + 5  # the z_*.pt dumps
    # The corpus reaches every outcome, so that agreeing on it means something.
    stages = {run["stage"] for payloads in real.values() for run in payloads}
    assert {None, "pop", "wire"} <= stages, stages
    assert real["z_sparse.pt"][0]["error"] == "reshape is not implemented for sparse tensors"
    assert real["z_sparse_other.pt"][0]["error"] == "reshape is not implemented for sparse tensors"
    # inspect predicts each: the sender fails, rank 0 waits (PP107).
    assert "NestedTensorImpl doesn't support sizes" in real["z_nested.pt"][0]["error"]
    for name in ("z_sparse.pt", "z_sparse_other.pt", "z_nested.pt"):
        report = inspect_paths([str(message_dir / name)])
        assert "PP107" in {f.code for f in report.findings}, (name, report.findings)
    assert real["z_non_contiguous.pt"][0]["error"] is None
    assert real["z_strided.pt"][0]["error"] == "input tensor has to be contiguous"
    for transport in ("wire", "torch-distributed"):
        differing = sorted(name for name in real if results[transport][name] != real[name])
        assert differing == [], (
            transport,
            differing[:5],
            [(real[n], results[transport][n]) for n in differing[:2]],
        )


PROBE = """
import os, sys, time
entries = [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]
print("PROBE", "sglang" in sys.modules, any(e in sys.path for e in entries), flush=True)
print("PID", os.getpid(), flush=True)
if sys.argv[1:] == ["wait"]:
    time.sleep(600)
sys.exit(3)
"""

DRIVE = """
import json, os, subprocess, sys, time
from ppaux.replay.import_path import BOOT
root, folder = sys.argv[1:]
boot = [sys.executable, "-I", "-c", BOOT, root, json.dumps([folder]), "probe"]
done = subprocess.run(boot, capture_output=True, text=True, check=False)
print("ENDED", done.returncode, done.stdout.replace(chr(10), " "))
waiting = subprocess.Popen([*boot, "wait"], stdout=subprocess.PIPE, text=True)
waiting.stdout.readline()
pid = int(waiting.stdout.readline().split()[1])
waiting.kill()
waiting.wait()
for _ in range(600):  # the receiver, not this process's child, ends with its requester
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        print("KILLED", waiting.returncode)
        break
    time.sleep(0.1)
"""


def test_a_forked_receiver_is_ppauxs_command_line_run_after_the_releases_imports(
    tmp_path: Path,
) -> None:
    # What the zygote's interpreter does with ppaux's own receiver (tests/runtime_zygote.py):
    # run in a process that has imported sglang, isolated (no PYTHONPATH entry on its path), its
    # exit status and output its requester's; killed with its requester.
    if runtime_zygote.fresh():
        pytest.skip(f"{runtime_zygote.FRESH_ENV}=1: nothing is forked")
    runtime = sglang_runtime.sglang_runtime(RELEASES[0])
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    done = runtime_zygote.run(
        runtime.version,
        ["-c", DRIVE, str(REPO), str(tmp_path)],
        runtime.packages_env(),
        timeout=300,
        zygote_env=runtime.env(),
        helpers_forked=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ENDED 3 PROBE True False PID "), done.stdout
    assert lines[1] == "KILLED -9", done.stdout
