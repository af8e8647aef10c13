"""``ppaux capture status`` and ``ppaux capture list``: plugin state, directory usage, listing.

Capture files are made by the capture itself (install() on the sglang-shaped tree), so the
listing reads what a running sglang would leave.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import cli

from ppaux import capture

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."
NON_TENSOR = "received a non-tensor auxiliary PP output"
# The capture settings of the environment the tests run in must not leak into them.
UNSET: dict[str, str | None] = {
    "PPAUX_CAPTURE_DIR": None,
    "SGLANG_PLUGINS": None,
    "PPAUX_CAPTURE_WHEN": None,
    "PPAUX_CAPTURE_MAX_FILES": None,
    "PPAUX_CAPTURE_MAX_BYTES": None,
    "PPAUX_CAPTURE_SAMPLE_EVERY": None,
}


def run(*args: str, **env: str):
    return cli(*args, env={**UNSET, **env})


class Observer:
    def from_pp_tensors(self, tensors: dict) -> dict:
        return dict(tensors)


@pytest.fixture
def filled(tree: Path, tmp_path: Path) -> Path:
    """A directory with two captures (a failing pop, a failing add) and one skipped."""
    directory = tmp_path / "captures"
    capture.install(directory, max_files=2)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    with pytest.raises(RuntimeError):
        mixin.receive_output_message({"ids": torch.arange(2), P + "s": [1.0]}, Observer())
    with pytest.raises(RuntimeError):
        mixin.prepare_output_message({"ids": torch.arange(2)}, object())
    with pytest.raises(RuntimeError):
        mixin.receive_output_message({"ids": torch.arange(2), P + "s": [1.0]}, Observer())
    capture.uninstall()
    return directory


def test_status_of_a_directory(filled: Path):
    result = run("capture", "status", "--dir", str(filled), "--format", "json")
    assert result.exit_code == 0, result.output  # PP501/PP502 are warnings
    document = json.loads(result.stdout)
    files = sorted(filled.glob("capture-*.pt"))
    assert document["directory"] == {
        "path": str(filled),
        "exists": True,
        "writable": True,
        "captures": 2,
        "bytes": sum(p.stat().st_size for p in files),
        "skipped": 1,
    }
    plugin = document["plugin"]
    assert plugin["entry_point"] == "ppaux.capture.plugin:register"
    assert plugin["installed"] is True
    assert plugin["sglang_version"] == "0.5.23"
    assert plugin["sglang_has_plugin_framework"] is True
    assert plugin["sglang_has_transport"] is True
    assert plugin["would_activate"] is False
    assert plugin["reasons"] == ["PPAUX_CAPTURE_DIR is not set"]
    assert [(f["code"], f["severity"], f["path"], f["message"]) for f in document["findings"]] == [
        ("PP502", "warning", "ppaux_capture", "PPAUX_CAPTURE_DIR is not set"),
        (
            "PP501",
            "warning",
            str(filled),
            "1 capture(s) were skipped because the directory reached its bounds",
        ),
    ]


def test_status_would_activate_with_the_environment_set(filled: Path):
    result = run(
        "capture",
        "status",
        "--format",
        "json",
        PPAUX_CAPTURE_DIR=str(filled),
        PPAUX_CAPTURE_WHEN="always",
        SGLANG_PLUGINS="ppaux_capture",
    )
    document = json.loads(result.stdout)
    assert document["plugin"]["would_activate"] is True
    assert document["plugin"]["reasons"] == []
    assert document["plugin"]["settings"] == {
        "directory": str(filled),
        "when": "always",
        "max_files": 100,
        "max_bytes": 1 << 30,
        "sample_every": 1,
    }
    assert document["directory"]["path"] == str(filled)
    assert [f["code"] for f in document["findings"]] == ["PP501"]


def test_status_text(filled: Path):
    result = run("capture", "status", "--dir", str(filled))
    assert result.exit_code == 0
    rows = [
        re.split(r"\s{2,}", line.strip())
        for line in result.stdout.splitlines()
        if line.startswith(" ") and re.search(r"\S\s{2,}\S", line)
    ]
    table = {cells[0]: cells[-1] for cells in rows if len(cells) >= 2}
    assert table["plugin entry point"] == "ppaux.capture.plugin:register"
    assert table["would activate"] == "no"
    assert table["directory"] == str(filled)
    assert (table["captures"], table["skipped"]) == ("2", "1")
    assert "PP501 warning" in result.stdout
    assert result.stdout.endswith("0 error(s), 2 warning(s), 0 info, 0 input(s) not checked\n")


def test_status_names_the_reasons(tmp_path: Path):
    result = run(
        "capture",
        "status",
        "--format",
        "json",
        PPAUX_CAPTURE_DIR=str(tmp_path),
        SGLANG_PLUGINS="other",
        PPAUX_CAPTURE_MAX_BYTES="lots",
    )
    assert result.exit_code == 1  # PP504 is an error
    document = json.loads(result.stdout)
    assert document["plugin"]["reasons"] == [
        "sglang is not installed in this environment",
        "SGLANG_PLUGINS='other' does not list 'ppaux_capture'",
        "invalid setting: PPAUX_CAPTURE_MAX_BYTES='lots': not a size such as 1073741824, 512M "
        "or 1G",
    ]
    assert [f["code"] for f in document["findings"]] == ["PP504", "PP502"]


def test_status_of_a_directory_not_made_yet(tmp_path: Path):
    result = run("capture", "status", "--dir", str(tmp_path / "new"), "--format", "json")
    document = json.loads(result.stdout)
    assert document["directory"] == {
        "path": str(tmp_path / "new"),
        "exists": False,
        "writable": True,
        "captures": 0,
        "bytes": 0,
        "skipped": 0,
    }


def test_status_of_a_file_is_unwritable(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run("capture", "status", "--dir", str(blocker), "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert [(f["code"], f["message"]) for f in document["findings"]] == [
        ("PP502", "sglang is not installed in this environment; PPAUX_CAPTURE_DIR is not set"),
        ("PP503", "not a directory"),
    ]
    under = run("capture", "status", "--dir", str(blocker / "sub"), "--format", "json")
    findings = json.loads(under.stdout)["findings"]
    assert findings[-1]["message"] == f"cannot be created: {blocker} is not a directory"


def test_status_without_a_directory(tmp_path: Path):
    result = run("capture", "status", "--format", "json")
    document = json.loads(result.stdout)
    assert document["directory"] is None
    text = run("capture", "status").stdout
    # the option as the command takes it, not the library's parameter
    assert "not set (give --dir or set PPAUX_CAPTURE_DIR)" in text


def test_status_from_the_library_names_its_parameter():
    table = capture.status_report(environ={}).tables[0]
    assert ("directory", "not set (give directory or set PPAUX_CAPTURE_DIR)") in table.rows


def test_list_text_and_json(filled: Path):
    names = [p.name for p in sorted(filled.glob("capture-*.pt"))]
    result = run("capture", "list", "--dir", str(filled), COLUMNS="1000")
    assert result.exit_code == 0
    assert result.stdout == (
        f"{names[0]}: RuntimeError: {NON_TENSOR}\n"
        f"{names[1]}: RuntimeError: auxiliary output does not support pipeline-parallel "
        "transport\n"
        f"2 capture(s) in {filled}, 1 skipped\n"
        "0 error(s), 0 warning(s), 0 info, 0 input(s) not checked\n"
    )

    document = json.loads(
        run("capture", "list", "--format", "json", PPAUX_CAPTURE_DIR=str(filled)).stdout
    )
    assert document["directory"] == str(filled)
    assert document["skipped"] == 1
    entries = document["captures"]
    assert [Path(e["path"]).name for e in entries] == names
    assert [(e["meta"]["function"], e["meta"]["exception_message"]) for e in entries] == [
        ("pop_auxiliary_output_from_pp_tensors", NON_TENSOR),
        (
            "add_auxiliary_output_to_pp_tensors",
            "auxiliary output does not support pipeline-parallel transport",
        ),
    ]
    assert all(e["problem"] is None and e["size"] > 0 for e in entries)
    assert {e["meta"]["pid"] for e in entries} == {os.getpid()}


def test_list_reports_a_file_that_is_not_a_capture(tmp_path: Path):
    directory = tmp_path / "captures"
    directory.mkdir()
    (directory / "capture-bogus.pt").write_bytes(b"not a zip, not a pickle")
    torch.save({"a": torch.zeros(1)}, directory / "capture-plain.pt")
    result = run("capture", "list", "--dir", str(directory), "--format", "json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert [(Path(e["path"]).name, e["meta"], e["problem"]) for e in document["captures"]] == [
        ("capture-bogus.pt", None, document["captures"][0]["problem"]),
        ("capture-plain.pt", None, "not a ppaux capture file"),
    ]
    assert document["captures"][0]["problem"].startswith("not a torch.save zip or a pickle file")
    assert [(f["code"], Path(f["path"]).name) for f in document["findings"]] == [
        ("PP505", "capture-bogus.pt"),
        ("PP505", "capture-plain.pt"),
    ]
    # Which of PP505's messages each is, apart from its words.
    assert {f["message_id"] for f in document["findings"]} == {"PP505/unreadable"}
    assert run("capture", "list", "--dir", str(directory), "--fail-on", "warning").exit_code == 1


def test_list_says_each_dump_file_it_leaves_out(tmp_path: Path):
    # A capture cut short and renamed, and another dump, are no captures: left out of the
    # list, each said (a warning), where the list used to pass over them without a word.
    directory = tmp_path / "captures"
    directory.mkdir()
    (directory / "renamed.pt").write_bytes(b"PK\x03\x04 cut short")
    torch.save({"a": torch.zeros(1)}, directory / "weights.pt")
    (directory / "notes.txt").write_text("x")  # no dump file: not looked at
    result = run("capture", "list", "--dir", str(directory), "--format", "json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["captures"] == []
    found = [(f["code"], f["severity"], Path(f["path"]).name) for f in document["findings"]]
    assert found == [("PP505", "warning", "renamed.pt"), ("PP505", "warning", "weights.pt")]
    assert {f["message_id"] for f in document["findings"]} == {"PP505/left-out"}
    weights = document["findings"][1]["message"]
    assert weights == (
        "not a ppaux capture file; left out of the list (not named like a capture, and no "
        "readable capture inside)"
    )
    assert run("capture", "list", "--dir", str(directory), "--fail-on", "warning").exit_code == 1


def test_list_ignores_temporary_and_other_files(tmp_path: Path):
    directory = tmp_path / "captures"
    directory.mkdir()
    (directory / ".ppaux-tmp-capture-x").write_bytes(b"partial")
    (directory / "notes.txt").write_text("x")
    document = json.loads(run("capture", "list", "--dir", str(directory), "-f", "json").stdout)
    assert document["captures"] == []


@pytest.mark.parametrize(
    ("args", "variable", "message"),
    [
        (("capture", "list"), None, "no capture directory: pass --dir or set PPAUX_CAPTURE_DIR"),
        (
            ("capture", "list", "--dir", "/nonexistent/ppaux"),
            None,
            "--dir /nonexistent/ppaux: no such directory",
        ),
        (
            ("capture", "list"),
            "/nonexistent/env",
            "PPAUX_CAPTURE_DIR /nonexistent/env: no such directory",
        ),
    ],
)
def test_list_errors_are_one_line(args: tuple, variable: str | None, message: str):
    env = {k: v for k, v in os.environ.items() if k != "PPAUX_CAPTURE_DIR"}
    if variable is not None:
        env["PPAUX_CAPTURE_DIR"] = variable
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"ppaux: error: {message}\n")


def test_list_of_a_file_is_one_line(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "capture", "list", "--dir", str(blocker)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        2,
        f"ppaux: error: --dir {blocker}: not a directory\n",
    )


def test_capture_commands_do_not_import_torch(tmp_path: Path):
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from ppaux_cli.app import app\n"
        f"for args in (['capture', 'status', '--dir', {str(tmp_path)!r}],\n"
        f"             ['capture', 'list', '--dir', {str(tmp_path)!r}]):\n"
        "    assert CliRunner().invoke(app, args).exit_code in (0, 1)\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_status_honours_select_and_ignore(filled: Path):
    ignored = json.loads(
        run("capture", "status", "--dir", str(filled), "-f", "json", "--ignore", "PP502").stdout
    )
    assert [f["code"] for f in ignored["findings"]] == ["PP501"]
    selected = json.loads(
        run("capture", "status", "--dir", str(filled), "-f", "json", "--select", "PP502").stdout
    )
    assert [f["code"] for f in selected["findings"]] == ["PP502"]
    assert run("capture", "status", "--dir", str(filled), "--fail-on", "warning").exit_code == 1


def test_json_reports_follow_the_report_schema(filled: Path):
    import jsonschema

    schema = json.loads(
        (Path(__file__).resolve().parent.parent / "docs" / "report.schema.json").read_text(
            encoding="utf-8"
        )
    )
    for command in ("status", "list"):
        document = json.loads(run("capture", command, "--dir", str(filled), "-f", "json").stdout)
        assert document["command"] == f"capture {command}"
        errors = [
            f"{e.json_path}: {e.message}"
            for e in jsonschema.Draft202012Validator(schema).iter_errors(document)
        ]
        assert errors == []


def test_list_names_a_tensorize_rewrite_as_one(tmp_path: Path):
    # A tensorize rewrite left in the capture directory: the listing must not
    # call the rewrite a checkpoint capture, nor its trail (the original's) its own.
    from helpers import REPO

    (original,) = sorted((REPO / "fixtures/walkthrough").glob("capture-*-pop.pt"))
    (tmp_path / original.name).write_bytes(original.read_bytes())
    rewrite = tmp_path / "fixed.pt"
    assert cli("tensorize", str(tmp_path / original.name), "-o", str(rewrite)).exit_code == 0
    result = cli("capture", "list", "--dir", str(tmp_path), env={"COLUMNS": "1000"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index(
        "fixed.pt: (rewritten by ppaux tensorize 0.1.0 from "
        f"{original.name}, which failed with RuntimeError: received a non-tensor auxiliary PP "
        "output)"
    )
    assert lines[at + 1] == (
        "    the original's trail: recv dirty (scores (list)) > pop dirty (scores (list))"
    )
    assert "(no error yet: taken at a checkpoint)" not in result.stdout
