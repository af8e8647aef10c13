"""Text output within the terminal's width, the verdict first.

Every command's text, run at ``COLUMNS=80`` and at ``COLUMNS=100``, keeps every line within
that width (the bundled inputs hold no word longer than a line, the one kind of line allowed to
run past it); triage's root finding is within the first screen (24 lines); the wrapping
itself (prose between words, shell commands with `` \\`` continuations) keeps every word and
every command's argument vector.
"""

from __future__ import annotations

import itertools
import shlex
import shutil
import subprocess

import pytest
from helpers import REPO, cli, ppaux_process
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.report.catalogue import RULES
from ppaux.report.formats.wrapping import MIN_WIDTH, shell_lines, wrap

WIDTHS = (80, 100)
CAPTURE = REPO / "fixtures" / "walkthrough" / "capture-20261202T102324Z-vm-25991-0001-pop.pt"

#: (what, argv) of every command whose text the width applies to, on the bundled inputs.
COMMANDS = [
    ("triage", ["triage", "fixtures/logs/sglang-aux-list.log"]),
    ("triage kubectl", ["triage", "fixtures/logs/kubectl-prefix-aux-list.log"]),
    ("triage docker", ["triage", "fixtures/logs/docker-aux-list-json.log"]),
    ("triage healthy", ["triage", "fixtures/logs/sglang-healthy.log"]),
    ("triage observer", ["triage", "fixtures/logs/sglang-observer-raises.log"]),
    ("inspect", ["inspect", "fixtures/dumps/aux_list.pt"]),
    ("inspect capture", ["inspect", str(CAPTURE.relative_to(REPO))]),
    ("inspect malicious", ["inspect", "fixtures/malicious/os_system_reduce.pt"]),
    ("diff", ["diff", "fixtures/dumps/aux_list.pt", "fixtures/dumps/clean_output.pt"]),
    ("check-skew", ["check-skew", "fixtures/skew/fingerprints/skewed"]),
    ("rules", ["rules"]),
    ("explain code", ["explain", "PP801"]),
    ("explain message", ["explain", "RuntimeError: received a non-tensor auxiliary PP output"]),
    ("explain add", ["explain", "duplicate auxiliary PP tensor 'scores'"]),
]
#: Every rule, each of which ``explain`` prints.
RULE_CODES = sorted(RULES)


def _over(text: str, columns: int) -> list[str]:
    """The lines past ``columns``, but for the documented exception: a line of one word (a
    path, a key) longer than any line could be, never broken so that it stays copyable."""
    return [line for line in text.splitlines() if len(line) > columns and len(line.split()) > 1]


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize(("what", "argv"), COMMANDS, ids=[what for what, _ in COMMANDS])
def test_every_command_fits_the_width(what, argv, columns):
    result = cli(*argv, env={"COLUMNS": str(columns)})
    assert result.stdout.strip(), (what, result.stderr)
    assert _over(result.stdout, columns) == [], what


def test_a_pipe_without_columns_gets_80():
    """Without ``COLUMNS``, stdout a pipe: 80 columns, for the report and for rules."""
    for argv in (["triage", "fixtures/logs/sglang-aux-list.log"], ["rules"]):
        done = ppaux_process(*argv, env={"COLUMNS": None})
        lines = done.stdout.splitlines()
        assert lines and all(len(line) <= 80 for line in lines), argv
        assert any(len(line) > 72 for line in lines), argv  # and it uses them


@pytest.mark.parametrize("columns", WIDTHS)
def test_every_rule_explained_fits_the_width(columns):
    for code in RULE_CODES:
        text = cli("explain", code, env={"COLUMNS": str(columns)}).stdout
        assert _over(text, columns) == [], code


@pytest.mark.torch
@pytest.mark.parametrize("columns", WIDTHS)
def test_the_torch_commands_fit_the_width(columns, tmp_path):
    capture = tmp_path / CAPTURE.name
    shutil.copy(CAPTURE, capture)
    env = {"COLUMNS": str(columns)}
    runs = {
        "replay": cli("replay", str(capture), env=env),
        "tensorize": cli("tensorize", str(capture), "-o", str(tmp_path / "fixed.pt"), env=env),
        # nothing to convert: its note, with the path it did not write
        "tensorize (a note)": cli(
            "tensorize", "fixtures/dumps/clean_output.pt", "-o", str(tmp_path / "n.pt"), env=env
        ),
        "capture list": cli("capture", "list", "--dir", str(tmp_path), env=env),
        "check-observer": cli(
            "check-observer", "fixtures/observers/entropy_list.py:EntropyObserver", env=env
        ),
    }
    for what, result in runs.items():
        assert result.stdout.strip(), (what, result.stderr)
        assert _over(result.stdout, columns) == [], what


@pytest.mark.parametrize("columns", WIDTHS)
def test_triage_leads_with_the_verdict_and_its_root(columns):
    lines = cli("triage", "fixtures/logs/sglang-aux-list.log", env={"COLUMNS": str(columns)})
    lines = lines.stdout.splitlines()
    tally = "1 error(s), 2 warning(s), 1 info, 0 input(s) not checked"
    assert lines[0] == tally and lines[-1] == tally
    root = next(i for i, line in enumerate(lines) if line.startswith("PP801 error "))
    assert root < 24
    # the findings before the tables, the next steps after them
    assert root < lines.index("logs") < lines.index("next steps:")


