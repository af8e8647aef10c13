"""The library names its settings in its own words, and the command line spells them as flags.

A message built inside ``ppaux/`` (an exception, a finding, a note) never names a command-line
flag: a library user has none to pass. It names a setting by the keyword argument that takes it
(:func:`ppaux.errors.setting`) and a limit by its name in :class:`ppaux.limits.Limits`
(:func:`ppaux.errors.limit_note`); ``ppaux_cli.flags`` adds the flags they stand for, and never
rewrites the message, which may quote a key or a path that only looks like a setting.
"""

from __future__ import annotations

import ast
import re

import pytest
from helpers import REPO, cli

from ppaux.errors import LIMIT_NOTE, SETTING, SETTING_NAME, LimitExceeded, limit_note, setting
from ppaux_cli.flags import FLAGS, flag, spelled, spelled_report

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


def test_a_limit_is_named_by_its_name_in_limits() -> None:
    error = LimitExceeded("x.pt", "max_depth", 100, "the dump nests too deeply")
    assert str(error) == "x.pt: the dump nests too deeply (limit max_depth=100 reached)"
    assert limit_note("max_files") == "(limit max_files reached)"
    note = LIMIT_NOTE.search(str(error))
    assert note is not None and (note["name"], note["value"]) == ("max_depth", "100")


def test_a_setting_is_named_by_its_keyword_argument() -> None:
    assert setting("transport", "sglang") == 'transport="sglang"'
    assert setting("sglang_path") == "sglang_path=..."
    found_name = SETTING_NAME.search("give sglang_path=... a tree")
    assert found_name is not None and found_name["name"] == "sglang_path"
    found = SETTING.search('only used with impl="both"')
    assert found is not None and (found["name"], found["value"]) == ("impl", "both")


@pytest.mark.parametrize(
    "library, command_line",
    [
        (
            "x.pt: the dump nests too deeply (limit max_depth=100 reached)",
            "x.pt: the dump nests too deeply (limit max_depth=100 reached); raise it with "
            "--limit max_depth=N",
        ),
        (
            "d: holds more than 5 files (limit max_files reached)",
            "d: holds more than 5 files (limit max_files reached); raise it with "
            "--limit max_files=N",
        ),
        (
            'only used with impl="sglang", impl="both" or transport="sglang"',
            'only used with impl="sglang", impl="both" or transport="sglang"; on the command '
            "line: --impl sglang, --impl both, --transport sglang",
        ),
        (
            "sglang is not installed; give sglang_path=... an unpacked tree or a wheel",
            "sglang is not installed; give sglang_path=... an unpacked tree or a wheel; on the "
            "command line: --sglang-path",
        ),
        (
            'the CUDA path needs device="cuda")',
            'the CUDA path needs device="cuda"); on the command line: --device cuda',
        ),
        # Not the library's words: a path, a longer name, a key from a file, a bare name.
        (
            "/opt/sglang_path/x.py, sglang_path.py, my_sglang_path, key=\"v\", 'batch_sizes', impl",
            "/opt/sglang_path/x.py, sglang_path.py, my_sglang_path, key=\"v\", 'batch_sizes', impl",
        ),
    ],
)
def test_the_command_line_adds_the_flags_of_settings_and_limits(
    library: str, command_line: str
) -> None:
    assert spelled(library) == command_line


def test_every_flag_the_table_names_is_an_option_of_a_command() -> None:
    helps = "".join(
        cli(command, "--help").stdout for command in ("replay", "check-observer", "fingerprint")
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
    assert caught.value.reason == (
        'only used with impl="sglang", impl="both" or transport="sglang"'
    )
    line = cli("replay", str(REPO / "fixtures/dumps/clean_output.pt"), "--sglang-path", "x").stderr
    assert line == (
        'ppaux: error: --sglang-path x: only used with impl="sglang", impl="both" or '
        'transport="sglang"; on the command line: --impl sglang, --impl both, --transport '
        "sglang\n"
    )


def test_reports_keep_the_library_text_and_gain_notes_with_the_flags() -> None:
    from ppaux.report import Finding, InputProblem, Report, Severity

    quoted = 'torch.zeros(3, device="cuda") failed (limit max_findings_per_code=5 reached)'
    limit = (
        "a limit stopped the work (limit max_findings_per_code): raise it with "
        "--limit max_findings_per_code=N"
    )
    settings = (
        "the settings named above are the library's keyword arguments; on the command line: "
        "--device cuda"
    )
    for command, added in (
        ("triage", [limit]),  # quotes logs: device="cuda" there is not ppaux's setting
        ("inspect", [limit]),
        ("replay", [limit, settings]),
    ):
        report = Report(
            command,
            findings=[Finding("PP101", Severity.ERROR, quoted, "x.pt")],
            problems=[InputProblem("y.pt", quoted)],
            notes=[quoted],
        )
        shown = spelled_report(report)
        assert [item.message for item in shown.findings] == [quoted], command
        assert [item.message for item in shown.problems] == [quoted], command
        assert shown.notes == [quoted, *added], command
        assert report.notes == [quoted]  # the library's report is left as it was


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
