"""``-o``/``--output`` can never lose an input: every command refuses an output that is one of
its inputs, however spelt, and one that is not a regular file or a new path; exit 2, one line,
nothing written. ``tensorize -o -`` writes the dump to stdout; ``tensorize -`` says why not."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from ppaux.files import OutputPathError, check_output
from tests.helpers import REPO, cli

AUX_LIST = REPO / "fixtures" / "dumps" / "aux_list.pt"
FINGERPRINTS = REPO / "fixtures" / "skew" / "fingerprints" / "consistent"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A folder holding a copy of a dump (``dump.pt``), a symbolic and a hard link to it, and a
    directory with another copy; the working directory is a subfolder, so ``..`` spellings work."""
    shutil.copy(AUX_LIST, tmp_path / "dump.pt")
    (tmp_path / "link.pt").symlink_to("dump.pt")
    os.link(tmp_path / "dump.pt", tmp_path / "hard.pt")
    (tmp_path / "dir").mkdir()
    shutil.copy(AUX_LIST, tmp_path / "dir" / "inner.pt")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    return tmp_path


def _spellings(work: Path) -> list[str]:
    return [
        "../dump.pt",
        str(work / "dump.pt"),
        "../sub/../dump.pt",
        "../link.pt",
        "../hard.pt",
    ]


@pytest.mark.parametrize("index", range(5))
@pytest.mark.parametrize(
    "command",
    [
        ("inspect",),
        ("replay",),
        ("inspect", "--format", "json"),
        ("inspect", "--format", "html"),
        ("inspect", "--statistics"),
    ],
)
def test_report_commands_refuse_their_input_however_spelt(work, command, index):
    target = _spellings(work)[index]
    before = _digest(work / "dump.pt")
    result = cli(*command, "../dump.pt", "-o", target)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"ppaux: error: --output {target}: is the input")
    assert "never writes over an input" in lines[0]
    assert _digest(work / "dump.pt") == before
    assert (work / "link.pt").is_symlink()


def test_diff_refuses_either_side(work):
    before = _digest(work / "dump.pt")
    for target in ("../link.pt", "../hard.pt"):
        result = cli("diff", "../dir/inner.pt", "../dump.pt", "-o", target)
        assert result.exit_code == 2
        assert "is the input ../dump.pt" in result.stderr
    assert _digest(work / "dump.pt") == before


def test_a_file_inside_an_input_directory_is_an_input(work):
    inner = work / "dir" / "inner.pt"
    before = _digest(inner)
    result = cli("inspect", "../dir", "-o", "../dir/inner.pt")
    assert result.exit_code == 2
    assert "is the input" in result.stderr
    assert _digest(inner) == before
    # A new report file in the same directory is fine: it is not one of the dumps read there.
    done = cli("inspect", "../dir", "-o", "../dir/report.txt")
    assert done.exit_code == 1, done.stderr
    assert "PP101" in (work / "dir" / "report.txt").read_text()


def test_config_file_is_an_input(work):
    config = work / "ppaux.toml"
    config.write_text("[tool.ppaux]\n")
    result = cli("inspect", "../dump.pt", "--config", "../ppaux.toml", "-o", "../ppaux.toml")
    assert result.exit_code == 2
    assert "--output ../ppaux.toml: is the input;" in result.stderr
    assert config.read_text() == "[tool.ppaux]\n"


def test_check_skew_refuses_a_fingerprint_it_reads(tmp_path):
    folder = tmp_path / "prints"
    shutil.copytree(FINGERPRINTS, folder)
    victim = sorted(folder.glob("*.json"))[0]
    before = victim.read_bytes()
    result = cli("check-skew", str(folder), "-o", str(victim))
    assert result.exit_code == 2
    assert "is the input" in result.stderr
    assert victim.read_bytes() == before
    baseline = cli("check-skew", str(folder), "--baseline", str(victim), "-o", str(victim))
    assert baseline.exit_code == 2
    assert victim.read_bytes() == before


def test_tensorize_refuses_its_input_however_spelt(work):
    before = _digest(work / "dump.pt")
    for target in _spellings(work):
        result = cli("tensorize", "../dump.pt", "-o", target)
        assert result.exit_code == 2, (target, result.output)
        assert f"ppaux: error: --output {target}: is the input" in result.stderr
    assert _digest(work / "dump.pt") == before


@pytest.mark.parametrize("command", [("inspect", "../dump.pt"), ("explain", "PP101")])
def test_devices_and_directories_are_refused(work, command):
    for target, reason in (
        ("/dev/zero", "is not a regular file (a FIFO, socket or device)"),
        ("..", "is a directory"),
        ("../missing/report.txt", "its folder does not exist"),
    ):
        result = cli(*command, "-o", target)
        assert result.exit_code == 2, (target, result.output)
        assert result.stderr == f"ppaux: error: --output {target}: {reason}" + (
            "; give a file name, or - for stdout\n"
            if "regular" in reason
            else "; give a file name\n"
            if "directory" in reason
            else "\n"
        )
    assert stat.S_ISCHR(os.stat("/dev/zero").st_mode)


