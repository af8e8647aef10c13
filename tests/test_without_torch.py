"""ppaux installed without torch, as the README's first command installs it: the commands that
need torch say so in one line and exit 2, and the torch-free reader works.

The virtual environment is real (``python -m venv --without-pip``, then this run's pip installs
``-e CHECKOUT[test]`` into it with ``--python``, without the torch extra) and is kept under
``~/.cache/ppaux`` (or ``$PPAUX_VENV_CACHE``), keyed by pyproject.toml, the Python version and
the checkout's path, so only the first run pays for the install (about 20 s of CPU with pip's
cache warm), and one process builds it at a time (a file lock: a second pytest-xdist worker waits
for it instead of building the same folder). The checkout is installed editable: the code under
test is the working tree's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, file_lock

HINT = (
    "install numpy and the torch your sglang deployment runs: pip install numpy torch==X.Y.Z, "
    "X.Y.Z being the version 'pip show torch' names there (without a GPU, its CPU build: "
    "https://download.pytorch.org/whl/cpu)"
)


def _venv_dir() -> Path:
    # The checkout's path is part of the key: the install is editable, so a virtual environment
    # built for another checkout (a clone since deleted) would run that checkout's code.
    key = hashlib.sha256(
        (REPO / "pyproject.toml").read_bytes() + sys.version.encode() + str(REPO).encode()
    )
    base = Path(os.environ.get("PPAUX_VENV_CACHE") or Path.home() / ".cache" / "ppaux")
    return base / f"venv-no-torch-{key.hexdigest()[:16]}"


@pytest.fixture(scope="module")
def venv() -> Path:
    folder = _venv_dir()
    with file_lock(folder.with_name(f".{folder.name}.lock")):
        _build_venv(folder)
    return folder


def _build_venv(folder: Path) -> None:
    done = folder / ".ppaux-complete"
    if done.exists() and (folder / "bin" / "python").exists():
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    # No pip of its own (ensurepip costs seconds of CPU): this run's pip installs into it
    # (``--python``), and compiles nothing ahead (what the tests import compiles as they run).
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=300
    )
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(folder / "bin" / "python"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "-e",
            f"{REPO}[test]",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    done.write_text("ok\n")


def _run(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(venv / "bin" / "ppaux"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "NO_COLOR": "1"},
    )


def test_the_venv_really_has_no_torch(venv):
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import torch"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 1 and "No module named 'torch'" in probe.stderr


@pytest.mark.parametrize(
    "args, feature",
    [
        (("replay", "fixtures/dumps/aux_list.pt"), "replay"),
        (
            ("replay", "fixtures/dumps/aux_list.pt", "--transport", "wire", "-f", "json"),
            "replay",
        ),
        (
            ("tensorize", "fixtures/dumps/aux_list.pt", "-o", "/nonexistent/fixed.pt"),
            "tensorize",
        ),
        (("check-skew", "--distributed"), "gathering fingerprints over torch.distributed"),
        (
            ("check-skew", "--distributed", "--rank", "0", "--world-size", "2"),
            "gathering fingerprints over torch.distributed",
        ),
    ],
)
def test_commands_that_need_torch_say_so_in_one_line(venv, args, feature):
    done = _run(venv, *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"ppaux: error: {feature} needs torch, which is not installed: {HINT}\n"


def test_an_unreadable_dump_is_said_before_torch_is_asked_for(venv, tmp_path):
    # Reading a dump needs no torch: a file torch would not help with is said first, alone.
    empty = "ppaux: error: fixtures/corrupt/empty.pt: empty file\n"
    for args in (
        ("tensorize", "fixtures/corrupt/empty.pt", "-o", str(tmp_path / "fixed.pt")),
        ("replay", "fixtures/corrupt/empty.pt"),
    ):
        done = _run(venv, *args)
        assert (done.returncode, done.stdout, done.stderr) == (2, "", empty), args
    assert not (tmp_path / "fixed.pt").exists()
    # Beside a readable dump, torch is still asked for, after the file it could not help with.
    done = _run(venv, "replay", "fixtures/corrupt/empty.pt", "fixtures/dumps/aux_list.pt")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"{empty}ppaux: error: replay needs torch, which is not installed: {HINT}\n"
    )


def test_inspect_and_check_skew_work_without_torch(venv, tmp_path):
    done = _run(venv, "inspect", "fixtures/dumps/aux_list.pt", "-f", "json")
    assert done.returncode == 1
    assert [f["code"] for f in json.loads(done.stdout)["findings"]] == ["PP101"]
    assert _run(venv, "inspect", "fixtures/dumps/clean_output.pt").returncode == 0
    done = _run(venv, "inspect", "fixtures/corrupt/empty.pt")
    assert done.returncode == 2
    assert done.stderr == "ppaux: error: fixtures/corrupt/empty.pt: empty file\n"
    # This venv has no sglang: fingerprint says so and writes nothing, unless it is given the
    # sglang tree to read.
    alone = _run(venv, "fingerprint", "--pp-rank", "0", "-o", str(tmp_path / "none.json"))
    assert alone.returncode == 2 and alone.stderr.count("\n") == 1
    assert "sglang is not importable" in alone.stderr and not (tmp_path / "none.json").exists()
    for rank in (0, 1):
        made = _run(
            venv,
            "fingerprint",
            "--pp-rank",
            str(rank),
            "--pp-size",
            "2",
            "--sglang-path",
            "fixtures/skew/trees/v0523",
            "-o",
            str(tmp_path / f"stage{rank}.json"),
        )
        assert made.returncode == 0, made.stderr
    done = _run(venv, "check-skew", str(tmp_path), "-f", "json")
    assert done.returncode in (0, 1) and json.loads(done.stdout)["command"] == "check-skew"


def test_torch_free_tests_pass_without_torch(venv):
    done = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_inspect_cli.py",
            "tests/test_gate.py",
            "tests/test_rules_cli.py",
            "tests/test_pickle_vm.py",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout.splitlines()[-1]
