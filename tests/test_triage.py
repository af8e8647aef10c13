"""``ppaux triage`` on the sample logs of fixtures/logs/ (written by sglang 0.5.23 itself, then
collected every way operators collect them) and on small logs written here.

Expected lines are found in each file with plain string searches, never with triage's code.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppaux.limits import Limits
from ppaux.report.formats import Format
from ppaux.triage import triage_paths
from ppaux.triage.scanner import MARKERS, Scanner
from ppaux_cli.app import app

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
NON_TENSOR = "received a non-tensor auxiliary PP output"

#: Every collected form of the same run: the first stage's pop fails, the last stage dies of
#: the closed connection (or, in watchdog-aux-list.log, of NCCL's watchdog), the parent logs
#: SIGQUIT.
COLLECTED = [
    "sglang-aux-list.log",
    "cri-aux-list.log",
    "docker-aux-list-json.log",
    "compose-aux-list.log",
    "timestamps-aux-list.log",
    "compose-timestamps-aux-list.log",
    "kubectl-prefix-aux-list.log",
    "kubectl-prefix-plain-aux-list.log",
    "ray-aux-list.log",
    "sglang-aux-list.log.gz",
    "invalid-bytes-aux-list.log",
    "cut-aux-list.log",
    "interleaved-aux-list.log",
    "watchdog-aux-list.log",
    "per-rank",
]

MAX_LINE = Limits().max_log_line


def _text(path: Path) -> list[str]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", "replace").splitlines()


def _line_of(path: Path, needle: str) -> int:
    """1-based number of the first line of ``path`` holding ``needle``."""
    return next(i for i, line in enumerate(_text(path), 1) if needle in line)


def _codes(report):
    return [f.code for f in report.findings]


def _root_file(name: str) -> Path:
    return LOGS / "per-rank" / "PP0.log" if name == "per-rank" else LOGS / name


@pytest.mark.parametrize("name", COLLECTED)
def test_every_collected_form_names_the_first_failing_rank_and_its_error(name):
    report = triage_paths([str(LOGS / name)])
    assert not report.problems
    roots = [f for f in report.findings if f.code in ("PP801", "PP802")]
    assert [f.code for f in roots] == ["PP801"]
    root = roots[0]
    assert root.key == "PP0"
    assert root.sglang_error == NON_TENSOR
    assert root.extra["rule"] == "PP101"
    assert root.extra["sglang_message"] == "pop-non-tensor"
    assert root.message.startswith("PP0 failed first at 2026-")
    source = _root_file(name)
    # a compressed log's line is its decompressed text's, said so
    said = f"{source} (decompressed)" if name.endswith(".gz") else str(source)
    assert f" ({said}:{root.location.line}): RuntimeError: " in root.message
    assert root.location.decompressed is name.endswith(".gz")
    assert root.location.file == str(source)
    assert root.location.line == _line_of(source, "PP0] Scheduler hit an exception")
    assert root.location.function == "pop_auxiliary_output_from_pp_tensors"
    # What followed is collateral, pointing at the root.
    collateral = [f for f in report.findings if f.code == "PP803"]
    assert collateral, _codes(report)
    assert all("collateral of PP0 at " in f.message for f in collateral)
    assert {f.key for f in collateral} <= {"PP1", "rank 1", "sglang-1"} | {None}
    if name != "per-rank":
        assert "PP804" in _codes(report)


def test_the_last_stage_dies_of_the_closed_connection():
    report = triage_paths([str(LOGS / "sglang-aux-list.log")])
    (later,) = [f for f in report.findings if f.code == "PP803"]
    assert later.key == "PP1"
    assert "Connection closed by peer" in later.message
    assert later.location.line == _line_of(
        LOGS / "sglang-aux-list.log", "PP1] Scheduler hit an exception"
    )


def test_watchdog_and_store_lines_are_collateral_of_their_rank():
    report = triage_paths([str(LOGS / "watchdog-aux-list.log")])
    kinds = {f.extra.get("kind"): f for f in report.findings if f.code == "PP803"}
    assert kinds["watchdog"].key == "rank 1"
    assert "NCCL watchdog timeout" in kinds["watchdog"].message
    assert "TCPStore" in kinds["store"].extra["text"]


def test_the_cut_off_traceback_is_kept_and_said():
    report = triage_paths([str(LOGS / "cut-aux-list.log")])
    cut = [f for f in report.findings if f.code == "PP803" and f.key == "PP1"]
    assert cut and "does not show (the traceback is cut off)" in cut[0].message


def test_files_are_merged_by_time_not_by_the_order_given():
    per_rank = LOGS / "per-rank"
    report = triage_paths([str(per_rank / "PP1.log"), str(per_rank / "PP0.log")])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.key == "PP0"
    assert root.location.file == str(per_rank / "PP0.log")


def test_a_healthy_log_claims_nothing_and_exits_0():
    report = triage_paths([str(LOGS / "sglang-healthy.log")])
    assert report.findings == ()
    result = CliRunner().invoke(app, ["triage", str(LOGS / "sglang-healthy.log")])
    assert result.exit_code == 0, result.output


def test_a_pp_failure_of_another_kind_claims_no_auxiliary_cause():
    log = LOGS / "sglang-observer-raises.log"
    report = triage_paths([str(log)])
    codes = _codes(report)
    assert "PP801" not in codes
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.key == "PP0"
    assert root.sglang_error is None
    assert "ValueError: observer expects 4 scores per batch, got 3" in root.message
    (culprit,) = [f for f in report.findings if f.code == "PP805"]
    assert "/srv/app/sglang_log_driver.py:" in culprit.message
    assert "in from_pp_tensors" in culprit.message
    assert culprit.extra["frames"][0]["function"] == "from_pp_tensors"
    assert report.data["next_steps"] and not any(
        "PPAUX_CAPTURE" in step for step in report.data["next_steps"]
    )


def test_the_build_and_the_release_its_lines_fit():
    report = triage_paths([str(LOGS / "sglang-aux-list.log")])
    (build,) = [f for f in report.findings if f.code == "PP806"]
    assert build.extra["install"] == "wheel"
    assert build.extra["where"] == "/usr/local/lib/python3.11/site-packages"
    assert "0.5.23" in build.extra["fits"]
    assert "0.5.19" not in build.extra["fits"]


def test_next_steps_are_commands_for_the_failing_ranks():
    report = triage_paths([str(LOGS / "sglang-aux-list.log")])
    steps = report.data["next_steps"]
    assert "export PPAUX_CAPTURE_STRICT=1" in " ".join(steps)
    assert any(s.startswith("ppaux check-skew ") for s in steps)
    assert any(s.startswith("ppaux fingerprint --pp-rank 0 --pp-size 2 ") for s in steps)
    assert any(s.startswith("ppaux fingerprint --pp-rank 1 --pp-size 2 ") for s in steps)
    assert any(s.startswith("ppaux inspect ") for s in steps)
    assert any(s.startswith("ppaux replay ") for s in steps)


# ----------------------------------------------------------------------------- small logs


def _tb(prefix: str, frames: list[tuple[str, int, str]], error: str) -> str:
    lines = [f"{prefix} Scheduler hit an exception: Traceback (most recent call last):"]
    for file, line, function in frames:
        lines += [f'  File "{file}", line {line}, in {function}', "    call()"]
    return "\n".join([*lines, error, ""]) + "\n"


SITE = "/usr/lib/python3.11/site-packages/sglang/srt"


def _spans(version: str, file: str, name: str) -> tuple[int, int]:
    table = json.loads((Path(__file__).parent.parent / "ppaux/data/releases.json").read_text())
    first, last = table["function_spans"]["releases"][version][file][name]
    return first, last


def test_ranks_on_different_builds_are_a_skew_finding(tmp_path):
    old = _spans(
        "0.5.19", "srt/managers/scheduler_pp_mixin.py", "SchedulerPPMixin._pp_prep_batch_result"
    )
    new = _spans(
        "0.5.23", "srt/managers/scheduler_pp_mixin.py", "SchedulerPPMixin._pp_prep_batch_result"
    )
    only_old = next(n for n in range(old[0], old[1] + 1) if not new[0] <= n <= new[1])
    log = tmp_path / "mixed.log"
    log.write_text(
        _tb(
            "[2026-12-03 10:00:00 PP0 TP0]",
            [(f"{SITE}/managers/scheduler_pp_mixin.py", only_old, "_pp_prep_batch_result")],
            "KeyError: 'sampling_mask_token_ids'",
        )
        + _tb(
            "[2026-12-03 10:00:01 PP1 TP0]",
            [(f"{SITE}/managers/scheduler_pp_mixin.py", new[0] + 1, "_pp_prep_batch_result")],
            "RuntimeError: Connection closed by peer [10.0.0.1]:29500",
        )
    )
    report = triage_paths([str(log)])
    table = json.loads((Path(__file__).parent.parent / "ppaux/data/releases.json").read_text())
    fitting = [
        version
        for version, files in table["function_spans"]["releases"].items()
        if (
            span := files["srt/managers/scheduler_pp_mixin.py"].get(
                "SchedulerPPMixin._pp_prep_batch_result"
            )
        )
        and span[0] <= only_old <= span[1]
    ]
    assert "0.5.19" in fitting and "0.5.23" not in fitting
    (skew,) = [f for f in report.findings if f.code == "PP807"]
    assert f"PP0 TP0: its lines fit {', '.join(fitting)}; PP1 TP0: its lines fit" in skew.message
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.message.startswith(
        f"PP0 TP0 failed first at 2026-12-03 10:00:00 (local time of the host, zone unknown) "
        f"({log}:1): KeyError:"
    )


def test_ranks_that_fail_together_are_one_incident_named_as_the_prefix_spells_them(tmp_path):
    frames = [
        (f"{SITE}/sampling/sampling_observer_pp.py", 77, "pop_auxiliary_output_from_pp_tensors")
    ]
    log = tmp_path / "tp.log"
    log.write_text(
        _tb("[2026-12-03 10:00:00.120 DP0 PP0 TP1]", frames, f"RuntimeError: {NON_TENSOR}")
        + _tb("[2026-12-03 10:00:00.180 DP0 PP0 TP0]", frames, f"RuntimeError: {NON_TENSOR}")
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.key == "DP0 PP0 TP1"
    assert root.extra["ranks"] == ["DP0 PP0 TP1", "DP0 PP0 TP0"]
    assert "PP803" not in _codes(report)


def test_the_strict_capture_is_recognised(tmp_path):
    log = tmp_path / "strict.log"
    log.write_text(
        "[2026-12-03 10:00:00 PP1] ppaux capture: capturing failing PP auxiliary transport calls "
        "into /data/caps (when=error, strict)\n"
        + _tb(
            "[2026-12-03 10:00:05 PP1]",
            [
                (f"{SITE}/managers/scheduler_pp_mixin.py", 900, "_pp_send_dict_to_next_stage"),
                ("/usr/lib/python3.11/site-packages/ppaux/capture/hop_hooks.py", 45, "wrapper"),
            ],
            "RuntimeError: auxiliary PP output 'scores' is not a tensor",
        )
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.extra["rule"] == "PP115"
    assert root.sglang_error == "auxiliary PP output 'scores' is not a tensor"
    assert "PP808" in _codes(report)
    assert "ppaux capture list --dir /data/caps" in report.data["next_steps"]


def test_communication_failures_without_a_root_say_so(tmp_path):
    log = tmp_path / "orphans.log"
    log.write_text(
        "[rank1]:[E1203 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=3) ran for 600000 milliseconds before timing out.\n"
    )
    report = triage_paths([str(log)])
    assert _codes(report) == ["PP809"]
    assert report.findings[0].message == (
        "no root in this log: the cause is on the network or another node; 1 communication "
        f"failure (rank 1 at {log}:1) and nothing else"
    )
    assert report.findings[0].extra["no_root"] == "network-or-other-node"


def test_log_text_is_shown_escaped(tmp_path):
    log = tmp_path / "escapes.log"
    log.write_bytes(
        _tb(
            "[2026-12-03 10:00:00 PP0]",
            [(f"{SITE}/managers/scheduler_pp_mixin.py", 1, "f")],
            "ValueError: bad \x1b[31mred\x1b[0m \u202e value \x07\x1b end",
        ).encode()
        + b"\xff\xfe\n"
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    # Colours are taken off; every other character is kept as the log wrote it, and shown
    # escaped where the finding is rendered (its str(), every format).
    assert "bad red \u202e value \x07\x1b end" in root.message
    assert "bad red \\u202e value \\x07\\x1b end" in str(root)


def test_inputs_that_cannot_be_read_are_problems(tmp_path):
    report = triage_paths([str(tmp_path / "missing.log"), str(tmp_path)])
    assert sorted(p.path for p in report.problems) == [str(tmp_path), str(tmp_path / "missing.log")]


# ----------------------------------------------------------------------------- the scanner


def _marked(data: bytes, chunk: int) -> list[tuple[int, bytes]]:
    scanner = Scanner(io.BytesIO(data), chunk=chunk)
    out = []
    while (item := scanner.next_marked_line()) is not None:
        out.append(item)
    return out


@pytest.mark.parametrize("chunk", [3, 17, 4096, 1 << 20])
def test_the_scanner_finds_every_marked_line_with_its_number(chunk):
    lines = []
    for i in range(300):
        if i % 37 == 5:
            lines.append(b"x " + MARKERS[i % len(MARKERS)] + b" y")
        elif i % 11 == 0:
            lines.append(b"")
        else:
            lines.append(b"[2026-12-03 10:00:00 PP0] Decode batch %d" % i)
    data = b"\n".join(lines)
    expected = [(n, line) for n, line in enumerate(lines, 1) if any(m in line for m in MARKERS)]
    assert _marked(data, chunk) == expected


def test_a_huge_line_costs_no_more_than_the_cap():
    data = b"a" * (3 * MAX_LINE) + b" " + MARKERS[0] + b"\n" + b"next " + MARKERS[1] + b"\n"
    found = _marked(data, 4096)
    assert found[-1] == (2, b"next " + MARKERS[1])
    assert all(len(line) <= MAX_LINE for _, line in found)


# ----------------------------------------------------------------------------- the command


def _invoke(*args: str, input: bytes | None = None):
    return CliRunner().invoke(app, ["triage", *args], input=input)


@pytest.mark.parametrize("fmt", [f.value for f in Format])
def test_every_format_and_exit_1(fmt):
    result = _invoke(str(LOGS / "sglang-aux-list.log"), "--format", fmt)
    assert result.exit_code == 1, result.output
    assert "PP801" in result.output


def test_sarif_and_github_place_the_root_on_the_log_line():
    log = LOGS / "sglang-aux-list.log"
    line = _line_of(log, "PP0] Scheduler hit an exception")
    sarif = json.loads(_invoke(str(log), "--format", "sarif").output)
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "PP801")
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"].endswith("fixtures/logs/sglang-aux-list.log")
    assert physical["region"]["startLine"] == line
    github = _invoke(str(log), "--format", "github").output
    assert f"sglang-aux-list.log,line={line}," in github


def test_stdin_once():
    data = (LOGS / "sglang-aux-list.log").read_bytes()
    result = _invoke("-", "--format", "json", input=data)
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert [f["path"] for f in report["findings"] if f["code"] == "PP801"] == ["<stdin>"]
    twice = _invoke("-", "-", input=data)
    assert twice.exit_code == 2
    assert twice.output.strip() == "ppaux: error: -: stdin can be read only once"


def test_a_missing_log_is_one_line_and_exit_2(tmp_path):
    result = _invoke(str(tmp_path / "nope.log"))
    assert result.exit_code == 2
    assert f"ppaux: error: {tmp_path / 'nope.log'}: no such file" in result.output


# ----------------------------------------------------------------------------- the docs


def _console_blocks(page: str) -> list[tuple[str, str]]:
    """(command, output) for each ```console block of one '$ ppaux triage ...' line that a
    ```text block follows."""
    import re

    text = (Path(__file__).resolve().parent.parent / "docs" / page).read_text(encoding="utf-8")
    fences = list(re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M))
    blocks = []
    for first, second in itertools.pairwise(fences):
        source = first.group(2).strip()
        if (
            first.group(1) == "console"
            and second.group(1) == "text"
            and not text[first.end() : second.start()].strip()
            and source.startswith("$ ppaux triage ")
            and "\n" not in source
        ):
            blocks.append((source[2:], second.group(2)))
    return blocks


@pytest.mark.parametrize("page", ["triage.md", "walkthrough.md"])
def test_the_pages_show_what_triage_prints(page):
    import os
    import shlex
    import subprocess
    import sys

    blocks = _console_blocks(page)
    assert blocks
    root = Path(__file__).resolve().parent.parent
    for command, expected in blocks:
        done = subprocess.run(
            [sys.executable, "-m", "ppaux_cli", *shlex.split(command)[1:]],
            cwd=root,
            env={**os.environ, "COLUMNS": "80", "NO_COLOR": "1"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.stdout == expected, command


# ----------------------------------------------------------------------------- messages, bounds

#: sglang's nine messages as a log shows them, and ppaux's rule for each (docs/triage.md).
NINE = [
    ("auxiliary output does not support pipeline-parallel transport", "PP115"),
    ("auxiliary PP output must contain at least one tensor", "PP115"),
    ("auxiliary PP tensor names must be non-empty strings", "PP115"),
    ("auxiliary PP output 'scores' is not a tensor", "PP115"),
    ("duplicate auxiliary PP tensor 'scores'", "PP115"),
    ("received auxiliary PP output without a sampling observer", "PP401"),
    ("sampling observer does not support pipeline-parallel transport", "PP401"),
    ("received a non-tensor auxiliary PP output", "PP101"),
    ("sampling observer did not reconstruct its PP output", "PP401"),
]


@pytest.mark.parametrize(("message", "rule"), NINE)
def test_each_of_the_nine_messages_maps_to_its_rule(message, rule, tmp_path):
    log = tmp_path / "nine.log"
    frames = [(f"{SITE}/sampling/sampling_observer_pp.py", 60, "x")]
    log.write_text(_tb("[2026-12-03 10:00:00 PP0 TP0]", frames, f"RuntimeError: {message}"))
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP801"]
    assert (root.sglang_error, root.extra["rule"]) == (message, rule)


@pytest.mark.parametrize(
    "error",
    [
        f"ValueError: {NON_TENSOR}",  # the text, but not sglang's exception type
        f"RuntimeError: while handling: {NON_TENSOR}",  # quoted inside another message
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ],
)
def test_other_failures_claim_no_auxiliary_cause(error, tmp_path):
    log = tmp_path / "other.log"
    frames = [(f"{SITE}/managers/scheduler_pp_mixin.py", 10, "f")]
    log.write_text(_tb("[2026-12-03 10:00:00 PP0 TP0]", frames, error))
    report = triage_paths([str(log)])
    assert [f.code for f in report.findings if f.code in ("PP801", "PP802")] == ["PP802"]
    assert all(f.sglang_error is None for f in report.findings)


def test_a_huge_line_stays_bounded_in_memory(tmp_path):
    import tracemalloc

    log = tmp_path / "huge.log"
    with open(log, "wb") as out:
        for _ in range(24):
            out.write(b"A" * (1 << 20))
        out.write(b" Traceback (most recent call last)\n")
        out.write(b"\x00\x1b[2J binary \xff\n")
    tracemalloc.start()
    try:
        report = triage_paths([str(log)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
    assert report.data["logs"][0]["long_lines"] >= 1
    assert report.data["logs"][0]["lines"] == 2


def test_a_source_checkout_is_named_as_one(tmp_path):
    log = tmp_path / "checkout.log"
    frames = [("/home/dev/sglang/python/sglang/srt/managers/scheduler_pp_mixin.py", 10, "f")]
    log.write_text(_tb("[2026-12-03 10:00:00 PP0]", frames, "KeyError: 'x'"))
    (build,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP806"]
    assert build.extra["install"] == "source checkout"
    assert build.extra["where"] == "/home/dev/sglang/python"
    assert "a source checkout at /home/dev/sglang/python" in build.message


def test_a_crash_loop_lists_twenty_incidents_and_counts_the_rest(tmp_path):
    log = tmp_path / "loop.log"
    frames = [
        (f"{SITE}/sampling/sampling_observer_pp.py", 77, "pop_auxiliary_output_from_pp_tensors")
    ]
    log.write_text(
        "".join(
            _tb(f"[2026-12-03 10:{minute:02d}:00 PP0]", frames, f"RuntimeError: {NON_TENSOR}")
            for minute in range(25)
        )
    )
    roots = [f for f in triage_paths([str(log)]).findings if f.code == "PP801"]
    assert len(roots) == 21
    assert roots[-1].extra["omitted"] == 5
    assert roots[-1].message.startswith("5 more incidents are not listed")
    assert roots[-1].message_id == "PP801/omitted"  # not the id of PP801's own message
    assert "(limit max_incidents=20 reached)" in roots[-1].message
    assert [(s.name, s.value) for s in roots[-1].suggestions] == [("max_incidents", 20)]
    # The bound is a field of Limits: raised, every incident is listed; lowered, fewer.
    every = triage_paths([str(log)], limits=Limits(max_incidents=25)).findings
    assert len([f for f in every if f.code == "PP801"]) == 25
    few = [f for f in triage_paths([str(log)], limits=Limits(max_incidents=3)).findings]
    assert [f.extra.get("omitted") for f in few if f.code == "PP801"] == [None] * 3 + [22]


def test_a_directory_gives_its_logs_rotated_ones_too(tmp_path):
    import shutil

    pod = tmp_path / "pods" / "ns_sglang-0_uid" / "sglang"
    pod.mkdir(parents=True)
    shutil.copy(LOGS / "sglang-aux-list.log", pod / "0.log.20261203-101500")
    (pod / "notes.py").write_text("print('not a log')\n")
    report = triage_paths([str(tmp_path / "pods")])
    assert [entry["log"] for entry in report.data["logs"]] == [str(pod / "0.log.20261203-101500")]
    assert "PP801" in _codes(report)
    empty = tmp_path / "empty"
    empty.mkdir()
    (problem,) = triage_paths([str(empty)]).problems
    assert problem.message.startswith("directory holds no log files (*.log, *.gz")


def test_the_strict_capture_sglang_ran_is_recognised():
    log = LOGS / "sglang-aux-list-strict.log"
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.key == "PP1"
    assert root.sglang_error == "auxiliary PP output 'scores' is not a tensor"
    assert root.extra["rule"] == "PP115"
    assert "raised by ppaux's strict capture, as the last stage's add would" in root.message
    assert root.location.line == _line_of(log, "PP1] Scheduler hit an exception")
    (strict,) = [f for f in report.findings if f.code == "PP808"]
    assert strict.key == "PP1"
    assert [f.key for f in report.findings if f.code == "PP803"] == ["PP0"]
    assert "ppaux capture list --dir /var/tmp/ppaux" in report.data["next_steps"]
    assert not any("PPAUX_CAPTURE_STRICT" in step for step in report.data["next_steps"])


def test_lines_the_collector_split_are_joined(tmp_path):
    frame = f'  File "{SITE}/sampling/sampling_observer_pp.py", line 77, in pop'
    pieces = [
        (
            "F",
            "[2026-12-03 10:00:00 PP0] Scheduler hit an exception: Traceback (most recent "
            "call last):",
        ),
        ("F", frame),
        ("P", "RuntimeError: received a non-tensor aux"),
        ("P", "iliary PP "),
        ("F", "output"),
    ]
    cri = tmp_path / "cri.log"
    cri.write_text(
        "".join(
            f"2026-12-03T10:00:00.{i:09d}Z stderr {tag} {text}\n"
            for i, (tag, text) in enumerate(pieces)
        )
    )
    docker = tmp_path / "docker.log"
    docker.write_text(
        "".join(
            json.dumps(
                {
                    "log": text + ("\n" if tag == "F" else ""),
                    "stream": "stderr",
                    "time": f"2026-12-03T10:00:00.{i:09d}Z",
                }
            )
            + "\n"
            for i, (tag, text) in enumerate(pieces)
        )
    )
    for log in (cri, docker):
        (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP801"]
        assert root.sglang_error == NON_TENSOR, log.name
        assert root.location.line == 1


def _decode_lines(time: str, stages: int, tp: int) -> str:
    return "".join(
        f"[2026-12-03 {time} PP{pp} TP{t}] Decode batch, #running-req: 12, #token: 4096, "
        "token usage: 0.03, cuda graph: True, gen throughput (token/s): 812.40, #queue-req: 0\n"
        for pp in range(stages)
        for t in range(tp)
    )


@pytest.mark.parametrize("envelope", ["plain", "cri", "docker-json", "timestamps"])
def test_next_steps_know_the_last_stage_from_every_rank_prefix_not_only_the_failing(
    envelope, tmp_path
):
    # PP=4 TP=2: only PP0 TP0 fails; PP3 appears only in the Decode batch lines, the others
    # die of NCCL's watchdog (lines without sglang's prefix).
    frames = [
        (f"{SITE}/sampling/sampling_observer_pp.py", 77, "pop_auxiliary_output_from_pp_tensors")
    ]
    text = (
        _decode_lines("10:14:00", 4, 2)
        + _tb("[2026-12-03 10:15:03 PP0 TP0]", frames, f"RuntimeError: {NON_TENSOR}")
        + "[rank6]:[E1203 10:25:04.000 ProcessGroupNCCL.cpp:632] [Rank 6] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=9, OpType=RECV) ran for 600083 "
        "milliseconds before timing out.\n"
    )
    lines = text.splitlines()
    if envelope == "cri":
        text = "".join(f"2026-12-03T10:15:03.000000001Z stderr F {line}\n" for line in lines)
    elif envelope == "docker-json":
        text = "".join(
            json.dumps({"log": line + "\n", "stream": "stderr", "time": "2026-12-03T10:15:03Z"})
            + "\n"
            for line in lines
        )
    elif envelope == "timestamps":
        text = "".join(f"2026-12-03T10:15:03.000000001Z {line}\n" for line in lines)
    log = tmp_path / "pp4.log"
    log.write_text(text)
    steps = triage_paths([str(log)]).data["next_steps"]
    fingerprints = [s for s in steps if s.startswith("ppaux fingerprint ")]
    assert fingerprints == [
        f"ppaux fingerprint --pp-rank {n} --pp-size 4 -o stage-{n}.json  # on PP{n}'s host"
        for n in (0, 1, 2, 3)
    ]
    if envelope == "cri":  # a pod's log: the capture is set in the pod spec, with a volume
        assert any("PPAUX_CAPTURE_STRICT=1 on PP3 only" in s for s in steps)
        kubectl = [s for s in steps if s.startswith("kubectl set env ")]
        # The directory on every stage, strict on the last stage's Deployment alone.
        assert kubectl == [
            "kubectl set env deployment/SGLANG PPAUX_CAPTURE_DIR=/var/tmp/ppaux  # SGLANG: the "
            "Deployment or StatefulSet of each stage; add the volume in its spec",
            "kubectl set env deployment/SGLANG PPAUX_CAPTURE_STRICT=1  # on PP3 only: SGLANG "
            "here is that stage's Deployment",
        ]
    elif envelope == "docker-json":  # a container's log: docker run -e, -v
        runs = [s for s in steps if s.startswith("docker run ")]
        assert len(runs) == 1
        assert runs[0].startswith("docker run -e PPAUX_CAPTURE_DIR=") and " -v " in runs[0]
        assert "PPAUX_CAPTURE_STRICT" not in runs[0]  # every stage's container runs it
        assert any("on PP3 only, -e PPAUX_CAPTURE_STRICT=1 beside it" in s for s in steps)
    else:
        assert any(s.startswith("export PPAUX_CAPTURE_STRICT=1  # on PP3 only") for s in steps)


def test_lines_without_a_time_are_collateral_of_the_incident_before_them_in_their_log(tmp_path):
    # One plain log, two incidents an hour apart (a restart in between); the NCCL watchdog
    # lines (torch's C++ format: no year, so no time) came after the first one.
    frames = [
        (f"{SITE}/sampling/sampling_observer_pp.py", 77, "pop_auxiliary_output_from_pp_tensors")
    ]
    watchdog = (
        "[rank{n}]:[E1203 10:25:04.000 ProcessGroupNCCL.cpp:632] [Rank {n}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=9, OpType=RECV) ran for 600083 "
        "milliseconds before timing out.\n"
    )
    log = tmp_path / "restarted.log"
    log.write_text(
        _decode_lines("10:14:00", 2, 1)
        + _tb("[2026-12-03 10:15:03 PP0]", frames, f"RuntimeError: {NON_TENSOR}")
        + watchdog.format(n=1)
        + _decode_lines("11:39:00", 2, 1)
        + _tb("[2026-12-03 11:40:03 PP1]", [], "KeyError: 'req_pool_idx'")
    )
    first = _line_of(log, "10:15:03 PP0] Scheduler hit an exception")
    second = _line_of(log, "11:40:03 PP1] Scheduler hit an exception")
    report = triage_paths([str(log)])
    (collateral,) = [f for f in report.findings if f.code == "PP803"]
    assert collateral.key == "rank 1"
    assert f"(collateral of PP0 at {log}:{first})" in collateral.message
    assert [i["collateral"] for i in report.data["incidents"]] == [1, 0]
    assert [i["root"]["line"] for i in report.data["incidents"]] == [first, second]


@pytest.mark.parametrize("fmt", ["text", "github", "markdown", "html", "sarif"])
def test_escape_sequences_other_than_colours_are_shown_not_hidden(fmt, tmp_path):
    # A window title, a clear screen and a cursor move in a logged message: the report shows
    # that the log held them (escaped), it neither runs them nor drops them silently.
    log = tmp_path / "title.log"
    log.write_text(
        _tb(
            "[2026-12-03 10:00:00 PP0]",
            [(f"{SITE}/managers/scheduler_pp_mixin.py", 1, "f")],
            "ValueError: \x1b[32mgreen\x1b[0m \x1b]0;owned\x07 \x1b[2J \x1b[1A end",
        )
    )
    result = _invoke(str(log), "--format", fmt)
    assert result.exit_code == 1
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "green" in result.output and "[32m" not in result.output
    assert "]0;owned" in result.output and "[2J" in result.output and "[1A" in result.output


def test_a_message_in_the_chain_is_named_and_predicts_sglang_s_words_only(tmp_path):
    # The non-tensor error is the cause of what the deployment's wrapper raised; the logged
    # line also carries text after sglang's message.
    log = tmp_path / "chained.log"
    log.write_text(
        "[2026-12-03 10:15:03 PP0 TP0] Scheduler hit an exception: Traceback (most recent call"
        " last):\n"
        f'  File "{SITE}/sampling/sampling_observer_pp.py", line 77, in '
        "pop_auxiliary_output_from_pp_tensors\n"
        '    raise RuntimeError("received a non-tensor auxiliary PP output")\n'
        f"RuntimeError: {NON_TENSOR} [while handling batch 17]\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/acme/wrap.py", line 10, in run\n'
        '    raise SystemError("scheduler died")\n'
        "SystemError: scheduler died\n"
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.sglang_error == NON_TENSOR
    assert root.extra["rule"] == "PP101"
    assert (
        f"RuntimeError: {NON_TENSOR} [while handling batch 17] (in the chain of "
        "SystemError: scheduler died); raised by the first stage's pop (see PP101)"
    ) in root.message
    assert root.extra["exception"] == "RuntimeError"


ASGI_ERROR = (
    "[2026-12-03 10:14:09] ERROR:    Exception in ASGI application\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.11/site-packages/uvicorn/protocols/http/httptools_impl.py", '
    "line 409, in run_asgi\n"
    "    result = await app(self.scope, self.receive, self.send)\n"
    f'  File "{SITE}/entrypoints/http_server.py", line 512, in generate_request\n'
    '    raise ValueError("Input length (40000 tokens) exceeds the maximum allowed length '
    '(32768 tokens).")\n'
    "ValueError: Input length (40000 tokens) exceeds the maximum allowed length "
    "(32768 tokens).\n"
)


def test_a_refused_request_s_traceback_in_a_serving_log_is_no_incident(tmp_path):
    log = tmp_path / "serving.log"
    log.write_text(_decode_lines("10:14:00", 2, 4) + ASGI_ERROR + _decode_lines("10:14:10", 2, 4))
    result = _invoke(str(log), "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["findings"] == [] and document["incidents"] == []
    assert document["logs"][0]["failures"] == 1  # read and counted, not an incident


def test_a_bare_traceback_through_the_scheduler_is_still_a_root(tmp_path):
    # A launcher that captured a scheduler's stderr without sglang's logger: no prefix, no
    # 'Scheduler hit an exception', but the frames are the scheduler's.
    log = tmp_path / "bare.log"
    log.write_text(
        ASGI_ERROR
        + "Traceback (most recent call last):\n"
        + f'  File "{SITE}/managers/scheduler.py", line 6368, in run_scheduler_process\n'
        + "    scheduler.run_event_loop()\n"
        + "KeyError: 'req_pool_idx'\n"
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.location.line == _line_of(log, "KeyError") - 3
    assert "KeyError: 'req_pool_idx'" in root.message
    assert "ValueError" not in " ".join(f.message for f in report.findings)


def _filler(lines: int, seed: int) -> str:
    # Lines that deflate cannot shrink much (a hex number each), so the gzip is several MiB.
    import random

    rng = random.Random(seed)
    return "".join(
        f"[2026-12-03 10:13:{i % 60:02d} PP1 TP2] Decode batch, #running-req: {i}, "
        f"req {rng.getrandbits(128):032x}\n"
        for i in range(lines)
    )


@pytest.mark.parametrize("damage", ["cut", "trailing bytes"])
def test_a_damaged_gzip_keeps_everything_inflated_before_the_damage(damage, tmp_path):
    # 6 MiB of log, the failure 1,000 lines before the end, then the gzip stream damaged
    # at its very end: the failure is still there to find.
    frames = [
        (f"{SITE}/sampling/sampling_observer_pp.py", 77, "pop_auxiliary_output_from_pp_tensors")
    ]
    text = (
        _filler(60_000, 1)
        + _tb("[2026-12-03 10:15:03 PP0 TP0]", frames, f"RuntimeError: {NON_TENSOR}")
        + _filler(1_000, 2)
    )
    assert len(text) > 5 << 20  # more than one of the scanner's 4 MiB chunks
    packed = gzip.compress(text.encode(), compresslevel=1)
    data = packed[:-200] if damage == "cut" else packed + b"garbage after the stream\n"
    log = tmp_path / "damaged.log.gz"
    log.write_bytes(data)
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.location.line == 60_001
    (cut,) = [f for f in report.findings if f.code == "PP810"]
    assert "gzip stream ends early" in cut.message


@pytest.mark.parametrize("compression", ["bzip2", "xz"])
def test_a_cut_bzip2_or_xz_log_names_its_own_compression(compression, tmp_path):
    # logrotate's compresscmd may be bzip2 or xz; a copy cut short is told as such, never as gzip.
    import bz2
    import lzma

    text = _filler(2_000, 3) + _tb(
        "[2026-12-03 10:15:03 PP0 TP0]",
        [(f"{SITE}/managers/scheduler.py", 10, "run_batch")],
        "ValueError: bad weight shape",
    )
    text += _filler(20_000, 4)
    compress = bz2.compress if compression == "bzip2" else lzma.compress
    packed = compress(text.encode())
    log = tmp_path / "rotated.log.1"
    log.write_bytes(packed[: len(packed) * 3 // 4])
    report = triage_paths([str(log)])
    assert [f.extra["exception"] for f in report.findings if f.code == "PP802"] == ["ValueError"]
    (cut,) = [f for f in report.findings if f.code == "PP810"]
    assert cut.message.startswith(f"the {compression} stream ends early")
    assert "gzip" not in cut.message


def test_a_marker_split_between_pieces_and_a_line_past_the_cap(tmp_path):
    # While PP0's traceback is being read, PP1's first line comes in CRI 'P' pieces that cut
    # the marker itself; a later line is split into more pieces than MAX_LINE holds (its end
    # is dropped, the line kept once, numbered by its first piece).
    frame = f'  File "{SITE}/sampling/sampling_observer_pp.py", line 77, in pop'
    records = [
        (
            "F",
            "[2026-12-03 10:00:00 PP0] Scheduler hit an exception: Traceback (most recent "
            "call last):",
        ),
        ("F", frame),
        ("F", "KeyError: 'scores'"),
        ("P", "[2026-12-03 10:00:00 PP1] Scheduler hit an exception: Trace"),
        ("P", "back (most recent "),
        ("F", "call last):"),
        ("F", frame),
        ("F", f"RuntimeError: {NON_TENSOR}"),
        *[("P", "x" * 1000)] * (MAX_LINE // 1000 + 50),
        ("F", " end of a long line"),
        ("F", "[2026-12-03 10:00:01] Received sigquit from a child process. It usually means "),
    ]
    log = tmp_path / "pieces.log"
    log.write_text(
        "".join(
            f"2026-12-03T10:00:00.{i:09d}Z stderr {tag} {t}\n" for i, (tag, t) in enumerate(records)
        )
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert (root.key, root.location.line) == ("PP1", 4)
    (sigquit,) = [f for f in report.findings if f.code == "PP804"]
    assert sigquit.location.line == len(records)


def test_many_cut_off_tracebacks_of_one_incident_are_listed_five_then_counted(tmp_path):
    # The whole process group killed while eight ranks were writing their tracebacks.
    frame = f'  File "{SITE}/managers/scheduler.py", line 6368, in run_scheduler_process\n'
    log = tmp_path / "killed.log"
    log.write_text(
        "".join(
            f"[2026-12-03 10:00:00 PP{n // 4} TP{n % 4}] Scheduler hit an exception: Traceback "
            f"(most recent call last):\n{frame}"
            for n in range(8)
        )
    )
    report = triage_paths([str(log)])
    cut = [f for f in report.findings if f.code == "PP810"]
    assert [f.key for f in cut[:5]] == ["PP0 TP0", "PP0 TP1", "PP0 TP2", "PP0 TP3", "PP1 TP0"]
    assert len(cut) == 6
    assert cut[5].message.startswith(
        f"3 more tracebacks of incident 1 end before their exception line (the first: "
        f"PP1 TP1 at {log}:{_line_of(log, 'PP1 TP1]')})"
    )


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-03 10:15:03",
        "2024-02-29 23:59:59",
        "2026-02-29 10:00:00",
        "2026-13-01 00:00:00",
        "2026-12-03 24:00:00",
        "2026-12-03 10:15:+3",
        "2026-12-03 10:15:0\u0663",
        "2026-12-0310:15:03 ",
        "",
    ],
)
def test_sglang_s_time_is_read_as_strptime_reads_it(text):
    # Wall-clock seconds of a naive time: no zone is given to it, not even UTC.
    from datetime import datetime

    from ppaux.triage.lineformat import sglang_time

    try:
        naive = datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
        expected = (naive - datetime(1970, 1, 1)).total_seconds()
    except ValueError:
        expected = None
    assert sglang_time(text) == expected
    if expected is not None:
        assert sglang_time(text, "250") == expected + 0.25


def test_a_docker_record_nested_deeper_than_python_recurses_is_text_not_a_crash(tmp_path):
    record = {"log": "", "stream": "stderr", "time": "2026-12-03T10:00:00.000000001Z"}
    frames = [
        (f"{SITE}/sampling/sampling_observer_pp.py", 77, "pop_auxiliary_output_from_pp_tensors")
    ]
    lines = _tb("[2026-12-03 10:00:00 PP0]", frames, f"RuntimeError: {NON_TENSOR}").splitlines()
    records = [json.dumps({**record, "log": line + "\n"}) for line in lines]
    deep = '{"log": "x\\n", "nested": ' + "[" * 30_000 + "]" * 30_000 + "}"
    log = tmp_path / "deep-json.log"
    log.write_text("\n".join([records[0], deep, *records[1:], deep]) + "\n")
    result = _invoke(str(log), "--format", "json")
    assert result.exit_code == 1, result.output
    (root,) = [f for f in json.loads(result.output)["findings"] if f["code"] == "PP801"]
    assert root["location"]["line"] == 1


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be-bom", "utf-16-gzip"])
def test_a_utf16_log_as_windows_powershell_writes_it_is_read(encoding, tmp_path):
    # PowerShell 5's 'kubectl logs pod > sglang.log' writes UTF-16 with a byte-order mark.
    source = LOGS / "sglang-aux-list.log"
    text = source.read_text(encoding="utf-8")
    if encoding == "utf-16-be-bom":
        data = b"\xfe\xff" + text.encode("utf-16-be")
    else:
        data = text.encode("utf-16")  # little-endian with its mark, as PowerShell writes
    if encoding.endswith("gzip"):
        data = gzip.compress(data)
    log = tmp_path / "powershell.log"
    log.write_bytes(data)
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.key == "PP0"
    assert root.location.line == _line_of(source, "Scheduler hit an exception")
    assert root.sglang_error == NON_TENSOR
    assert "PP803" in _codes(report) and "PP804" in _codes(report)


def test_a_log_given_twice_or_through_its_directory_or_a_link_is_read_once(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "server.log"
    log.write_bytes((LOGS / "sglang-aux-list.log").read_bytes())
    (tmp_path / "link.log").symlink_to(log)
    report = triage_paths([str(log), str(logs), str(log), str(tmp_path / "link.log")])
    assert [r["log"] for r in report.data["logs"]] == [str(log)]
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.extra["ranks"] == ["PP0"]
    (sigquit,) = [f for f in report.findings if f.code == "PP804"]
    assert "(2 lines)" in sigquit.message  # the log's own two lines, not four


def test_a_deployment_file_in_a_directory_called_sglang_is_the_culprit_not_sglang(tmp_path):
    # sglang's Docker images hold the checkout at /sgl-workspace/sglang; a deployment puts its
    # own scheduler subclass beside it.
    checkout = "/sgl-workspace/sglang/python/sglang/srt"
    log = tmp_path / "image.log"
    log.write_text(
        _tb(
            "[2026-12-03 10:00:00 PP0 TP0]",
            [
                (f"{checkout}/managers/scheduler.py", 6368, "run_scheduler_process"),
                ("/sgl-workspace/sglang/acme_scheduler.py", 41, "event_loop_pp"),
                (
                    f"{checkout}/sampling/sampling_observer_pp.py",
                    77,
                    "pop_auxiliary_output_from_pp_tensors",
                ),
            ],
            f"RuntimeError: {NON_TENSOR}",
        )
    )
    report = triage_paths([str(log)])
    (culprit,) = [f for f in report.findings if f.code == "PP805"]
    assert "/sgl-workspace/sglang/acme_scheduler.py:41 in event_loop_pp" in culprit.message
    (build,) = [f for f in report.findings if f.code == "PP806"]
    assert build.extra["install"] == "source checkout"
    assert build.extra["where"] == "/sgl-workspace/sglang/python"


def test_sglang_s_own_dependencies_are_not_culprits_an_installed_plugin_is(tmp_path):
    packages = "/usr/local/lib/python3.11/dist-packages"
    frames = [
        (f"{packages}/sglang/srt/managers/scheduler.py", 6368, "run_scheduler_process"),
        (f"{packages}/acme_sglang_plugin/observer.py", 12, "forward"),
        (f"{packages}/sglang/srt/model_executor/model_runner.py", 2100, "forward"),
        (f"{packages}/flashinfer/decode.py", 1200, "run"),
        (f"{packages}/sgl_kernel/elementwise.py", 88, "silu_and_mul"),
        (f"{packages}/triton/runtime/jit.py", 390, "run"),
        (f"{packages}/torch/_ops.py", 1123, "__call__"),
    ]
    log = tmp_path / "oom.log"
    log.write_text(
        _tb(
            "[2026-12-03 10:00:00 PP1 TP2]",
            frames,
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        )
    )
    report = triage_paths([str(log)])
    (culprit,) = [f for f in report.findings if f.code == "PP805"]
    assert f"{packages}/acme_sglang_plugin/observer.py:12 in forward" in culprit.message
    assert "PP801" not in _codes(report)


# -- times: sglang's own are local times without a zone ------------------------------------------

LOCAL = "local time of the host, zone unknown"
# A time of the sample logs followed by a zone: something made sglang's local time UTC.
_ZONED = r"2026-12-03[ T]14:56:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)"


@pytest.mark.parametrize("fmt", [f.value for f in Format])
def test_sglang_s_local_times_are_shown_without_a_zone(fmt):
    import re

    log = LOGS / "sglang-aux-list.log"
    result = _invoke(str(log), "--format", fmt)
    assert result.exit_code == 1, result.output
    assert "2026-12-03 14:56:07" in result.output
    assert re.search(_ZONED, result.output) is None
    if fmt in ("text", "json", "markdown", "github"):
        assert LOCAL in result.output


def test_the_json_report_says_the_zone_is_unknown():
    log = LOGS / "sglang-aux-list.log"
    line = _line_of(log, "PP0] Scheduler hit an exception")
    report = json.loads(_invoke(str(log), "--format", "json").output)
    (root,) = [f for f in report["findings"] if f["code"] == "PP801"]
    assert (root["extra"]["time"], root["extra"]["time_zone"]) == ("2026-12-03 14:56:07", None)
    assert root["message"].startswith(f"PP0 failed first at 2026-12-03 14:56:07 ({LOCAL}) (")
    (incident,) = report["incidents"]
    assert (incident["time"], incident["time_zone"]) == ("2026-12-03 14:56:07", None)
    assert incident["root"]["line"] == line


def test_a_collector_s_time_keeps_its_zone():
    log = LOGS / "cri-aux-list.log"
    stamp = next(t for t in _text(log) if "PP0] Scheduler hit an exception" in t).split(" ")[0]
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert (root.extra["time"], root.extra["time_zone"]) == (stamp, "Z")
    assert root.message.startswith(f"PP0 failed first at {stamp} (")
    # Both ranks' times are instants: the delay is given.
    (later,) = [f for f in report.findings if f.code == "PP803"]
    assert later.message.startswith("PP1 failed 5.0 s after the root with ")


def test_local_times_of_different_logs_are_not_compared():
    per_rank = LOGS / "per-rank"
    report = triage_paths([str(per_rank / "PP0.log"), str(per_rank / "PP1.log")])
    (later,) = [f for f in report.findings if f.code == "PP803"]
    stamp = next(t for t in _text(per_rank / "PP1.log") if "Scheduler hit an exception" in t)
    assert later.message.startswith(f"PP1 failed at {stamp[1:20]} ({LOCAL}) with ")
    # In one log the same two records are 5 s apart, as their times say.
    (same,) = [
        f for f in triage_paths([str(LOGS / "sglang-aux-list.log")]).findings if f.code == "PP803"
    ]
    assert same.message.startswith("PP1 failed 5.0 s after the root with ")


def _collector_and_local_logs(tmp_path):
    """PP0's log as Kubernetes keeps it (CRI, UTC instants) with the root at 10:00:03Z, and
    PP1's as a plain file of a host five hours behind UTC, failing at 05:00:05 local time."""
    frames = [
        (f"{SITE}/sampling/sampling_observer_pp.py", 77, "pop_auxiliary_output_from_pp_tensors")
    ]
    cri = tmp_path / "pp0.log"
    lines = _tb("[2026-12-03 10:00:03 PP0]", frames, f"RuntimeError: {NON_TENSOR}").splitlines()
    cri.write_text(
        "".join(f"2026-12-03T10:00:03.{i:09d}Z stderr F {t}\n" for i, t in enumerate(lines))
    )
    plain = tmp_path / "pp1.log"
    plain.write_text(
        _tb(
            "[2026-12-03 05:00:05 PP1]",
            [(f"{SITE}/distributed/parallel_state.py", 1, "recv_object")],
            "RuntimeError: Connection closed by peer [10.0.0.1]:29500",
        )
    )
    return cri, plain


