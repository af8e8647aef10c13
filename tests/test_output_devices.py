"""Where ``-o``/``--output`` may write besides a file: the null device, taken by every command
(a CI step keeps the exit code and discards the report), written to directly and left a device;
every other device, a FIFO and a directory still refused. And an output folder that cannot be
written to: one wording, ``--output PATH: cannot write: REASON``, exit 2, for every command that
writes one."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import torch  # noqa: F401  (tensorize rewrites a dump with torch)
from helpers import REPO, cli

pytestmark = pytest.mark.torch

AUX_LIST = REPO / "fixtures" / "dumps" / "aux_list.pt"
FINGERPRINTS = REPO / "fixtures" / "skew" / "fingerprints" / "consistent"

#: Each command that writes an output, and the exit code its run gives without ``-o``.
COMMANDS: dict[str, tuple[tuple[str, ...], int]] = {
    "inspect": (("inspect", str(AUX_LIST)), 1),
    "inspect-json": (("inspect", str(AUX_LIST), "--format", "json"), 1),
    "diff": (("diff", str(AUX_LIST), str(AUX_LIST)), 1),
    "check-skew": (("check-skew", str(FINGERPRINTS)), 0),
    "explain": (("explain", "PP101"), 0),
    "rules": (("rules",), 0),
    "capture-list": (("capture", "list", "--dir", str(REPO / "fixtures" / "dumps")), 0),
}


def _null_device() -> os.stat_result:
    found = os.stat(os.devnull)
    assert stat.S_ISCHR(found.st_mode)
    return found


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_null_device_takes_the_output_and_the_exit_code_is_kept(name):
    args, code = COMMANDS[name]
    before = _null_device()
    assert cli(*args).exit_code == code  # the same run, to stdout
    result = cli(*args, "-o", os.devnull)
    assert (result.exit_code, result.stdout, result.stderr) == (code, "", "")
    after = _null_device()
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_a_link_to_the_null_device_is_the_null_device(tmp_path):
    link = tmp_path / "discard"
    link.symlink_to(os.devnull)
    result = cli("inspect", str(AUX_LIST), "-o", str(link))
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "")
    assert os.readlink(link) == os.devnull


def test_tensorize_writes_the_null_device_without_replacing_it(tmp_path):
    before = _null_device()
    result = cli("tensorize", str(AUX_LIST), "-o", os.devnull)
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith(f"wrote {os.devnull} (1 value converted)\n")
    after = _null_device()
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert not list(Path(os.path.dirname(os.devnull)).glob(".ppaux-tensorize-*"))


@pytest.mark.parametrize("command", [("inspect", str(AUX_LIST)), ("tensorize", str(AUX_LIST))])
def test_other_devices_a_fifo_and_a_directory_are_still_refused(tmp_path, command):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target, reason in (
        ("/dev/zero", "is not a regular file (a FIFO, socket or device)"),
        (str(fifo), "is not a regular file (a FIFO, socket or device)"),
        (str(tmp_path), "is a directory; give a file name"),
    ):
        result = cli(*command, "-o", target)
        assert result.exit_code == 2, (target, result.output)
        assert result.stderr.startswith(f"ppaux: error: --output {target}: {reason}")
        assert len(result.stderr.splitlines()) == 1
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.fixture
def locked(tmp_path: Path):
    """A folder no file can be made in, even by root (then with the immutable flag), and the
    reason the system gives for it, found by trying."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    immutable = False
    if os.access(folder, os.W_OK) and shutil.which("chattr"):
        done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False)
        immutable = done.returncode == 0
    try:
        (folder / "probe").touch()
    except OSError as exc:
        reason = exc.strerror
    else:
        (folder / "probe").unlink()
        reason = None
    yield folder, reason
    if immutable:
        subprocess.run(["chattr", "-i", str(folder)], check=False)
    folder.chmod(0o755)


@pytest.mark.parametrize("name", [*sorted(COMMANDS), "tensorize"])
def test_an_output_folder_that_cannot_be_written_is_said_one_way(locked, name):
    folder, reason = locked
    if reason is None:
        pytest.skip("cannot make a folder that refuses files here (root without chattr)")
    args, _ = COMMANDS.get(name, (("tensorize", str(AUX_LIST)), 0))
    target = folder / "out"
    result = cli(*args, "-o", str(target))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"ppaux: error: --output {target}: cannot write: {reason}\n"
    assert os.listdir(folder) == []
