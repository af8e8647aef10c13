"""The command-line habits ppaux shares with ruff and pip-audit: short flags, stdin and stdout as
``-``, help on bare commands, readable metavars, ppaux's own words for bad values, the extend
options, statistics, progress, colour variables and completion."""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, cli
from hypothesis import given, settings
from hypothesis import strategies as st

import ppaux
from ppaux.report.formats import Format
from ppaux.report.selection import Selection
from ppaux_cli.app import COMMANDS, load_command
from ppaux_cli.output import use_color

ESC = "\x1b["
AUX_LIST = "fixtures/dumps/aux_list.pt"  # one finding: PP101, an error
CLEAN = "fixtures/dumps/clean_output.pt"  # no finding
#: Every --format value, in the order the Format enum lists them (other formats may join it).
FORMATS = ", ".join(member.value for member in Format)


pytestmark = pytest.mark.usefixtures("in_repo")


def ppaux_process(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "ppaux_cli", *args],
        cwd=cwd,
        capture_output=True,
        timeout=120,
        env={**base, **(env or {})},
        input=stdin,
    )


# ----------------------------------------------------------------------------------------------
# -h, -V, -q, -v and bare groups


def test_short_help_and_version():
    assert cli("-h").stdout == cli("--help").stdout
    assert cli("inspect", "-h").stdout == cli("inspect", "--help").stdout
    assert cli("capture", "list", "-h").exit_code == 0
    assert cli("-V").stdout == f"ppaux {ppaux.__version__}\n"
    assert cli("--version").stdout == f"ppaux {ppaux.__version__}\n"


@pytest.mark.parametrize(
    "args, usage",
    [
        ((), "Usage: ppaux [OPTIONS] COMMAND [ARGS]..."),
        (("capture",), "Usage: ppaux capture [OPTIONS] COMMAND [ARGS]..."),
    ],
)
def test_bare_group_prints_its_help_on_stderr_and_exits_2(args, usage):
    done = ppaux_process(*args)
    assert done.returncode == 2 and done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert lines[0] == usage and "Commands:" in lines and "ppaux: error" not in done.stderr.decode()


def test_help_lists_every_command_with_its_own_summary():
    help_text = cli("--help").stdout
    for name, entry in COMMANDS.items():
        command = load_command(name)
        assert " ".join(command.help.split()) == entry.summary, name
        assert f"  {name} " in help_text


