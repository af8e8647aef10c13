"""github, gitlab and sarif paths: relative to the repository root (or --root), absolute outside.

A code host attaches an annotation or an alert to a file only when its path is relative to the
repository root, whatever directory the command ran in and however the path was given.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import REPO, ppaux_process

from ppaux.report import Location, Report, finding
from ppaux.report.paths import find_root, rebase_report, shown_path

DUMP = REPO / "fixtures" / "dumps" / "aux_list.pt"


# -- the library ---------------------------------------------------------------------------------


def test_shown_path_inside_outside_and_not_a_path(tmp_path):
    root = tmp_path / "repo"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "deeper" / "a.pt").write_bytes(b"")
    (tmp_path / "outside.pt").write_bytes(b"")
    cwd = str(root / "sub")
    assert shown_path("deeper/a.pt", str(root), cwd) == "sub/deeper/a.pt"
    assert shown_path("./deeper/../deeper/a.pt", str(root), cwd) == "sub/deeper/a.pt"
    assert shown_path(str(root / "sub" / "deeper" / "a.pt"), str(root), "/") == "sub/deeper/a.pt"
    assert shown_path("../../outside.pt", str(root), cwd) == str(tmp_path / "outside.pt")
    assert shown_path(str(tmp_path / "outside.pt"), str(root), cwd) == str(tmp_path / "outside.pt")
    # A neighbour whose name starts like the root is outside it.
    (tmp_path / "repo2").mkdir()
    (tmp_path / "repo2" / "b.pt").write_bytes(b"")
    assert shown_path(str(tmp_path / "repo2" / "b.pt"), str(root), cwd) == str(
        tmp_path / "repo2" / "b.pt"
    )
    # Not a path: a distributed stage's label, standard input.
    assert shown_path("rank 1 (node-1)", str(root), cwd) == "rank 1 (node-1)"
    assert shown_path("-", str(root), cwd) == "-"


def test_shown_path_through_a_symbolic_link(tmp_path):
    root = tmp_path / "repo"
    (root / "data").mkdir(parents=True)
    (root / "data" / "a.pt").write_bytes(b"")
    (tmp_path / "link").symlink_to(root)
    # The same file reached through a link to the root is inside it.
    assert shown_path(str(tmp_path / "link" / "data" / "a.pt"), str(root), "/") == "data/a.pt"


def test_rebase_report_rebases_a_locations_file_too(tmp_path):
    # Triage places a finding on a log's line and check-observer on a method's source line: the
    # annotation lands on the location's file, so it must be relative to the root like the path.
    root = tmp_path / "repo"
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "rank0.log").write_text("x\n")
    report = Report(
        command="triage",
        findings=[
            finding(
                "PP802",
                str(root / "logs" / "rank0.log"),
                "m",
                location=Location(str(root / "logs" / "rank0.log"), 7),
            ),
            finding("PP802", "gone.log", "m", location=Location("gone.log", 1)),
            finding("PP802", "plain.log", "m"),
        ],
    )
    rebased = rebase_report(report, str(root), str(tmp_path))
    assert [f.location for f in rebased.findings] == [
        Location("logs/rank0.log", 7),
        Location("gone.log", 1),
        None,
    ]
    assert rebased.findings[0].path == "logs/rank0.log"
    # The report given is not changed.
    assert report.findings[0].location == Location(str(root / "logs" / "rank0.log"), 7)


def test_find_root_takes_the_nearest_git_directory_or_file(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    assert find_root(str(tmp_path / "repo" / "a" / "b")) == str(tmp_path / "repo")
    # A worktree or submodule has a .git file.
    (tmp_path / "repo" / "a" / ".git").write_text("gitdir: elsewhere\n")
    assert find_root(str(tmp_path / "repo" / "a" / "b")) == str(tmp_path / "repo" / "a")
    if find_root(str(tmp_path)) is None:  # nothing above the test's directory is a repository
        (tmp_path / "plain").mkdir()
        assert find_root(str(tmp_path / "plain")) is None


# -- the command line ----------------------------------------------------------------------------


def _ppaux(cwd: Path, *args: str, env: dict[str, str] | None = None):
    return ppaux_process(*args, cwd=cwd, env=env, timeout=120)


@pytest.fixture
def layout(tmp_path):
    """A repository with a dump two levels down, and a dump outside it."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "captures" / "stage0").mkdir(parents=True)
    shutil.copy(DUMP, root / "captures" / "stage0" / "bad.pt")
    shutil.copy(DUMP, tmp_path / "elsewhere.pt")
    return root


