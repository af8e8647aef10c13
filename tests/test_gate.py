"""The CI gate: --select/--ignore, --strict, --fail-on, configuration files, and their CLI
errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import REPO, cli

from ppaux.report.catalogue import RULES
from ppaux.report.config import (
    Config,
    ConfigError,
    discover_config,
    find_config,
    load_config,
    resolve_gate,
)
from ppaux.report.document import FailOn, InputProblem, Report
from ppaux.report.findings import Finding, Severity
from ppaux.report.gate import Gate
from ppaux.report.selection import Selection, UnknownCodeError, parse_codes

MIXED = [
    "fixtures/dumps/aux_list.pt",
    "fixtures/dumps/aux_non_contiguous.pt",
    "fixtures/dumps/no_tensor_dict.pt",
    "fixtures/dumps/clean_output.pt",
]


def _f(code: str, severity: Severity = Severity.ERROR) -> Finding:
    return Finding(code, severity, "m", "p.pt")


def run(*args: str, cwd: Path = REPO, **env: str):
    import os

    old = os.getcwd()
    os.chdir(cwd)
    try:
        return cli(*(a.replace("@", str(REPO) + "/") for a in args), env=env)
    finally:
        os.chdir(old)


def _codes(result) -> list[str]:
    return [f["code"] for f in json.loads(result.stdout)["findings"]]


# -- selection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "select, ignore, kept",
    [
        ((), (), ["PP101", "PP106", "PP114", "PP201"]),
        (("PP1",), (), ["PP101", "PP106", "PP114"]),
        ((), ("PP1",), ["PP201"]),
        (("PP101",), ("PP1",), ["PP101"]),
        (("PP1",), ("PP101",), ["PP106", "PP114"]),
        (("PP1",), ("PP1",), []),  # a tie goes to ignore
        (("PP2", "PP114"), (), ["PP114", "PP201"]),
    ],
)
def test_selection_by_code_and_prefix(select, ignore, kept):
    report = Report("inspect", findings=[_f("PP101"), _f("PP106"), _f("PP114"), _f("PP201")])
    assert sorted(f.code for f in Selection(select, ignore).apply(report).findings) == kept


@pytest.mark.parametrize(
    "select, ignore",
    [(("PP711", "PP712"), ()), ((), ("PP715", "PP714")), (("PP1",), ("PP7",)), ((), ("PP",))],
)
def test_a_check_that_stopped_or_checked_nothing_is_never_selected_away(select, ignore):
    # PP714 (nothing was checked) and PP715 (the target ended) say the check is incomplete.
    report = Report("check-observer", findings=[_f("PP711"), _f("PP714"), _f("PP715")])
    kept = sorted(f.code for f in Selection(select, ignore).apply(report).findings)
    assert kept[-2:] == ["PP714", "PP715"]
    assert {code for code, rule in RULES.items() if rule.always_reported} == {"PP714", "PP715"}


@pytest.mark.torch
def test_cli_narrowed_gate_fails_on_a_target_that_exits_at_once(tmp_path):
    file = tmp_path / "quits.py"
    good = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
    marker = "def after_sample(self"
    head, _, tail = good.partition(marker)
    signature, _, body = tail.partition("\n")
    file.write_text(f"{head}{marker}{signature}\n        import os\n        os._exit(0)\n{body}")
    target = f"{file}:EntropyObserver"
    for narrowing in (["--select", "PP711,PP712", "--strict"], ["--ignore", "PP715"]):
        result = cli("check-observer", target, "--steps", "1", "-f", "json", *narrowing)
        assert result.exit_code == 1, result.output
        assert _codes(result) == ["PP715"]


def test_parse_codes_normalises_and_refuses_unknown_patterns():
    assert parse_codes(["pp101, PP2", "PP101"], RULES) == ("PP101", "PP2")
    with pytest.raises(UnknownCodeError) as info:
        parse_codes(["PP1", "PX"], RULES)
    assert str(info.value) == "'PX' matches no rule code; 'ppaux rules' lists them"


# -- strict ----------------------------------------------------------------------------------


def test_strict_raises_inconclusive_findings_only():
    assert RULES["PP114"].inconclusive and RULES["PP319"].inconclusive
    assert not RULES["PP101"].inconclusive
    report = Report("inspect", findings=[_f("PP114", Severity.INFO), _f("PP112", Severity.INFO)])
    assert Gate().exit_code(Gate().apply(report)) == 0
    strict = Gate(strict=True)
    raised = strict.apply(report)
    assert [(f.code, f.severity, f.extra) for f in raised.findings] == [
        ("PP114", Severity.ERROR, {"strict": True}),
        ("PP112", Severity.INFO, {}),
    ]
    assert strict.exit_code(raised) == 1
    assert Gate(FailOn.NEVER, strict=True).exit_code(raised) == 0
    assert report.findings[0].severity is Severity.INFO  # the input report is not changed


def test_unreadable_input_is_exit_2_in_every_mode():
    report = Report("inspect", problems=[InputProblem("x.pt", "empty file")])
    for gate in (Gate(), Gate(FailOn.NEVER), Gate(strict=True)):
        assert gate.exit_code(gate.apply(report)) == 2


# -- configuration files ---------------------------------------------------------------------


def test_find_config_walks_up_and_prefers_ppaux_toml(tmp_path):
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text('[tool.ppaux]\nfail-on = "info"\n')
    (tmp_path / "a" / "pyproject.toml").write_text('[project]\nname = "not-configured"\n')
    assert find_config(str(deep)) == str(tmp_path / "pyproject.toml")
    (tmp_path / "a" / "ppaux.toml").write_text("strict = true\n")
    assert find_config(str(deep)) == str(tmp_path / "a" / "ppaux.toml")
    assert discover_config(str(deep)) == Config(
        path=str(tmp_path / "a" / "ppaux.toml"), strict=True
    )


def test_a_broken_pyproject_that_never_names_ppaux_is_passed_over(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project\n")
    assert find_config(str(tmp_path)) is None


def test_load_config_reads_every_key(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[tool.ppaux]\nfail-on = "warning"\nselect = ["pp1", "PP201"]\n'
        'ignore = ["PP112"]\nstrict = true\n'
    )
    assert load_config(str(path)) == Config(
        str(path), FailOn.WARNING, ("PP1", "PP201"), ("PP112",), True
    )


@pytest.mark.parametrize(
    "name, text, message",
    [
        (
            "pyproject.toml",
            '[tool.ppaux]\nfail-on = "fatal"\n',
            "tool.ppaux.fail-on: must be one of error, warning, info, never, not the string "
            "'fatal'",
        ),
        (
            "pyproject.toml",
            "[tool.ppaux]\nfail-on = 1\n",
            "tool.ppaux.fail-on: must be one of error, warning, info, never, not the number 1",
        ),
        (
            "ppaux.toml",
            'colour = "always"\n',
            "colour: unknown key; known keys: fail-on, select, ignore, strict",
        ),
        (
            "pyproject.toml",
            '[tool.ppaux]\nFail_On = "error"\n',
            "tool.ppaux.Fail_On: unknown key; known keys: fail-on, select, ignore, strict; "
            "did you mean 'fail-on'?",
        ),
        (
            "ppaux.toml",
            'select = "PP1"\n',
            "select: must be a list of rule codes, not the string 'PP1'",
        ),
        (
            "ppaux.toml",
            'ignore = ["PP9"]\n',
            "ignore: 'PP9' matches no rule code; 'ppaux rules' lists them",
        ),
        ("ppaux.toml", 'strict = "yes"\n', "strict: must be true or false, not the string 'yes'"),
        ("pyproject.toml", "[tool]\nppaux = 3\n", "tool.ppaux: must be a table"),
        ("ppaux.toml", "strict = \n", "not valid TOML: "),
    ],
)
def test_invalid_configuration_names_the_file_and_the_key(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert str(info.value).startswith(f"{path}: {message}")


def test_flags_override_the_configuration_setting_by_setting():
    config = Config("x", FailOn.INFO, ("PP1",), ("PP112",), True)
    assert resolve_gate(config) == Gate(FailOn.INFO, Selection(("PP1",), ("PP112",)), True)
    assert resolve_gate(config, fail_on=FailOn.ERROR, select=["PP2"], strict=False) == Gate(
        FailOn.ERROR, Selection(("PP2",), ("PP112",)), False
    )
    assert resolve_gate(config, ignore=[]) == Gate(FailOn.INFO, Selection(("PP1",), ()), True)
    assert resolve_gate(Config()) == Gate()


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_select_ignore_and_fail_on():
    base = ["inspect", *MIXED, "-f", "json"]
    assert _codes(run(*base)) == ["PP101", "PP106", "PP114"]
    result = run(*base, "--select", "PP10")
    assert _codes(result) == ["PP101", "PP106"] and result.exit_code == 1
    result = run(*base, "--ignore", "pp101,PP114")
    assert _codes(result) == ["PP106"] and result.exit_code == 0
    assert run(*base, "--ignore", "PP101", "--fail-on", "warning").exit_code == 1
    result = run(*base, "--select", "PX1")
    assert result.exit_code == 2 and result.stdout == ""
    assert (
        result.stderr
        == "ppaux: error: --select: 'PX1' matches no rule code; 'ppaux rules' lists them\n"
    )
    result = run(*base, "--ignore", "PP1", "--ignore", "nope")
    assert (
        result.stderr
        == "ppaux: error: --ignore: 'nope' matches no rule code; 'ppaux rules' lists them\n"
    )


def test_cli_strict_fails_on_could_not_check():
    args = ["inspect", "fixtures/dumps/no_tensor_dict.pt", "fixtures/dumps/clean_output.pt"]
    assert run(*args).exit_code == 0
    result = run(*args, "--strict", "-f", "json")
    assert result.exit_code == 1
    finding = json.loads(result.stdout)["findings"][0]
    assert (finding["code"], finding["severity"], finding["extra"]) == (
        "PP114",
        "error",
        {"strict": True},
    )


def test_cli_reads_configuration_from_the_working_directory_upward(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ppaux]\nstrict = true\nignore = ["PP101"]\n')
    work = tmp_path / "sub"
    work.mkdir()
    args = ["inspect", "@fixtures/dumps/aux_list.pt", "@fixtures/dumps/no_tensor_dict.pt"]
    result = run(*args, "-f", "json", cwd=work)
    assert _codes(result) == ["PP114"] and result.exit_code == 1
    # Flags win: --no-strict and an explicit --ignore replace the file's settings.
    result = run(*args, "-f", "json", "--no-strict", "--ignore", "PP114", cwd=work)
    assert _codes(result) == ["PP101"] and result.exit_code == 1
    assert run(*args, "--no-strict", cwd=work).exit_code == 0


def test_cli_explicit_config_and_invalid_config(tmp_path):
    good = tmp_path / "gate.toml"
    good.write_text('fail-on = "never"\n')
    assert run("inspect", "fixtures/dumps/aux_list.pt", "--config", str(good)).exit_code == 0
    (tmp_path / "ppaux.toml").write_text('fail-on = "fatal"\n')
    result = run("inspect", "@fixtures/dumps/aux_list.pt", cwd=tmp_path)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        f"ppaux: error: {tmp_path / 'ppaux.toml'}: fail-on: must be one of error, warning, info, "
        "never, not the string 'fatal'\n"
    )
    result = run(
        "inspect", "fixtures/dumps/aux_list.pt", "--config", str(tmp_path / "missing.toml")
    )
    assert result.exit_code == 2
    assert result.stderr == (f"ppaux: error: --config {tmp_path / 'missing.toml'}: no such file\n")


def test_cli_output_file_for_every_format(tmp_path):
    for fmt in ("text", "json", "github", "sarif", "junit", "gitlab"):
        target = tmp_path / f"report.{fmt}"
        result = run("inspect", "fixtures/dumps/aux_list.pt", "-f", fmt, "-o", str(target))
        assert result.exit_code == 1 and result.stdout == "", fmt
        assert "PP101" in target.read_text(encoding="utf-8"), fmt
    result = run("inspect", "fixtures/dumps/aux_list.pt", "-o", str(tmp_path / "no" / "dir.txt"))
    assert result.exit_code == 2
    assert result.stderr == (
        f"ppaux: error: --output {tmp_path / 'no' / 'dir.txt'}: its folder does not exist\n"
    )


def test_cli_github_format_appends_the_step_summary(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    result = run(
        "inspect",
        "fixtures/dumps/aux_list.pt",
        "fixtures/corrupt/empty.pt",
        "-f",
        "github",
        GITHUB_STEP_SUMMARY=str(summary),
    )
    assert result.exit_code == 2
    assert result.stdout.splitlines()[-1] == (
        "ppaux inspect: 1 error(s), 0 warning(s), 0 info, 1 input(s) not checked"
    )
    text = summary.read_text()
    assert text.startswith("# earlier step\n## ppaux inspect\n\n**could not check every input**")
    # Markdown punctuation is escaped: an underscore pair would otherwise render as bold.
    assert "| error | PP101 aux-non-tensor | <code>fixtures/dumps/aux\\_list.pt</code>" in text
    assert "| <code>fixtures/corrupt/empty.pt</code> | empty file |" in text
    # Without the variable nothing is written anywhere else; an unwritable one only warns.
    result = run(
        "inspect",
        "fixtures/dumps/aux_list.pt",
        "-f",
        "github",
        GITHUB_STEP_SUMMARY=str(tmp_path / "no" / "summary.md"),
    )
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"ppaux: warning: {tmp_path / 'no' / 'summary.md'}: cannot append"
    )
