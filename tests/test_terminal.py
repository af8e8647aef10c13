"""Start-up and terminal manners: no torch where none is needed, plain help, no colour codes
outside a terminal or with NO_COLOR, progress on stderr only, shell completion."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO
from typer.testing import CliRunner

from ppaux.report.document import Report, Table
from ppaux.report.formats import Format, render
from ppaux_cli.app import app
from ppaux_cli.output import use_color
from ppaux_cli.progress import progress_reporter

ESC = "\x1b["

# Runs the CLI in a fresh interpreter and reports which heavy modules it imported.
_PROBE = """
import json, sys
from ppaux_cli.app import app
try:
    app(sys.argv[1:], prog_name="ppaux")
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("torch", "numpy", "sglang") if m in sys.modules)
sys.stderr.write("\\nPROBE " + json.dumps({"code": code, "heavy": heavy}) + "\\n")
"""


def _probe(*args: str, env: dict | None = None) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )
    line = [out for out in done.stderr.splitlines() if out.startswith("PROBE ")][-1]
    return json.loads(line[len("PROBE ") :])


def _on_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``args`` with stdout on a pseudo-terminal; its exit code and everything it printed."""
    main, child = pty.openpty()
    process = subprocess.Popen(args, cwd=REPO, stdout=child, stderr=subprocess.DEVNULL, env=env)
    os.close(child)
    chunks = []
    while True:  # read while it runs: a full terminal buffer would block the child
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    return process.wait(timeout=120), b"".join(chunks).decode()


@pytest.fixture(scope="module")
def fingerprints(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fingerprints")
    for rank in (0, 1):
        result = _probe(
            "fingerprint",
            "--pp-rank",
            str(rank),
            "--pp-size",
            "2",
            "--sglang-path",
            "fixtures/skew/trees/v0523",
            "--output",
            str(folder / f"stage{rank}.json"),
        )
        assert result == {"code": 0, "heavy": []}
    return folder


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("inspect", "--help"),
        (
            "inspect",
            "fixtures/dumps/aux_list.pt",
            "fixtures/dumps/aux_numpy_array.pt",
            "-f",
            "sarif",
        ),
        ("inspect", "fixtures/dumps", "fixtures/malicious", "-f", "junit"),
        ("rules", "-f", "json"),
        ("explain", "PP101"),
    ],
    ids=lambda a: " ".join(a)[:40],
)
def test_no_torch_for_help_inspect_rules_explain(args):
    assert _probe(*args)["heavy"] == []


def test_no_torch_for_fingerprint_and_check_skew(fingerprints):
    result = _probe("check-skew", str(fingerprints), "-f", "json")
    assert result["heavy"] == [] and result["code"] in (0, 1)


def test_importing_the_app_loads_no_command_internals():
    # 'ppaux --help' pays for what app.py imports: the readers, the analysers and rich stay out.
    code = (
        "import sys, json; import ppaux_cli.app; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'numpy', 'rich', 'pydantic', 'zipfile', 'xml') or m in "
        "('ppaux.dump.inspection', 'ppaux.dump.dumpfile', 'ppaux.dump.pickle_vm', "
        "'ppaux.skew.compare', "
        "'ppaux.skew.fingerprint', 'ppaux.capture.reports', 'ppaux.sglang_source.loader', "
        "'ppaux.report.config'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == []


def test_help_is_plain_text_even_on_a_terminal():
    # Plain help is part of the start-up budget (rich help alone costs over 0.1 s), so it is
    # plain on a terminal too: no escape codes either way.
    code, output = _on_terminal(
        [sys.executable, "-m", "ppaux_cli", "--help"], {**os.environ, "TERM": "xterm"}
    )
    assert code == 0 and "Usage: ppaux [OPTIONS] COMMAND" in output
    assert ESC not in output


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(Terminal()) is True
    assert use_color(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(Terminal()) is False
    report = Report("inspect", tables=[Table("t", ("key",), (("k",),), frozenset({(0, 0)}))])
    assert ESC in render(report, Format.TEXT, color=True)  # so the checks below can fail
    assert ESC not in render(report, Format.TEXT, color=False)


def test_cli_output_has_no_escape_codes_in_a_pipe_or_with_no_color():
    args = [sys.executable, "-m", "ppaux_cli", "inspect", "fixtures/dumps/aux_list.pt"]
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    piped = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert piped.returncode == 1 and "PP101 error" in piped.stdout and ESC not in piped.stdout
    code, output = _on_terminal(args, {**env, "NO_COLOR": "1", "TERM": "xterm"})
    assert code == 1 and "PP101 error" in output and ESC not in output
    # The same run on a terminal without NO_COLOR does colour: the check above can fail.
    code, output = _on_terminal(args, {**env, "TERM": "xterm"})
    assert code == 1 and ESC in output


def test_progress_goes_to_stderr_only_when_it_is_a_terminal():
    # 30+ dumps: enough for the bar. stderr is a terminal, stdout a pipe that must stay pure JSON.
    main, child = pty.openpty()
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "inspect", "fixtures/dumps", "-f", "json"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=child,
        timeout=300,
        env={**os.environ, "TERM": "xterm"},
    )
    os.close(child)
    os.close(main)
    assert json.loads(done.stdout)["command"] == "inspect"

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    with progress_reporter(stream, "inspecting") as progress:
        assert progress is not None
        for done_count in range(1, 31):
            progress(done_count, 30)
    assert "inspecting" in stream.getvalue()
    with progress_reporter(io.StringIO(), "inspecting") as progress:
        assert progress is None


def test_shell_completion_with_the_custom_group(tmp_path):
    env = {
        **os.environ,
        "_PPAUX_COMPLETE": "complete_bash",
        "COMP_WORDS": "ppaux ins",
        "COMP_CWORD": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0 and done.stdout.split() == ["inspect"]
    env.update(COMP_WORDS="ppaux inspect --format ", COMP_CWORD="3")
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.stdout.split() == [
        "text",
        "json",
        "github",
        "sarif",
        "junit",
        "gitlab",
        "markdown",
        "html",
    ]
    result = CliRunner().invoke(app, ["--show-completion", "bash"], env={"NO_COLOR": "1"})
    assert result.exit_code == 0 and "_PPAUX_COMPLETE=complete_bash" in result.stdout
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ppaux_cli.app import main; main()",
            "--install-completion",
            "bash",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(home), "SHELL": "/bin/bash"},
    )
    assert done.returncode == 0, done.stderr
    assert "ppaux" in (home / ".bashrc").read_text()
    assert any(p.name.startswith("ppaux") for p in (home / ".bash_completions").iterdir())