def test_help_imports_no_command_module():
    code = (
        "import sys, json\nfrom ppaux_cli.app import main\ntry:\n    main()\n"
        "except SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith("
        "('ppaux_cli.commands.', 'pydantic')))), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(done.stderr.splitlines()[-1]) == []


def test_readable_metavars():
    usage = cli("inspect", "--help").stdout.splitlines()[0]
    assert usage == "Usage: ppaux inspect [OPTIONS] PATH..."
    assert cli("check-skew", "--help").stdout.splitlines()[0] == (
        "Usage: ppaux check-skew [OPTIONS] [PATH]..."
    )
    for command in (
        "inspect",
        "replay",
        "check-skew",
        "explain",
        "rules",
        "fingerprint",
        "diff",
        "tensorize",
    ):
        text = cli(command, "--help").stdout
        assert "<" not in text.split("Options:")[0] and "{" not in text and "list[" not in text
    text = cli("inspect", "--help").stdout
    assert "--fail-on [error|warning|info|never]" in text
    # Eight formats are too long a list for the option's column: named, then listed in the help.
    assert "-f, --format, --output-format FORMAT" in text
    assert f"One of: {FORMATS}." in " ".join(text.split())


def test_verbose_names_the_configuration_and_quiet_silences_it(tmp_path):
    (tmp_path / "ppaux.toml").write_text('ignore = ["PP112"]\nfail-on = "warning"\n')
    dump = str(REPO / CLEAN)
    for args in (("inspect", dump, "-v"), ("-v", "inspect", dump)):
        done = ppaux_process(*args, cwd=tmp_path)
        assert done.returncode == 0
        assert done.stderr.decode() == (
            f"ppaux: note: configuration: {tmp_path / 'ppaux.toml'}; fail-on warning; "
            "select all; ignore PP112; strict off\n"
        )
    done = ppaux_process("inspect", dump, "-q", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == b""
    done = ppaux_process("inspect", dump, "-q", "-v", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.decode() == "ppaux: error: --quiet and --verbose: give one or the other\n"


# ----------------------------------------------------------------------------------------------
# Bad values, in ppaux's words


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ("inspect", CLEAN, "--format", "jsn"),
            f"--format: 'jsn' is not one of {FORMATS}; did you mean 'json'?",
        ),
        (
            ("inspect", CLEAN, "--fail-on", "warn"),
            "--fail-on: 'warn' is not one of error, warning, info, never; did you mean 'warning'?",
        ),
        (
            ("inspect", CLEAN, "--fail-on", "zzz"),
            "--fail-on: 'zzz' is not one of error, warning, info, never",
        ),
        (
            ("replay", CLEAN, "--transport", "wier"),
            "--transport: 'wier' is not one of none, wire, torch-distributed, sglang; did you mean "
            "'wire'?",
        ),
        (
            ("rules", "--format", "markdwn"),
            "--format: 'markdwn' is not one of text, json, markdown; did you mean 'markdown'?",
        ),
        (
            ("explain", "PP1O1"),
            "unknown rule code 'PP1O1'; 'ppaux rules' lists them; did you mean 'PP101'?",
        ),
        (("explain", "QQ999"), "unknown rule code 'QQ999'; 'ppaux rules' lists them"),
        (("inspct", CLEAN), "'inspct' is not a ppaux command; did you mean 'inspect'?"),
        (
            ("inspect", CLEAN, "--release", "0.5.23.post1"),
            "--release: unknown sglang release '0.5.23.post1'; known: 0.5.18, 0.5.19, 0.5.20, "
            "0.5.21, 0.5.22, 0.5.23; did you mean '0.5.23'?",
        ),
        (
            ("inspect", CLEAN, "--release", "0.5.233"),
            "--release: unknown sglang release '0.5.233'; known: 0.5.18, 0.5.19, 0.5.20, "
            "0.5.21, 0.5.22, 0.5.23; did you mean '0.5.23'?",
        ),
        (
            ("inspect", CLEAN, "--extend-select", "PX9"),
            "--extend-select: 'PX9' matches no rule code; 'ppaux rules' lists them",
        ),
        (
            ("inspect", CLEAN, "--select", "PP1O1"),
            "--select: 'PP1O1' matches no rule code; 'ppaux rules' lists them; "
            "did you mean 'PP101'?",
        ),
        (
            ("rules", "--select", "pp1o1"),
            "--select: 'pp1o1' matches no rule code; 'ppaux rules' lists them; "
            "did you mean 'PP101'?",
        ),
    ],
)
def test_bad_values_are_one_line_in_ppaux_words_with_the_closest_value(args, message):
    done = ppaux_process(*args)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode() == f"ppaux: error: {message}\n"


def test_output_format_is_an_alias_of_format():
    long = cli("inspect", AUX_LIST, "--output-format", "json")
    short = cli("inspect", AUX_LIST, "-f", "json")
    assert long.exit_code == short.exit_code == 1
    assert long.stdout == short.stdout and json.loads(long.stdout)["findings"][0]["code"] == "PP101"
    assert cli("explain", "PP101", "--output-format", "json").stdout == (
        cli("explain", "PP101", "-f", "json").stdout
    )


# ----------------------------------------------------------------------------------------------
# stdin and stdout as '-'


