"""Suggestions are data; each front end words them.

A finding, a problem or an error of the library never names a command-line flag (a library user
has none to pass) and never spells a setting inside its message: what would get past it is a
:class:`ppaux.suggestions.Setting` or :class:`ppaux.suggestions.RaiseLimit`. The library's
``str()`` says them as keyword arguments, the command line (:mod:`ppaux_cli.wording`) as flags,
and JSON keeps them as data. Nothing reads a message back.
"""

from __future__ import annotations

import ast
import json
import re

import pytest
from helpers import REPO, cli
from hypothesis import given
from hypothesis import strategies as st

from ppaux.errors import LimitExceeded, PathError
from ppaux.report import Finding, Format, InputProblem, Report, Severity, render
from ppaux.suggestions import RaiseLimit, Setting, keyword, library_words, limit_note, worded
from ppaux_cli.wording import FLAGS, cli_words, flag, setting_line

#: A command-line flag written in text: '--limit', '--sglang-path'.
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")

#: The library files whose strings are the product's own text for people at a command line, not
#: library messages: rule documentation and its renderings, the error pages, the commands triage
#: tells the user to run, and the style sheet of the HTML report (CSS custom properties).
CLI_TEXT = {
    "ppaux/report/catalogue": "rule documentation (title, meaning, causes, fix)",
    "ppaux/report/formats/rules.py": "renders the rule documentation",
    "ppaux/report/formats/rule_text.py": "renders the rule documentation",
    "ppaux/report/error_pages.py": "the error pages: commands the user is told to run",
    "ppaux/triage/steps.py": "triage's next commands: commands the user is told to run",
    "ppaux/triage/deathsteps.py": "triage's next commands for a dead process (launchers' flags)",
    "ppaux/triage/killsteps.py": "triage's next commands for a killed process (Slurm, Ray, k8s)",
    "ppaux/triage/kindsteps.py": "triage's next commands for a kind of failure (network, host)",
    "ppaux/triage/setupsteps.py": "triage's next commands for NCCL's set-up (launchers' flags)",
    "ppaux/triage/programsteps.py": "triage's next commands for memory and kernel failures "
    "(sglang's server arguments, nvidia-smi)",
    "ppaux/triage/runtimedeaths.py": "the Ray and Slurm commands a death record points to",
    "ppaux/triage/buildsteps.py": "triage's next commands for a library that does not load "
    "(python3 -c, pip show)",
    "ppaux/triage/configsteps.py": "triage's next commands for a configuration error (the "
    "programs' own flags)",
    "ppaux/triage/loadsteps.py": "triage's next commands for a build, a full disk or the "
    "weights (docker's and sglang's flags)",
    "ppaux/triage/portsteps.py": "triage's next commands for a port already in use (the "
    "programs' own port flags)",
    "ppaux/triage/mpisteps.py": "triage's next commands for an MPI failure (mpirun's flags, "
    "docker's)",
    "ppaux/triage/turbomindsteps.py": "triage's next commands for TurboMind's out of memory "
    "(lmdeploy's own flags)",
    "ppaux/report/formats/html.py": "CSS custom properties (--fg, --line), not flags",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
        ):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _library_strings() -> list[tuple[str, int, str]]:
    """Every string constant of ``ppaux/`` outside docstrings and :data:`CLI_TEXT` (an
    f-string's literal parts included): (file, line, text)."""
    strings = []
    for path in sorted((REPO / "ppaux").rglob("*.py")):
        name = path.relative_to(REPO).as_posix()
        if any(name == where or name.startswith(where + "/") for where in CLI_TEXT):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
            ):
                strings.append((name, node.lineno, node.value))
    return strings


def test_the_exclusions_are_files_that_exist() -> None:
    for where in CLI_TEXT:
        assert (REPO / where).exists(), where


def test_no_library_message_names_a_flag() -> None:
    strings = _library_strings()
    assert len(strings) > 1000  # the walk reads the library, not an empty tree
    named = [f"{name}:{line}: {text!r}" for name, line, text in strings if FLAG.search(text)]
    assert named == []


