"""What ppaux says to install where torch is missing: the pinned torch and numpy of
docs/install.md, never ``pip install 'ppaux[torch]'`` (ppaux is not on the package index), said
once in every place that says it."""

from __future__ import annotations

from helpers import REPO

from ppaux.errors import TorchMissingError
from ppaux.triage import triage_paths

LOG = str(REPO / "fixtures" / "logs" / "sglang-aux-list.log")


def test_the_torch_error_names_numpy_and_the_pinned_cpu_build() -> None:
    text = str(TorchMissingError("ppaux replay"))
    assert text.startswith("ppaux replay needs torch, which is not installed: ")
    assert "install numpy and the torch your sglang deployment runs: " in text
    assert "pip install numpy torch==X.Y.Z, X.Y.Z being the version 'pip show torch' names" in text
    assert "(without a GPU, its CPU build: https://download.pytorch.org/whl/cpu)" in text


def test_triage_s_replay_step_installs_torch_as_install_md_says() -> None:
    report = triage_paths([LOG])
    comments = [step["comment"] for step in report.data["steps"]]
    notes = [comment for comment in comments if "replay needs torch" in comment]
    assert notes == [
        "then read what the capture wrote (replay needs torch there: install numpy and the "
        "torch your sglang deployment runs: pip install numpy torch==X.Y.Z, X.Y.Z being the "
        "version 'pip show torch' names there (without a GPU, its CPU build: "
        "https://download.pytorch.org/whl/cpu))"
    ]
    assert not [comment for comment in comments if "ppaux[torch]" in comment]


def test_no_page_says_install_the_ppaux_torch_extra_from_the_index() -> None:
    for page in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        text = page.read_text(encoding="utf-8")
        assert "'ppaux[torch]'" not in text, page.name


def test_a_capture_the_logs_show_is_read_by_the_steps_under_its_comment() -> None:
    strict = str(REPO / "fixtures" / "logs" / "sglang-aux-list-strict.log")
    steps = triage_paths([strict]).data["steps"]
    at = [i for i, step in enumerate(steps) if "capture on" in step["comment"]]
    assert len(at) == 1
    assert [steps[at[0] + n]["argv"][:3] for n in (1, 2, 3)] == [
        ["ppaux", "capture", "list"],
        ["ppaux", "inspect", "--"],
        ["ppaux", "replay", "--"],
    ]
    assert steps[at[0]]["comment"].startswith(
        "the logs show ppaux's capture on: read what it wrote (replay needs torch there: "
    )