def test_dash_reads_one_dump_from_stdin():
    data = (REPO / AUX_LIST).read_bytes()
    done = ppaux_process("inspect", "-", CLEAN, "-f", "json", stdin=data)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert [f["path"] for f in doc["files"]] == ["<stdin>", CLEAN]
    assert [(f["code"], f["path"]) for f in doc["findings"]] == [("PP101", "<stdin>")]
    from_file = json.loads(ppaux_process("inspect", AUX_LIST, "-f", "json").stdout)
    assert doc["files"][0]["payloads"] == from_file["files"][0]["payloads"]


@pytest.mark.parametrize(
    "args, stdin, message",
    [
        (("inspect", "-"), b"", "<stdin>: empty file"),
        (
            ("inspect", "-", "--limit", "max_pickle_bytes=10"),
            (REPO / "fixtures/dumps/plain_pickle.pkl").read_bytes(),
            "<stdin>: the stream holds more than 10 bytes (limit max_pickle_bytes=10 "
            "reached); raise it with --limit max_pickle_bytes=N",
        ),
        (
            ("inspect", "-", "--limit", "max_stream_bytes=100"),
            (REPO / CLEAN).read_bytes(),
            "<stdin>: the stream holds more than 100 bytes (limit max_stream_bytes=100 reached); "
            "raise it with --limit max_stream_bytes=N",
        ),
        (("inspect", "-", "-"), b"", "-: stdin can be read only once"),
        (
            ("replay", "-"),
            b"",
            "-: replay reads tensors back from the file, so it cannot read stdin; give a path",
        ),
        (
            ("diff", "-", CLEAN),
            b"",
            "-: diff reads tensor bytes back from the files, so it cannot read stdin; give paths",
        ),
        (
            ("check-skew", "-"),
            b"{}",
            "-: check-skew compares fingerprint files, one per stage, so it cannot read stdin; "
            "give their paths",
        ),
    ],
)
def test_bad_stdin_is_one_line(args, stdin, message):
    done = ppaux_process(*args, stdin=stdin)
    assert done.returncode == 2
    assert done.stderr.decode() == f"ppaux: error: {message}\n"


def test_output_dash_is_stdout(tmp_path):
    done = ppaux_process("inspect", str(REPO / AUX_LIST), "-f", "json", "-o", "-", cwd=tmp_path)
    assert done.returncode == 1 and json.loads(done.stdout)["command"] == "inspect"
    done = ppaux_process("explain", "PP101", "-o", "-", cwd=tmp_path)
    assert done.returncode == 0 and b"PP101" in done.stdout
    assert list(tmp_path.iterdir()) == []  # no file named '-'


# ----------------------------------------------------------------------------------------------
# --extend-select, --extend-ignore


def test_selection_extend_is_selected_over_shorter_ignores():
    chosen = Selection(select=(), ignore=("PP1",), extend=("PP101",))
    assert chosen.includes("PP101") and not chosen.includes("PP102") and chosen.includes("PP201")
    chosen = Selection(select=("PP2",), extend=("PP101",))
    assert chosen.includes("PP101") and chosen.includes("PP201") and not chosen.includes("PP102")


@pytest.mark.parametrize(
    "config, flags, codes",
    [
        ('ignore = ["PP1"]', (), []),
        ('ignore = ["PP1"]', ("--extend-select", "PP101"), ["PP101"]),
        ('ignore = ["PP1"]', ("--ignore", "PP2"), ["PP101"]),  # --ignore replaces
        ('select = ["PP2"]', (), []),
        ('select = ["PP2"]', ("--extend-select", "pp101"), ["PP101"]),
        ('select = ["PP2"]', ("--select", "PP1"), ["PP101"]),  # --select replaces
        ('ignore = ["PP2"]', ("--extend-ignore", "PP101"), []),
        ('ignore = ["PP2"]', ("--extend-ignore", "PP3,PP2"), ["PP101"]),
    ],
)
def test_extend_options_add_to_the_configuration(tmp_path, config, flags, codes):
    (tmp_path / "pyproject.toml").write_text(f"[tool.ppaux]\n{config}\n")
    done = ppaux_process("inspect", str(REPO / AUX_LIST), "-f", "json", *flags, cwd=tmp_path)
    assert [f["code"] for f in json.loads(done.stdout)["findings"]] == codes
    assert done.returncode == (1 if codes else 0)