def test_the_flag_pattern_finds_flags_and_nothing_else() -> None:
    assert FLAG.findall("give --sglang-path DIR or --limit max_depth=N") == [
        "--sglang-path",
        "--limit",
    ]
    assert FLAG.findall("torch-distributed, a--b, 3 -- 4, max_depth=N, sglang_path") == []


def test_a_limit_is_named_by_its_name_in_limits_and_raised_in_each_front_ends_words() -> None:
    error = LimitExceeded("x.pt", "max_depth", 100, "the dump nests too deeply")
    assert error.bare() == "x.pt: the dump nests too deeply (limit max_depth=100 reached)"
    assert error.suggestions == (RaiseLimit("max_depth", 100),)
    assert str(error) == (
        "x.pt: the dump nests too deeply (limit max_depth=100 reached); raise it with "
        "limits=Limits(max_depth=N)"
    )
    assert error.worded(cli_words) == (
        "x.pt: the dump nests too deeply (limit max_depth=100 reached); raise it with "
        "--limit max_depth=N"
    )
    assert limit_note("max_files") == "(limit max_files reached)"


def test_a_setting_is_a_keyword_argument_to_the_library_and_a_flag_to_the_cli() -> None:
    assert keyword("transport", "sglang") == 'transport="sglang"'
    assert keyword("sglang_path") == "sglang_path=..."
    tried = (Setting("impl", "sglang"), Setting("impl", "both"), Setting("transport", "sglang"))
    assert library_words(tried) == 'try impl="sglang" or impl="both" or transport="sglang"'
    assert cli_words(tried) == "try --impl sglang or --impl both or --transport sglang"
    given_one = (Setting("sglang_path", what="an unpacked tree"), RaiseLimit("max_files", 5))
    assert library_words(given_one) == (
        "give sglang_path an unpacked tree; raise it with limits=Limits(max_files=N)"
    )
    assert cli_words(given_one) == (
        "give --sglang-path an unpacked tree; raise it with --limit max_files=N"
    )
    assert worded("text", ()) == "text"


names = st.from_regex(r"[a-z][a-z_]{0,20}", fullmatch=True)
values = st.text(max_size=30)


@given(names, values)
def test_any_setting_is_said_as_its_flag_on_the_command_line_and_as_a_keyword_in_the_library(
    name: str, value: str
) -> None:
    cli_text = cli_words([Setting(name, value)])
    assert cli_text == f"try {flag(name)} {value}"
    assert flag(name).startswith("--") and "_" not in flag(name)
    assert library_words([Setting(name, value)]) == f'try {name}="{value}"'


@given(names, st.integers(min_value=0, max_value=10**12))
def test_any_limit_is_raised_with_its_own_name_in_both_front_ends(name: str, value: int) -> None:
    error = PathError("d", f"too many {limit_note(name, value)}").suggest(RaiseLimit(name, value))
    assert error.worded(cli_words).endswith(f"; raise it with --limit {name}=N")
    assert str(error).endswith(f"; raise it with limits=Limits({name}=N)")
    assert error.bare() == f"d: too many (limit {name}={value} reached)"


def test_a_finding_says_its_suggestion_per_front_end_and_keeps_it_as_data_in_json() -> None:
    item = Finding(
        "PP402",
        Severity.ERROR,
        "add raises; rank 0 never receives it",
        "x.pt",
        hint="Make the value a tensor.",
        suggestions=(Setting("sender", "legacy"),),
    )
    assert str(item) == (
        "PP402 error x.pt: add raises; rank 0 never receives it (fix: Make the value a tensor; "
        'try sender="legacy")'
    )
    problem = InputProblem(
        "y.pt", "too big (limit max_depth=3 reached)", (RaiseLimit("max_depth", 3),)
    )
    report = Report("replay", findings=[item], problems=[problem])
    text = render(report, Format.TEXT, words=cli_words)
    assert "try --sender legacy" in text and 'sender="legacy"' not in text
    assert "keyword argument" not in text
    library_text = render(report, Format.TEXT)
    assert 'try sender="legacy"' in library_text and "--sender" not in library_text
    for fmt in Format:
        if fmt is Format.JSON:
            continue
        out = render(report, fmt, words=cli_words)
        assert "--sender legacy" in out, fmt
        assert 'sender="legacy"' not in out and "sender=&quot;legacy" not in out, fmt
    document = json.loads(render(report, Format.JSON, words=cli_words))
    assert document["findings"][0]["suggestions"] == [{"setting": "sender", "value": "legacy"}]
    assert document["findings"][0]["hint"] == "Make the value a tensor."
    assert document["problems"][0]["suggestions"] == [{"limit": "max_depth", "value": 3}]
    assert report.findings[0].suggestions == (Setting("sender", "legacy"),)  # left as it was