def test_the_text_report_gives_the_most_severe_findings_first():
    from ppaux.report import Finding, Report, Severity, render
    from ppaux.report.formats import Format

    report = Report(
        "inspect",
        findings=[
            Finding("PP104", Severity.WARNING, "a.pt", "a near miss"),
            Finding("PP102", Severity.INFO, "a.pt", "an empty name"),
            Finding("PP101", Severity.ERROR, "b.pt", "a list"),
            Finding("PP103", Severity.ERROR, "a.pt", "a key"),
        ],
    )
    lines = render(report, Format.TEXT, width=80).splitlines()
    heads = [line.split()[0] for line in lines if line[:2] == "PP" and ": " in line]
    assert heads == ["PP101", "PP103", "PP104", "PP102"]


def test_next_steps_wrapped_as_shell_give_back_their_argv_in_bash(tmp_path):
    """The kubectl log's steps at 80 columns, pasted into bash: each command (its continued
    lines joined as the shell joins them) is the argument vector the JSON report holds."""
    import json

    log = "fixtures/logs/kubectl-prefix-aux-list.log"
    steps = json.loads(cli("triage", log, "--format", "json").stdout)["steps"]
    wanted = [s["argv"] for s in steps if s["argv"]]
    text = cli("triage", log, env={"COLUMNS": "80"}).stdout.splitlines()
    block = text[text.index("next steps:") + 1 :]
    block = block[: block.index("")]
    script = tmp_path / "steps.sh"
    printer = 'show() { printf "%s\\0" "$@"; printf "\\n"; }\n'
    body = ["show " + line.strip() if not line.startswith("      ") else line for line in block]
    body = [line for line in body if not line.startswith("show #")]
    script.write_text(printer + "\n".join(body) + "\n", encoding="utf-8")
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True)
    got = [line.split("\0")[:-1] for line in done.stdout.splitlines()]
    assert got == wanted


_WORDS = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1, max_size=30
)


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(_WORDS, min_size=1, max_size=30),
    width=st.integers(MIN_WIDTH, 120),
    indent=st.sampled_from(["", "  ", "    - "]),
)
def test_prose_keeps_every_word_and_breaks_none_that_fits(words, width, indent):
    lines = wrap(" ".join(words), width, indent)
    hanging = " " * (len(indent) + 4)
    assert lines[0].startswith(indent) and all(line.startswith(hanging) for line in lines[1:])
    body = [lines[0][len(indent) :], *(line[len(hanging) :] for line in lines[1:])]
    assert " ".join(" ".join(body).split()) == " ".join(words)
    for line in lines:
        # a line runs past the width only as one word too long for any line
        if len(line) > width:
            assert len(line.split()) == 1 or line.strip() in words


_ARGS = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=0, max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    argv=st.lists(_ARGS, min_size=1, max_size=12),
    comment=st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=80),
    width=st.integers(MIN_WIDTH, 120),
)
def test_a_wrapped_command_gives_back_its_argv(argv, comment, width):
    """A command (shlex.join of its argv, a comment after it) wrapped at any width: its ``#``
    lines are comments, and its other lines, their continuations joined, are the argv."""
    line = shlex.join(argv) + (f"  # {comment}" if comment.strip() else "")
    lines = shell_lines(line, width, "  ")
    commands = [ln for ln in lines if not ln.lstrip().startswith("#")]
    joined = " ".join(ln[:-2] if ln.endswith(" \\") else ln for ln in commands)
    assert shlex.split(joined, comments=True) == argv
    assert all(ln.endswith(" \\") for ln in commands[:-1])
    for ln in lines:
        if len(ln) > width:  # only a single word too long for a line
            body = ln.removesuffix(" \\").strip()
            assert len(shlex.split(body, comments=True)) <= 1 or body.startswith("#")


def test_docs_say_what_the_text_leads_with():
    text = (REPO / "docs" / "gate.md").read_text(encoding="utf-8")
    assert "### Text: the verdict first, within the terminal's width" in text


def _command_paths() -> list[tuple[str, ...]]:
    """Every command and subcommand of the application, as the words that name it."""
    import typer

    from ppaux_cli.app import app

    paths: list[tuple[str, ...]] = []

    def walk(command, ctx, path):
        paths.append(path)
        for name in getattr(command, "list_commands", lambda _ctx: [])(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                walk(
                    sub,
                    sub.make_context(name, [], parent=ctx, resilient_parsing=True),
                    (*path, name),
                )

    root = typer.main.get_command(app)
    walk(root, root.make_context("ppaux", [], resilient_parsing=True), ())
    return paths


@pytest.mark.parametrize("columns", WIDTHS)
def test_every_help_page_fits_the_width(columns):
    paths = _command_paths()
    assert ("inspect",) in paths and ("capture", "list") in paths
    over = {}
    for path in paths:
        result = cli(*path, "--help", env={"COLUMNS": str(columns)})
        assert result.exit_code == 0, (path, result.stdout)
        lines = [line for line in result.stdout.splitlines() if len(line) > columns]
        if lines:
            over[" ".join(path)] = lines
    assert over == {}


@given(
    needs=st.lists(st.integers(1, 60), min_size=2, max_size=6),
    room=st.integers(20, 200),
)
def test_columns_as_wide_as_each_other_are_cut_alike(needs, room):
    from ppaux.report.formats.text import _widths

    widths = _widths(needs, [1] * len(needs), room)
    if widths is None:
        return
    assert sum(widths) <= room
    assert widths[0] == needs[0]  # the row's name is never cut
    for i, j in itertools.combinations(range(1, len(needs)), 2):
        if needs[i] == needs[j]:
            assert widths[i] == widths[j], (needs, room, widths)


def test_two_stages_with_one_value_are_cut_alike():
    from ppaux.report.formats.text import _widths

    # check-skew's fact column and two stages whose widest cell is the same 29-character prefix.
    assert _widths([15, 29, 29], [4, 3, 3], 72) == [15, 28, 28]
