"""``ppaux triage`` on the logs of fixtures/logs/shapes/: exception groups behind launchers'
prefixes, Python's shortened groups, chains into groups, one-line records in the shapes other
tools write, and a log of signals and NCCL's warnings. Each expected root is written by hand in
that folder's expected.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import cli

from ppaux.triage import triage_paths

SHAPES = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "shapes"
EXPECTED: dict[str, dict[str, Any]] = json.loads((SHAPES / "expected.json").read_text())["logs"]
ROOTS = ("PP801", "PP802", "PP809")


def test_every_log_of_the_folder_has_its_expected_root():
    assert sorted(p.stem for p in SHAPES.glob("*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_root_is_the_one_written_by_hand(name):
    expected = EXPECTED[name]
    findings = triage_paths([str(SHAPES / f"{name}.log")]).findings
    roots = [f for f in findings if f.code in ROOTS]
    assert [f.code for f in roots] == [expected["code"]], [(f.code, f.message) for f in findings]
    assert "PP810" not in {f.code for f in findings}  # none of these is cut
    extra = roots[0].extra
    if expected["code"] == "PP809":
        assert extra["no_root"] == expected["kind"]
        return
    assert extra.get("sglang_message") == expected["message"]
    assert extra["exception"] == expected["exception"]
    assert extra["kind"] == expected["kind"]
    assert extra["ranks"] == [expected["ranks"] or "a process"]
    # The headline names the exception the kind was read from.
    assert f": {expected['exception']}" in roots[0].message


@pytest.mark.parametrize(
    "name",
    [
        "group-k9s",
        "group-pod",
        "group-parallel-tag",
        "group-note-frame-shaped",
        "group-note-header-shaped",
        "group-note-escaped-newline",
        "group-note-escaped-newline-pod",
    ],
)
def test_a_group_behind_a_prefix_is_one_failure(name):
    findings = triage_paths([str(SHAPES / f"{name}.log")]).findings
    codes = [f.code for f in findings if f.code in ("PP801", "PP802", "PP803")]
    assert codes == [EXPECTED[name]["code"]]  # one failure, no collateral of itself


@pytest.mark.parametrize(("name", "place"), [("first", 2), ("last", 1)])
def test_the_group_s_headline_says_which_sub_exception_it_is(name, place):
    """The collateral closed connection stands first or last: the headline is the memory
    failure either way, the sub-exception the kind was read from."""
    (root,) = [
        f
        for f in triage_paths([str(SHAPES / f"group-collateral-{name}.log")]).findings
        if f.code == "PP802"
    ]
    assert "torch.OutOfMemoryError: CUDA out of memory" in root.message
    assert f"sub-exception {place} of 2 of ExceptionGroup: unhandled errors in a TaskGroup" in (
        root.message
    )
    assert "ConnectionResetError" not in root.message


def test_one_line_records_fail_the_gate():
    for name in ("record-pytest", "record-error-word", "record-repr"):
        assert cli("triage", str(SHAPES / f"{name}.log")).exit_code == 1, name


def test_signals_and_nccl_warnings_are_both_named_with_what_to_collect():
    (found,) = [
        f
        for f in triage_paths([str(SHAPES / "sigquit-nccl-warnings.log")]).findings
        if f.code == "PP809"
    ]
    assert "only signals" not in found.message  # the log holds NCCL's warnings too
    assert "SIGQUIT (1 line" in found.message
    assert "NCCL's warnings (2 lines, the first from node-a pid 1234" in found.message
    assert "Collect every rank's own log" in found.message
    assert found.extra["nccl_warnings"] == 2
    result = cli("triage", "-f", "json", str(SHAPES / "sigquit-nccl-warnings.log"))
    steps = json.loads(result.output)["steps"]
    assert ["export", "NCCL_DEBUG=INFO"] in [s["argv"] for s in steps]
    assert "collect each rank's own output" in steps[0]["comment"]


@pytest.mark.parametrize("name", ["group-collateral-first", "group-collateral-last"])
def test_explain_reads_a_pasted_group_s_kind_as_triage_does(name):
    """The group's traceback alone, as a user pastes it into ``explain -``: the kind is its
    root sub-exception's (memory), not its last sub-exception's (a closed connection)."""
    lines = (SHAPES / f"{name}.log").read_text(encoding="utf-8").splitlines()[1:-1]
    lines[0] = lines[0].split("Scheduler hit an exception: ", 1)[1]
    result = cli("explain", "-", input="\n".join(lines) + "\n")
    assert result.exit_code == 2
    assert "'ppaux triage -' reads it as a memory failure" in result.output, result.output


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("two-messages-nested-groups", "RuntimeError: received a non-tensor auxiliary PP output"),
        ("two-messages-chain", "RuntimeError: received a non-tensor auxiliary PP output"),
        ("two-messages-chain-into-group", "RuntimeError: duplicate auxiliary PP tensor 'scores'"),
        ("two-messages-chain-out-of-group", "RuntimeError: duplicate auxiliary PP tensor 'scores'"),
        ("chain-into-group-of-collateral", "RuntimeError: received a non-tensor auxiliary PP"),
        ("chain-out-of-group", "RuntimeError: wrapper failed"),
        ("chain-out-of-group-k9s", "RuntimeError: wrapper failed"),
    ],
)
def test_the_headline_leads_with_the_exception_the_rule_and_kind_are_read_from(name, said):
    """Of a chain or a group holding several exceptions, the headline's first exception is the
    one the message, its rule and its kind come from; the others follow it."""
    (root,) = [
        f
        for f in triage_paths([str(SHAPES / f"{name}.log")]).findings
        if f.code in ("PP801", "PP802")
    ]
    headline = root.message.split(f"{root.extra['log']}:{root.extra['line']}): ", 1)[1]
    assert headline.startswith(said), headline
    assert "Connection closed" not in headline.split(" (", 1)[0]


def test_explain_names_the_message_of_a_nested_group_not_a_source_line_s():
    """The outer frame's source line spells add's duplicate message as code; the first
    exception line of the nine is the pop message's, as triage names it."""
    text = (SHAPES / "two-messages-nested-groups.log").read_text(encoding="utf-8")
    body = text.split("Scheduler hit an exception: ", 1)[1]
    result = cli("explain", "-", "-f", "json", input=body)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["message_id"] == "pop-non-tensor"