def test_a_fifo_is_refused_without_blocking(work):
    fifo = work / "pipe"
    os.mkfifo(fifo)
    for command in (("inspect", "../dump.pt"), ("tensorize", "../dump.pt"), ("rules",)):
        result = cli(*command, "-o", "../pipe")
        assert result.exit_code == 2
        assert "is not a regular file" in result.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_tensorize_refuses_a_device(work):
    result = cli("tensorize", "../dump.pt", "-o", "/dev/zero")
    assert result.exit_code == 2
    assert "is not a regular file" in result.stderr
    assert stat.S_ISCHR(os.stat("/dev/zero").st_mode)


@pytest.mark.torch
@pytest.mark.parametrize("target", ["elsewhere.pt", "missing.pt"])
def test_tensorize_refuses_a_symbolic_link_and_leaves_it(work, target):
    # tensorize renames a new file into place, which would replace the link itself (so
    # '-o /dev/stdout' once turned the system's /dev/stdout into a file).
    (work / "elsewhere.pt").write_bytes(b"kept")
    (work / "out.pt").symlink_to(target)
    result = cli("tensorize", "../dump.pt", "-o", "../out.pt")
    assert result.exit_code == 2
    assert result.stderr == (
        "ppaux: error: --output ../out.pt: is a symbolic link, which tensorize would replace "
        "with the dump; give the file it names, or - for stdout\n"
    )
    assert os.readlink(work / "out.pt") == target
    assert (work / "elsewhere.pt").read_bytes() == b"kept"


@pytest.mark.torch
@pytest.mark.skipif(os.geteuid() == 0, reason="root writes files whatever their mode")
def test_tensorize_refuses_a_file_it_may_not_write(work):
    locked = work / "locked.pt"
    locked.write_bytes(b"kept")
    locked.chmod(0o444)
    result = cli("tensorize", "../dump.pt", "-o", "../locked.pt")
    assert result.exit_code == 2
    assert "../locked.pt: cannot write: Permission denied" in result.stderr
    assert locked.read_bytes() == b"kept"


def test_check_output_rule():
    with pytest.raises(OutputPathError, match="is the input"):
        check_output(str(AUX_LIST), [os.path.relpath(AUX_LIST)])
    # A new path is fine, and so is a path no input names.
    check_output(str(REPO / "fixtures" / "dumps" / "no-such-output.txt"), [str(AUX_LIST)])
    # Inside an input directory, only files of the kinds read there count.
    check_output(str(REPO / "fixtures" / "dumps" / "README.md"), [str(AUX_LIST.parent)])
    with pytest.raises(OutputPathError):
        check_output(str(AUX_LIST), [str(AUX_LIST.parent)], (".pt",))


# ----------------------------------------------------------------------------------------------
# tensorize -o - and tensorize -


def test_tensorize_writes_the_dump_to_stdout(tmp_path):
    written = tmp_path / "fixed.pt"
    to_file = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "tensorize", str(AUX_LIST), "-o", str(written)],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert to_file.returncode == 0, to_file.stderr
    piped = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "tensorize", str(AUX_LIST), "-o", "-"],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    assert not (tmp_path / "-").exists()
    assert piped.stdout[:2] == b"PK"  # a torch.save zip archive
    assert b"wrote stdout (1 value converted)" in piped.stderr
    assert b"converted" not in piped.stdout[:200]
    streamed = tmp_path / "streamed.pt"
    streamed.write_bytes(piped.stdout)
    check = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "inspect", str(streamed), str(written)],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout
    assert set(os.listdir(tmp_path)) == {"fixed.pt", "streamed.pt"}


def test_tensorize_to_stdout_refuses_a_terminal():
    import pty

    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ppaux_cli", "tensorize", str(AUX_LIST), "-o", "-"],
            stdout=follower,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "ppaux: error: -o -: stdout is a terminal; the rewritten dump is binary: "
        "redirect it to a file\n"
    )


def test_tensorize_says_why_it_cannot_read_stdin():
    result = cli("tensorize", "-", "-o", "fixed.pt")
    assert result.exit_code == 2
    assert result.stderr == (
        "ppaux: error: -: tensorize reads tensor bytes back from the file, so it cannot read "
        "stdin; save the dump to a file and give its path\n"
    )


# ----------------------------------------------------------------------------------------------
# No machine path in a report a user may share


def test_shareable_path_is_relative_to_the_working_directory_or_the_name_alone(tmp_path):
    from ppaux.files import shareable_path

    inside = tmp_path / "captures" / "c.pt"
    assert shareable_path(str(inside), str(tmp_path)) == os.path.join("captures", "c.pt")
    assert shareable_path(str(inside), str(tmp_path / "elsewhere")) == "c.pt"
    assert shareable_path("captures/c.pt", "/") == "captures/c.pt"