def test_a_local_time_is_never_set_against_a_collector_s(tmp_path):
    # PP0's log came through Kubernetes (UTC instants); PP1's is a plain file written on a host
    # five hours behind UTC. Read as UTC, PP1's connection error would be 5 hours before the
    # root; its time does not compare with the root's, so only its own time is given.
    cri, plain = _collector_and_local_logs(tmp_path)
    for order in ([plain, cri], [cri, plain]):
        report = triage_paths([str(p) for p in order])
        (root,) = [f for f in report.findings if f.code == "PP801"]
        assert root.extra["time"] == "2026-12-03T10:00:03.000000000Z"
        (later,) = [f for f in report.findings if f.code == "PP803"]
        assert later.message.startswith(f"PP1 failed at 2026-12-03 05:00:05 ({LOCAL}) with ")


# -- --local-zone: the user says the zone of sglang's own times -----------------------------------


def test_local_zone_makes_local_times_of_different_logs_compare():
    per_rank = LOGS / "per-rank"
    result = _invoke(
        str(per_rank / "PP1.log"),
        str(per_rank / "PP0.log"),
        "--local-zone",
        "+01:00",
        "--format",
        "json",
    )
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    (root,) = [f for f in report["findings"] if f["code"] == "PP801"]
    assert root["location"]["file"] == str(per_rank / "PP0.log")
    assert (root["extra"]["time"], root["extra"]["time_zone"]) == ("2026-12-03 14:56:07", "+01:00")
    assert root["message"].startswith(
        "PP0 failed first at 2026-12-03 14:56:07 (local time, in +01:00 as given) ("
    )
    (later,) = [f for f in report["findings"] if f["code"] == "PP803"]
    assert later["message"].startswith("PP1 failed 5.0 s after the root with ")