def test_github_paths_are_relative_to_the_repository_root(layout, tmp_path):
    summary = tmp_path / "summary.md"
    done = _ppaux(
        layout / "captures",
        "inspect",
        "stage0/bad.pt",
        "../../elsewhere.pt",
        "missing.pt",
        "--format",
        "github",
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert done.returncode == 2
    lines = done.stdout.splitlines()
    assert lines[0].startswith("::error file=captures/stage0/bad.pt,title=PP101 aux-non-tensor::")
    outside = str(tmp_path / "elsewhere.pt").replace(":", "%3A").replace(",", "%2C")
    assert lines[1].startswith(f"::error file={outside},title=PP101 aux-non-tensor::")
    # A name of nothing on disk is kept as given, and stderr names inputs as they were given.
    assert lines[2] == (
        "::error file=missing.pt,title=ppaux could not read this input::no such file"
    )
    assert done.stderr == "ppaux: error: missing.pt: no such file\n"
    assert "<code>captures/stage0/bad.pt</code>" in summary.read_text()


def test_gitlab_and_sarif_paths_are_relative_to_the_repository_root(layout, tmp_path):
    done = _ppaux(
        layout / "captures" / "stage0",
        "inspect",
        "bad.pt",
        str(tmp_path / "elsewhere.pt"),
        "--format",
        "gitlab",
    )
    assert done.returncode == 1, done.stderr
    assert [i["location"]["path"] for i in json.loads(done.stdout)] == [
        "captures/stage0/bad.pt",
        str(tmp_path / "elsewhere.pt"),
    ]
    done = _ppaux(
        layout / "captures" / "stage0",
        "inspect",
        "bad.pt",
        str(tmp_path / "elsewhere.pt"),
        "--format",
        "sarif",
    )
    results = json.loads(done.stdout)["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert uris == ["captures/stage0/bad.pt", "file://" + str(tmp_path / "elsewhere.pt")]


def test_root_option_chooses_the_root(layout, tmp_path):
    done = _ppaux(
        layout, "inspect", "captures/stage0/bad.pt", "--format", "gitlab", "--root", "captures"
    )
    assert json.loads(done.stdout)[0]["location"]["path"] == "stage0/bad.pt"
    done = _ppaux(
        layout,
        "inspect",
        "captures/stage0/bad.pt",
        "--format",
        "github",
        "--root",
        str(tmp_path / "nowhere"),
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"ppaux: error: --root {tmp_path / 'nowhere'}: not a directory\n"


def test_other_formats_keep_the_paths_as_given(layout):
    done = _ppaux(layout / "captures", "inspect", "stage0/bad.pt", "--format", "json")
    assert json.loads(done.stdout)["findings"][0]["path"] == "stage0/bad.pt"


def test_check_skew_paths_are_relative_to_the_repository_root(tmp_path):
    root = tmp_path / "deploy"
    (root / ".git").mkdir(parents=True)
    shutil.copytree(REPO / "fixtures" / "skew" / "fingerprints" / "releases", root / "fp")
    done = _ppaux(root / "fp", "check-skew", ".", "--format", "github")
    assert done.returncode == 1, done.stderr
    assert "::error file=fp/pp1.json,title=PP301 sglang-version-differs::" in done.stdout