def test_stdin_on_a_terminal_says_ppaux_waits_for_a_dump():
    """'ppaux inspect -' typed at a terminal says what it waits for; Ctrl-D then ends it."""
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "ppaux_cli", "inspect", "-"],
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=REPO,
        )
        os.close(follower)
        first = process.stderr.readline().decode()
        # End of input, as Ctrl-D at a terminal; a terminal reports it to one read at a time,
        # so it is sent until the reader has had it as often as it reads.
        for _ in range(50):
            if process.poll() is not None:
                break
            os.write(leader, b"\x04")
            time.sleep(0.1)
        _, rest = process.communicate(timeout=60)
    finally:
        os.close(leader)
    assert first == (
        "ppaux: waiting for a dump on stdin (a terminal); pipe one in, as in "
        "'cat dump.pt | ppaux inspect -', or press Ctrl-C\n"
    )
    assert process.returncode == 2
    assert b"Traceback" not in rest


def test_stdin_from_a_pipe_gets_no_note():
    dump = (REPO / "fixtures" / "dumps" / "aux_list.pt").read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "inspect", "-"],
        input=dump,
        capture_output=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr == b""


# ----------------------------------------------------------------------------------------------
# Text that survives a CI log: at 80 columns no value is cut or broken mid-word


def _wide_report() -> Report:
    name = "capture-20261202T102324Z-some-very-long-host-name-25991-0001-pop.pt"
    return Report(
        command="inspect",
        tables=[
            Table(
                "versions",
                ("stage", "sglang", "torch", "error"),
                (
                    ("pp0", "0.5.23", "2.13.0+cu128", "RuntimeError: received a non-tensor " * 3),
                    ("pp1", "0.5.23.post1-dirty-from-a-fork", "2.13.0+cpu", "-"),
                ),
            ),
            Table("facts", ("", "value"), (("directory", "/var/tmp/" + "d" * 120), ("dump", name))),
        ],
    )


@pytest.mark.parametrize("width", [80, 100, 60])
def test_text_tables_cut_nothing_at_narrow_widths(width):
    report = _wide_report()
    text = render(report, Format.TEXT, width=width)
    words = " ".join(text.split())
    for table in report.tables:
        for row in table.rows:
            for cell in row:
                # Every value is there whole: its words in order (in the table or below it,
                # wrapped between words), a single word never broken.
                assert " ".join(cell.split()) in words, (width, cell)
                for word in cell.split():
                    assert word in text.split(), (width, word)
    for line in text.splitlines():
        # only a single word too long for any line runs past the width
        assert len(line) <= width or len(line.split()) == 1, line


def test_a_cut_cell_s_note_names_its_row_and_column():
    # The rows of a step table are not named by their first cell (batch 1 twice): the note
    # counts the row as shown and gives the first cell for the eye; a key names its row.
    verdict = "the last stage's add: auxiliary PP output 'entropy' is not a tensor"
    steps = Table(
        "steps",
        ("batch", "step", "verdict"),
        (("1", "0", "ok"), ("1", "1", verdict), ("4", "0", verdict + "\x1b[2J")),
    )
    keys = Table("keys", ("key", "kind", "value"), (("logits", "dense", "x" * 90),))
    text = render(Report(command="inspect", tables=[steps, keys]), Format.TEXT, width=60)
    lines = text.splitlines()
    # each note starts a line, wrapped between words under a hanging indent
    words = " ".join(text.split())
    assert any(line.startswith("[1] row 2 (batch 1), verdict: the") for line in lines)
    assert f"[1] row 2 (batch 1), verdict: {verdict}" in words
    assert any(line.startswith("[2] row 3 (batch 4), verdict: the") for line in lines)
    assert f"[2] row 3 (batch 4), verdict: {verdict}\\x1b[2J" in words
    # a value of one word longer than the line stays whole, on a line of its own
    assert lines[lines.index("[1] logits:") + 1] == "    " + "x" * 90
    assert "\x1b" not in text


def test_text_rows_become_blocks_when_columns_cannot_fit():
    table = Table("t", ("name", "a", "b", "c", "d"), (("x" * 50, "1" * 20, "2" * 20, "3", "4"),))
    text = render(Report(command="inspect", tables=[table]), Format.TEXT, width=60)
    assert "x" * 50 + "\n  a: " + "1" * 20 + "\n  b: " + "2" * 20 + "\n  c: 3\n  d: 4\n" in text