@pytest.mark.parametrize(
    "name",
    [
        "group-parallel-tag-one-after-another",
        "group-parallel-tag-interleaved",
        "group-labels-interleaved",
    ],
)
def test_two_groups_behind_leads_are_read_per_process(name):
    """PP1's group (closed connections only) is one collateral failure of PP0's, read whole:
    no traceback taken for cut off, no line of one process's group in the other's."""
    findings = triage_paths([str(SHAPES / f"{name}.log")]).findings
    assert [f.code for f in findings if f.code in ("PP801", "PP802", "PP803", "PP810")] == [
        "PP801",
        "PP803",
    ]
    (collateral,) = [f for f in findings if f.code == "PP803"]
    assert "PP1 failed" in collateral.message
    assert "Connection closed by peer" in collateral.message
    assert "cut off" not in collateral.message


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("group-shortened-root-unseen", "5 sub-exceptions not shown: one of them may be the root"),
        ("group-shortened", "(5 sub-exceptions not shown)"),
        ("group-max-depth", "(the groups nested deeper than 10 levels not shown)"),
        ("group-deeper-than-read", "(the groups nested deeper than 32 levels not shown)"),
        ("group-max-depth-pod", "(sub-exception 1 of 10 shown, counting those of the groups"),
        ("group-max-depth-pod", "(the groups nested deeper than 10 levels not shown)"),
    ],
)
def test_a_shortened_or_deep_group_says_what_the_log_does_not_show(name, said):
    (found,) = [
        f
        for f in triage_paths([str(SHAPES / f"{name}.log")]).findings
        if f.code in ("PP801", "PP802", "PP809")
    ]
    assert said in found.message
    assert not found.message.rstrip().endswith("and nothing else")


@pytest.mark.parametrize("name", ["setup-waiting-rank", "setup-waiting-rank-first"])
def test_a_rank_waiting_on_another_s_set_up_is_its_collateral(name):
    """PP1 timed out waiting for PP0, which could not set up: one root (PP0), and PP1 one
    collateral failure, said 30 s after it, wherever the log writes it."""
    findings = triage_paths([str(SHAPES / f"{name}.log")]).findings
    assert [f.extra["ranks"] for f in findings if f.code == "PP802"] == [["PP0"]]
    (waiting,) = [f for f in findings if f.code == "PP803" and "PP1" in f.message]
    assert "PP1 failed 30.0 s after the root with torch.distributed.DistStoreError" in (
        waiting.message
    )


@pytest.mark.parametrize("name", ["group-note-escaped-newline", "group-note-escaped-newline-pod"])
def test_a_note_holding_an_escaped_newline_is_the_group_s(name):
    """The note's ``\\n`` is two characters of the group's line: the headline names the
    group's own exception line, never the note's words as a failure or as the group."""
    findings = triage_paths([str(SHAPES / f"{name}.log")]).findings
    (root,) = [f for f in findings if f.code == "PP801"]
    assert "(sub-exception 2 of 2 of ExceptionGroup: unhandled errors in a TaskGroup" in (
        root.message
    )
    assert not any("fake note" in f.message for f in findings)