# ----------------------------------------------------------------------------------------------
# --statistics


def test_statistics_text_and_json():
    done = cli("inspect", AUX_LIST, CLEAN, "fixtures/dumps/aux_non_contiguous.pt", "--statistics")
    assert done.exit_code == 1
    assert done.stdout == (
        "1  PP101  error    aux-non-tensor\n"
        "1  PP106  warning  aux-non-contiguous\n"
        "2 findings in 2 codes\n"
    )
    done = cli("inspect", AUX_LIST, "--statistics", "-f", "json", "--fail-on", "never")
    assert done.exit_code == 0
    assert json.loads(done.stdout) == {
        "schema": "ppaux.statistics/1",
        "tool": {"name": "ppaux", "version": ppaux.__version__},
        "command": "inspect",
        "statistics": [
            {"code": "PP101", "name": "aux-non-tensor", "severity": "error", "count": 1}
        ],
        "problems": 0,
    }
    done = cli("inspect", CLEAN, "fixtures/corrupt/empty.pt", "--statistics")
    assert done.exit_code == 2 and done.stdout == "0 findings in 0 codes; 1 input not checked\n"


def test_statistics_only_in_text_and_json():
    done = cli("inspect", AUX_LIST, "--statistics", "-f", "sarif")
    assert done.exit_code == 2
    assert done.stderr == "ppaux: error: --statistics: only with --format text or json, not sarif\n"


# ----------------------------------------------------------------------------------------------
# --progress, colour


def test_progress_forced_drawn_in_a_pipe_and_never_when_off_or_quiet():
    forced = ppaux_process("inspect", AUX_LIST, CLEAN, "-f", "json", "--progress")
    assert json.loads(forced.stdout)["command"] == "inspect"  # stdout stays the report alone
    assert "inspecting" in forced.stderr.decode()
    for flag in ("--no-progress", "-q"):
        done = ppaux_process("inspect", AUX_LIST, CLEAN, "-f", "json", "--progress", flag)
        assert done.stderr == b"", flag


def _stderr_on_terminal(args: list[str], env: dict[str, str]) -> str:
    main, child = pty.openpty()
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=child,
        timeout=300,
        env=env,
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert done.returncode in (0, 1, 2)
    return b"".join(chunks).decode(errors="replace")


def test_no_progress_and_term_dumb_on_a_terminal():
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    args = ["inspect", "fixtures/dumps", "-f", "json"]
    assert "inspecting" in _stderr_on_terminal(args, {**env, "TERM": "xterm"})  # so it can fail
    assert "inspecting" not in _stderr_on_terminal(
        [*args, "--no-progress"], {**env, "TERM": "xterm"}
    )
    assert "inspecting" not in _stderr_on_terminal(args, {**env, "TERM": "dumb"})


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    "env, terminal, colour",
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": ""}, True, True),  # empty counts as unset (no-color.org)
        ({"FORCE_COLOR": "1"}, False, True),
        ({"FORCE_COLOR": ""}, False, False),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, False),
        ({"TERM": "dumb"}, True, False),
        ({"TERM": "dumb", "FORCE_COLOR": "1"}, True, True),
    ],
)
def test_colour_variables(monkeypatch, env, terminal, colour):
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert use_color(_Terminal() if terminal else io.StringIO()) is colour