def test_a_setting_error_line_names_the_flag_and_what_would_work() -> None:
    from ppaux.errors import SettingError

    error = SettingError("sglang_path", "x", "only used with sglang's code").suggest(
        Setting("impl", "sglang")
    )
    assert setting_line(error) == "--sglang-path x: only used with sglang's code; try --impl sglang"


def test_every_flag_the_table_names_is_an_option_of_a_command() -> None:
    helps = "".join(
        cli(*command.split(), "--help").stdout
        for command in (
            "replay",
            "check-observer",
            "fingerprint",
            "check-skew",
            "triage",
            "capture status",
        )
    )
    for name in FLAGS:
        assert flag(name) in helps, name
    assert flag("init_method") == "--init-method"


@pytest.mark.torch
def test_a_replay_setting_error_names_the_setting_and_the_cli_its_flag() -> None:
    from ppaux.replay import ReplayConfigError, ReplayOptions, replay_paths

    with pytest.raises(ReplayConfigError) as caught:
        replay_paths([str(REPO / "fixtures/dumps/clean_output.pt")], ReplayOptions(sglang_path="x"))
    assert (caught.value.option, caught.value.value) == ("sglang_path", "x")
    assert caught.value.suggestions == (
        Setting("impl", "sglang"),
        Setting("impl", "both"),
        Setting("transport", "sglang"),
    )
    assert str(caught.value).endswith('; try impl="sglang" or impl="both" or transport="sglang"')
    line = cli("replay", str(REPO / "fixtures/dumps/clean_output.pt"), "--sglang-path", "x").stderr
    assert line == (
        "ppaux: error: --sglang-path x: only used with sglang's implementation (alone or beside "
        "the reference) or with the sglang transport; try --impl sglang or --impl both or "
        "--transport sglang\n"
    )


@pytest.mark.torch
def test_a_limit_reached_on_the_command_line_is_raised_with_its_flag(tmp_path) -> None:
    import torch

    dump = tmp_path / "deep.pt"
    value: object = 1
    for _ in range(30):
        value = [value]
    torch.save({"next_token_ids": torch.zeros(1), "x": value}, dump)
    result = cli("inspect", str(dump), "--limit", "max_depth=10")
    assert result.exit_code == 2
    assert "(limit max_depth=10 reached); raise it with --limit max_depth=N" in result.stderr
    assert "Limits(" not in result.stderr


@pytest.mark.torch
def test_a_key_that_looks_like_a_setting_is_reported_as_it_is(tmp_path) -> None:
    import torch

    dump = tmp_path / "keys.pt"
    torch.save(
        {
            "next_token_ids": torch.zeros(2, dtype=torch.int64),
            "__sampling_observer_output__.batch_sizes": [1, 2],
            '__sampling_observer_output__.transport="sglang"': [3],
            "__msg_type__": "output",
        },
        dump,
    )
    out = cli("replay", str(dump), "--format", "json").stdout
    import json

    messages = [finding["message"] for finding in json.loads(out)["findings"]]
    assert any("auxiliary PP output 'batch_sizes' is not a tensor" in m for m in messages)
    assert not any("--batch-size" in m or "--transport" in m for m in messages)