def test_local_zone_sets_local_times_against_a_collector_s(tmp_path):
    # As in test_a_local_time_is_never_set_against_a_collector_s, with the zone of PP1's host
    # given: 05:00:05 at -05:00 is 10:00:05Z, two seconds after the root.
    cri, plain = _collector_and_local_logs(tmp_path)
    report = triage_paths([str(plain), str(cri)], local_zone="-05:00")
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert (root.extra["time"], root.extra["time_zone"]) == ("2026-12-03T10:00:03.000000000Z", "Z")
    (later,) = [f for f in report.findings if f.code == "PP803"]
    assert later.message.startswith("PP1 failed 2.0 s after the root with ")


@pytest.mark.parametrize(
    ("given", "label", "offset_s"),
    [
        ("UTC", "UTC", 0),
        ("z", "UTC", 0),
        ("+09:00", "+09:00", 9 * 3600),
        ("+0930", "+09:30", 9 * 3600 + 1800),
        ("-05", "-05:00", -5 * 3600),
        ("Europe/Paris", "Europe/Paris", 3600),  # CET in December
    ],
)
def test_local_zone_values(given, label, offset_s):
    from datetime import UTC, datetime

    from ppaux.triage import local_zone

    zone = local_zone(given)
    assert zone.label == label
    wall = datetime(2026, 12, 3, 14, 56, 7)
    assert zone.instant(wall) == wall.replace(tzinfo=UTC).timestamp() - offset_s


@pytest.mark.parametrize(
    "given", ["Mars/Olympus", "+24:00", "+09:60", "/etc/localtime", "../x", ""]
)
def test_a_bad_local_zone_is_one_line_exit_2(given):
    result = _invoke(str(LOGS / "sglang-aux-list.log"), "--local-zone", given)
    assert result.exit_code == 2
    assert result.output.startswith(f"ppaux: error: --local-zone {given}: ")
    assert len(result.output.splitlines()) == 1