def test_inspect_shows_rewritten_from_without_the_machine_path(tmp_path, monkeypatch):
    import json

    source = tmp_path / "in" / "c.pt"
    source.parent.mkdir()
    shutil.copy(REPO / "fixtures" / "dumps" / "capture_pop_error.pt", source)
    fixed = tmp_path / "out" / "fixed.pt"
    fixed.parent.mkdir()
    assert cli("tensorize", str(source), "-o", str(fixed)).exit_code == 0
    for where, expected in ((tmp_path, os.path.join("in", "c.pt")), (fixed.parent, "c.pt")):
        monkeypatch.chdir(where)
        doc = json.loads(
            cli("inspect", "fixed.pt" if where != tmp_path else "out/fixed.pt", "-f", "json").stdout
        )
        assert doc["files"][0]["capture"]["rewritten_from"] == expected
        assert str(tmp_path) not in json.dumps(doc)
        diff = cli("diff", str(source), str(fixed)).stdout
        assert f"rewrote {expected})" in diff


def test_triage_refuses_a_log_it_reads_from_a_directory(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank0.log").write_text("[2026-12-02 10:23:24 TP0] starting\n")
    result = cli("triage", str(logs), "-o", str(logs / "rank0.log"))
    assert result.exit_code == 2
    assert "is the input" in result.stderr
    assert (logs / "rank0.log").read_text() == "[2026-12-02 10:23:24 TP0] starting\n"
    # A report file that is not a log kind triage reads may go there.
    done = cli("triage", str(logs), "-o", str(logs / "report.md"), "-f", "markdown")
    assert done.exit_code in (0, 1), done.output
    assert (logs / "report.md").exists()


def test_fingerprint_never_writes_into_the_tree_it_reads(tmp_path):
    tree = tmp_path / "tree"
    (tree / "sglang").mkdir(parents=True)
    module = tree / "sglang" / "version.py"
    module.write_text("__version__ = '0.5.23'\n")
    result = cli("fingerprint", "--sglang-path", str(tree), "-o", str(module))
    assert result.exit_code == 2
    assert result.stderr == (
        f"ppaux: error: --output {module}: is the input (read from the directory {tree}); "
        "ppaux never writes over an input: give another output file\n"
    )
    assert module.read_text() == "__version__ = '0.5.23'\n"


# ----------------------------------------------------------------------------------------------
# stdin is an input: the file behind it, or the file a pipe was filled from

LOG = REPO / "fixtures" / "logs" / "cri-aux-list.log"


@pytest.mark.parametrize(
    "shell",
    [
        "cat s.log | ppaux inspect - -o s.log",
        "ppaux inspect - -o s.log < s.log",
        "cat s.log | ppaux triage - -o s.log",
        "ppaux triage - -o s.log < s.log",
        "ppaux triage - -o ./sub/../s.log < s.log",
        "cat dump.pt | ppaux inspect - -o dump.pt",
        "cat s.log | ppaux explain - -o s.log",
        "ppaux explain - -o s.log < s.log",
        "ppaux inspect - --format json -o dump.pt < dump.pt",
    ],
)
def test_stdin_and_the_file_behind_it_are_an_input(tmp_path, shell):
    shutil.copy(LOG, tmp_path / "s.log")
    shutil.copy(AUX_LIST, tmp_path / "dump.pt")
    (tmp_path / "sub").mkdir()
    before = {name: _digest(tmp_path / name) for name in ("s.log", "dump.pt")}
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        shell,
        shell=True,
        cwd=tmp_path,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("ppaux: error: --output ")
    assert "ppaux never writes over an input: give another output file" in done.stderr
    assert done.stdout == ""
    assert {name: _digest(tmp_path / name) for name in before} == before


def test_stdin_piped_to_another_output_is_written(tmp_path):
    shutil.copy(LOG, tmp_path / "s.log")
    (tmp_path / "old.txt").write_text("an older report\n")
    bin_dir = Path(sys.executable).parent
    for output in ("new.txt", "old.txt"):
        done = subprocess.run(
            f"cat s.log | ppaux triage - -o {output}",
            shell=True,
            cwd=tmp_path,
            env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode in (0, 1), done.stderr
        assert "<stdin>" in (tmp_path / output).read_text()


def test_a_partly_read_stdin_is_the_output_only_past_a_long_common_beginning(tmp_path):
    """A command that stops reading early (a limit) leaves a prefix: an output that begins with
    it is the input when the prefix is long (64 KiB), and may be chance when it is short."""
    import io

    from ppaux_cli.output_paths import StdinReader, refuse_stdin_copy

    data = bytes(range(256)) * 1024  # 256 KiB
    output = tmp_path / "out.bin"
    output.write_bytes(data)
    for read, refused in ((1 << 16, True), (100, False), (len(data), True)):
        reader = StdinReader(io.BytesIO(data))
        stream = io.BufferedReader(reader)
        stream.read(read)
        # What the buffered stream took from stdin, read ahead included.
        assert reader.size >= read
        if refused:
            with pytest.raises(typer.Exit):
                refuse_stdin_copy(reader, str(output))
        else:
            refuse_stdin_copy(reader, str(output))
    # A file holding other bytes of the same length is not the input.
    reader = StdinReader(io.BytesIO(data))
    io.BufferedReader(reader).read()
    output.write_bytes(bytes(len(data)))
    refuse_stdin_copy(reader, str(output))
    assert output.read_bytes() == bytes(len(data))