def test_force_color_colours_a_pipe_and_no_color_wins():
    forced = ppaux_process("inspect", AUX_LIST, env={"FORCE_COLOR": "1"})
    assert forced.returncode == 1 and ESC.encode() in forced.stdout
    both = ppaux_process("inspect", AUX_LIST, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert both.returncode == 1 and ESC.encode() not in both.stdout
    plain = ppaux_process("inspect", AUX_LIST)
    assert ESC.encode() not in plain.stdout and b"PP101 error" in plain.stdout


# ----------------------------------------------------------------------------------------------
# Completion


def _complete(words: str) -> list[str]:
    env = {
        **os.environ,
        "_PPAUX_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_rule_codes_complete():
    assert _complete("ppaux inspect x --select PP10") == [
        "PP101",
        "PP102",
        "PP103",
        "PP104",
        "PP105",
        "PP106",
        "PP107",
        "PP108",
        "PP109",
    ]
    # The PP11x codes: the ones written here, and any the catalogue has gained since.
    from ppaux.report import RULES

    known = ["PP110", "PP111", "PP112", "PP113", "PP114", "PP115", "PP116"]
    pp11 = sorted(code for code in RULES if code.startswith("PP11"))
    assert pp11[: len(known)] == known
    assert _complete("ppaux inspect x --extend-ignore PP11") == pp11
    assert _complete("ppaux explain PP11") == pp11
    assert _complete("ppaux inspect x --fail-on w") == ["warning"]


# ----------------------------------------------------------------------------------------------
# The CLI's shape


def test_distributed_settings_are_one_frozen_typed_object():
    from ppaux_cli.commands.check_skew import DistributedCheck

    check = DistributedCheck(None, 60.0, None, None, None, 2, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        check.timeout = 1.0  # type: ignore[misc]
    assert all(field.type != "Any" for field in dataclasses.fields(DistributedCheck))


def test_report_options_are_the_same_on_every_reporting_command():
    def options(*command: str) -> list[str]:
        text = cli(*command, "--help").stdout
        return [
            line
            for line in text.splitlines()[text.splitlines().index("Options:") :]
            if "--format" in line or "--extend-select" in line or "--statistics" in line
        ]

    reference = options("inspect")
    assert len(reference) == 3
    for command in (
        ("check-skew",),
        ("replay",),
        ("diff",),
        ("capture", "status"),
        ("capture", "list"),
    ):
        assert options(*command) == reference, command


# ----------------------------------------------------------------------------------------------
# Small promises of the docs: -V where it works, completion for a named shell, the sample error,
# findings only


def test_version_flag_works_before_a_command_as_documented():
    text = (REPO / "docs" / "gate.md").read_text(encoding="utf-8")
    assert "`-V` is `--version`, given before any command (`ppaux -V`" in text
    assert cli("-V").stdout == f"ppaux {ppaux.__version__}\n"
    after = cli("inspect", "-V")
    assert after.exit_code == 2
    assert after.stderr == "ppaux: error: No such option: -V\n"


@pytest.mark.parametrize(
    "shell, marker",
    [("zsh", "#compdef ppaux"), ("fish", "complete --command ppaux"), ("bash", "complete -o")],
)
def test_show_completion_gives_the_named_shell(shell, marker):
    done = cli("--show-completion", shell)
    assert done.exit_code == 0
    assert marker in done.stdout
    others = {"zsh": "#compdef", "fish": "complete --command", "bash": "COMPREPLY"}
    for other, text in others.items():
        if other != shell:
            assert text not in done.stdout


def test_show_completion_refuses_an_unknown_shell():
    done = cli("--show-completion", "zssh")
    assert done.exit_code == 2
    assert done.stderr == (
        "ppaux: error: --show-completion: 'zssh' is not one of bash, zsh, fish, powershell, "
        "pwsh; did you mean 'zsh'?\n"
    )


def test_gate_page_sample_errors_are_the_real_ones():
    text = (REPO / "docs" / "gate.md").read_text(encoding="utf-8")
    [sample] = re.findall(r"^ppaux: error: --format: .*$", text, re.M)
    assert cli("inspect", AUX_LIST, "--format", "jsn").stderr == sample + "\n"


def test_findings_only_leaves_the_tables_out():
    full = cli("inspect", AUX_LIST, CLEAN)
    short = cli("inspect", AUX_LIST, CLEAN, "--findings-only")
    assert full.exit_code == short.exit_code == 1
    assert "next_token_ids" in full.stdout and "next_token_ids" not in short.stdout
    # the verdict, then the findings
    assert short.stdout.startswith(
        "1 error(s), 0 warning(s), 0 info, 0 input(s) not checked\n\n"
        "PP101 error fixtures/dumps/aux_list.pt"
    )
    assert short.stdout.splitlines()[-1] == full.stdout.splitlines()[-1]
    for fmt in ("markdown", "html"):
        assert "next_token_ids" not in cli("inspect", AUX_LIST, "-f", fmt, "--findings-only").stdout
    # Data formats keep everything.
    assert cli("inspect", AUX_LIST, "-f", "json", "--findings-only").stdout == (
        cli("inspect", AUX_LIST, "-f", "json").stdout
    )


# ----------------------------------------------------------------------------------------------
# capture list finds captures by content; capture status on a directory that cannot be created

WALKTHROUGH = REPO / "fixtures" / "walkthrough" / "capture-20261202T102324Z-vm-25991-0001-pop.pt"


def test_capture_list_finds_a_capture_by_its_content(tmp_path):
    import shutil

    shutil.copy(WALKTHROUGH, tmp_path / "rank0-failure.pt")  # renamed by a user
    shutil.copy(REPO / AUX_LIST, tmp_path / "aux_list.pt")  # a dump, not a capture
    (tmp_path / "notes.txt").write_text("not a dump\n")
    done = cli("capture", "list", "--dir", str(tmp_path), env={"COLUMNS": "1000"})
    assert done.exit_code == 0, done.output
    # The dump that holds no capture is left out of the list, and said (PP505, a warning).
    assert done.stdout.splitlines()[2:9] == [
        f"PP505 warning {tmp_path / 'aux_list.pt'}: not a ppaux capture file; left out of "
        "the list (not named like a capture, and no readable capture inside)",
        "    fix: Run ppaux inspect on the file to see what it holds; move it out of the "
        "directory.",
        "",
        "rank0-failure.pt: RuntimeError: received a non-tensor auxiliary PP output",
        "    trail: recv dirty (scores (list)) > pop dirty (scores (list))",
        f"1 capture(s) in {tmp_path}, 0 skipped",
        "",
    ]
    doc = json.loads(cli("capture", "list", "--dir", str(tmp_path), "-f", "json").stdout)
    assert [Path(c["path"]).name for c in doc["captures"]] == ["rank0-failure.pt"]


@settings(max_examples=12, deadline=None)
@given(
    named=st.integers(0, 2),
    renamed=st.integers(0, 2),
    other_dump=st.booleans(),
    text=st.booleans(),
)
def test_capture_status_and_list_count_the_same_captures(named, renamed, other_dump, text):
    # A directory of captures named as the plugin names them, captures copied in under other
    # names, a dump that holds no capture and a text file: both commands count every capture
    # and nothing else.
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        where = Path(folder)
        for number in range(named):
            shutil.copy(WALKTHROUGH, where / WALKTHROUGH.name.replace("0001", f"{number + 2:04d}"))
        for number in range(renamed):
            shutil.copy(WALKTHROUGH, where / f"fixed{number}.pt")
        if other_dump:
            shutil.copy(REPO / AUX_LIST, where / "aux_list.pt")
        if text:
            (where / "notes.txt").write_text("not a dump\n")
        env = {"PPAUX_CAPTURE_DIR": None, "COLUMNS": "1000"}
        status = json.loads(cli("capture", "status", "--dir", folder, "-f", "json", env=env).stdout)
        listed = cli("capture", "list", "--dir", folder, env=env)
        assert status["directory"]["captures"] == named + renamed
        assert status["directory"]["bytes"] == (named + renamed) * WALKTHROUGH.stat().st_size
        assert f"{named + renamed} capture(s) in {folder}, 0 skipped" in listed.stdout


def test_capture_status_on_a_directory_that_cannot_be_created_is_an_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for where, reason in (
        (blocker / "captures", f"cannot be created: {blocker} is not a directory"),
        ("/proc/ppaux-no-such/captures", "cannot be created in /proc: "),
    ):
        done = cli("capture", "status", "--dir", str(where), env={"COLUMNS": "1000"})
        assert done.exit_code == 1, done.output
        assert f"PP503 error {where}: {reason}" in done.stdout
        assert "(cannot be created)" in done.stdout
        assert "not created yet" not in done.stdout
    fresh = cli(
        "capture", "status", "--dir", str(tmp_path / "new" / "captures"), env={"COLUMNS": "1000"}
    )
    assert "(not created yet)" in fresh.stdout and "PP503" not in fresh.stdout
    assert not (tmp_path / "new").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


# ----------------------------------------------------------------------------------------------
# Wording: one key is '1 key', and 'an' before a vowel


def test_counts_and_articles_read_as_english(tmp_path):
    import pickle

    from ppaux.text import counted, with_article

    assert [counted(n, "key") for n in (0, 1, 2)] == ["0 keys", "1 key", "2 keys"]
    assert with_article("os.system") == "an os.system"
    assert with_article("int") == "an int"
    assert with_article("uint8 tensor") == "a uint8 tensor"
    assert with_article("list") == "a list"
    one = tmp_path / "one.pkl"
    one.write_bytes(pickle.dumps({"next_token_ids": [1, 2]}, protocol=2))
    shown = cli("inspect", str(one), env={"COLUMNS": "1000"}).stdout
    assert shown.startswith(f"0 error(s), 0 warning(s), 0 info, 0 input(s) not checked\n\n{one} (")
    assert f"\n{one} (pickle; 1 key)\n" in shown
    pp103 = cli("inspect", "fixtures/dumps/non_string_key.pt", "--findings-only").stdout
    assert "key 7 is an int, not a string" in pp103
    refused = cli(
        "tensorize",
        "fixtures/malicious/os_system_reduce.pt",
        "-o",
        str(tmp_path / "x"),
        env={"COLUMNS": "1000"},
    )
    assert "the file also holds an os.system under" in refused.stdout


# ------------------------------------------------------------------------- did you mean


@given(st.text(max_size=300), st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=20))
def test_did_you_mean_names_a_choice_or_nothing(value, choices):
    from ppaux_cli.closest import did_you_mean

    hint = did_you_mean(value, choices)
    assert hint == "" or any(hint == f"; did you mean {c!r}?" for c in choices)


@given(st.sampled_from([f.value for f in Format]), st.integers(min_value=1, max_value=3))
def test_a_value_cut_short_or_with_one_letter_dropped_is_recognised(name, cut):
    from ppaux_cli.closest import did_you_mean

    names = [f.value for f in Format]
    assert did_you_mean(name[: max(1, len(name) - cut)], names) != ""
    assert did_you_mean(name.upper()[:-1], names).endswith(f"{name!r}?")


def test_a_long_argument_is_no_typo_of_a_short_choice():
    from ppaux_cli.closest import did_you_mean

    assert did_you_mean("json" + "x" * 100_000, [f.value for f in Format]) == ""


_RULES_FORMATS = ("text", "json", "markdown")


@functools.cache
def _explained(name: str) -> str:
    return cli("explain", "PP101", "--format", name).stdout


@settings(max_examples=3, deadline=None)
@given(st.sampled_from(_RULES_FORMATS), st.data())
def test_a_choice_is_taken_in_any_case(name, data):
    cased = "".join(data.draw(st.sampled_from([c.lower(), c.upper()])) for c in name)
    result = cli("explain", "PP101", "--format", cased)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == _explained(name) != ""


@settings(max_examples=10, deadline=None)
@given(
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=40)
    .filter(lambda text: text.casefold() not in _RULES_FORMATS)
    .filter(lambda text: not text.startswith("-"))
)
def test_a_value_that_is_no_choice_is_one_line_naming_it(value):
    result = cli("explain", "PP101", "--format", value)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(
        f"ppaux: error: --format: {value!r} is not one of text, json, markdown"
    )
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n")
