"""``ppaux inspect`` as a user runs it: exit codes, one-line errors, directories, no torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import REPO, cli

import ppaux

pytestmark = pytest.mark.usefixtures("in_repo")
run = cli


def test_version_and_help():
    assert run("--version").stdout == f"ppaux {ppaux.__version__}\n"
    result = run("inspect", "--help")
    assert result.exit_code == 0 and "--fail-on" in result.stdout


def test_exit_codes_follow_fail_on():
    assert run("inspect", "fixtures/dumps/clean_output.pt").exit_code == 0
    assert run("inspect", "fixtures/dumps/aux_list.pt").exit_code == 1
    assert run("inspect", "fixtures/dumps/aux_non_contiguous.pt").exit_code == 0
    assert (
        run("inspect", "fixtures/dumps/aux_non_contiguous.pt", "--fail-on", "warning").exit_code
        == 1
    )
    assert (
        run("inspect", "fixtures/dumps/aux_empty_tensor.pt", "--fail-on", "warning").exit_code == 0
    )
    assert run("inspect", "fixtures/dumps/aux_empty_tensor.pt", "--fail-on", "info").exit_code == 1
    assert run("inspect", "fixtures/dumps/aux_list.pt", "--fail-on", "never").exit_code == 0


@pytest.mark.parametrize(
    "path, message",
    [
        ("fixtures/corrupt/empty.pt", "empty file"),
        ("fixtures/corrupt/truncated.pt", "truncated or corrupt zip file (File is not a zip file)"),
        (
            "fixtures/corrupt/no_datapkl.pt",
            "zip file without a data.pkl record: not a torch.save file",
        ),
        (
            "fixtures/corrupt/deep_nesting.pt",
            "the dump nests too deeply (limit max_depth=100 reached); raise it with "
            "--limit max_depth=N",
        ),
        ("fixtures/corrupt/truncated_datapkl.pt", None),
        ("fixtures/corrupt/random_bytes.pt", None),
        ("fixtures/corrupt/text_file.pt", None),
        ("no/such/file.pt", "no such file"),
    ],
)
def test_bad_inputs_are_one_line_and_exit_2(path, message):
    result = run("inspect", path)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ppaux: error: {path}: ")
    if message is not None:
        assert lines[0] == f"ppaux: error: {path}: {message}"
    assert "Traceback" not in result.output


def test_a_zip_torch_load_refuses_is_a_finding_naming_torchs_reason():
    # Records under two folders: torch's zip reader stops at the second folder ("file in archive
    # is not in a subdirectory", seen from torch.load 2.13), so rank 0 never sees this dict.
    result = run("inspect", "fixtures/corrupt/two_datapkl.pt", env={"COLUMNS": "1000"})
    assert result.exit_code == 1
    assert result.output.startswith(
        "1 error(s), 0 warning(s), 0 info, 0 input(s) not checked\n\n"
        "PP117 error fixtures/corrupt/two_datapkl.pt: torch.load refuses the file: its zip reader "
        "finds record archive/data.pkl outside the folder two_datapkl/ of the first record"
    )
    assert "file in archive is not in a subdirectory" in result.output


def test_other_inputs_are_still_inspected():
    result = run(
        "inspect", "fixtures/corrupt/empty.pt", "fixtures/dumps/aux_list.pt", "--format", "json"
    )
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert [f["code"] for f in doc["findings"]] == ["PP101"]
    assert doc["problems"] == [{"path": "fixtures/corrupt/empty.pt", "message": "empty file"}]


def test_directories_are_walked(tmp_path):
    result = run("inspect", "fixtures/malicious", "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    names = sorted(os.path.basename(f["path"]) for f in doc["files"])
    assert names == sorted(os.listdir("fixtures/malicious"))
    (tmp_path / "notes.txt").write_text("no dumps here")
    result = run("inspect", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr == (
        f"ppaux: error: {tmp_path}: directory holds no dumps (*.pt, *.pth, "
        "*.pkl, *.pickle, *.bin, *.ppaux)\n"
    )


def test_bad_option_values_are_one_line():
    result = run("inspect", "fixtures/dumps/aux_list.pt", "--limit", "max_depth=x")
    assert (result.exit_code, result.stderr) == (
        2,
        "ppaux: error: --limit: limit max_depth must be a whole number in ASCII digits (0-9, "
        "nothing else), not 'x'\n",
    )
    result = run("inspect", "fixtures/dumps/aux_list.pt", "--limit", "nope=1")
    assert result.exit_code == 2 and result.stderr.startswith(
        "ppaux: error: --limit: unknown limit 'nope'"
    )
    result = run("inspect", "fixtures/dumps/aux_list.pt", "--format", "yaml")
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and "'yaml' is not one of" in result.stderr


def test_limits_can_be_raised():
    assert (
        run("inspect", "fixtures/corrupt/deep_nesting.pt", "--limit", "max_depth=500").exit_code
        == 0
    )


def test_explain():
    result = run("explain", "pp101")
    assert result.exit_code == 0
    assert result.stdout.startswith("PP101 aux-non-tensor (error")
    assert "Predicts the sglang error: received a non-tensor auxiliary PP output" in result.stdout
    result = run("explain", "PP999")
    assert result.exit_code == 2 and result.stderr.startswith(
        "ppaux: error: unknown rule code 'PP999'"
    )


def test_output_file(tmp_path):
    target = tmp_path / "report.json"
    result = run("inspect", "fixtures/dumps/aux_list.pt", "-f", "json", "-o", str(target))
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads(target.read_text())["findings"][0]["code"] == "PP101"


def _subprocess(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_inspect_never_imports_torch():
    code = (
        "import sys\n"
        "from ppaux_cli.app import app\n"
        "try:\n"
        "    app(['inspect', 'fixtures/dumps', '--format', 'json'], prog_name='ppaux')\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "print('torch' in sys.modules, code)\n"
    )
    result = _subprocess("-c", code)
    assert result.stdout.strip().splitlines()[-1] == "False 1", result.stderr


def test_real_process_plain_text_when_piped():
    result = _subprocess("-m", "ppaux_cli", "inspect", "fixtures/dumps/aux_list.pt")
    assert result.returncode == 1
    assert "\x1b[" not in result.stdout and result.stderr == ""
    assert (
        "PP101 error fixtures/dumps/aux_list.pt [__sampling_observer_output__.scores]"
        in result.stdout
    )


def test_colour_only_on_a_terminal_without_no_color():
    from ppaux.dump.inspection import inspect_paths
    from ppaux.report.formats import Format, render

    report = inspect_paths(["fixtures/dumps/aux_list.pt"])
    assert "\x1b[" in render(report, Format.TEXT, color=True)
    assert "\x1b[" not in render(report, Format.TEXT, color=False)


class _Terminal:
    def __init__(self):
        self.written = []

    def isatty(self):
        return True

    def write(self, text):
        self.written.append(text)
        return len(text)

    def flush(self):
        pass


def test_progress_only_on_a_terminal():
    import io

    from ppaux_cli.progress import progress_reporter

    with progress_reporter(io.StringIO(), "x") as progress:
        assert progress is None
    terminal = _Terminal()
    with progress_reporter(terminal, "inspecting") as progress:
        for done in range(1, 41):
            progress(done, 40)
    assert terminal.written, "a bar is drawn on a terminal"
