"""``ppaux triage`` on logs as Kubernetes' and Docker's clients save them (a leading RFC 3339
time, kubectl's ``[pod/NAME/CONTAINER]`` prefix), on empty logs, and what its next steps say
and how the markdown and html reports write them.

Expected values are read from the fixture logs with plain string operations, never with
triage's code.
"""

from __future__ import annotations

import gzip
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
NON_TENSOR = "received a non-tensor auxiliary PP output"
SITE = "/usr/local/lib/python3.11/site-packages/sglang/srt"


def _invoke(*args: str, input: bytes | None = None):
    return CliRunner().invoke(app, ["triage", *args], input=input)


def _root_line(path: Path) -> tuple[int, str]:
    """(number, text) of the line where the first stage's traceback starts."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next((i, t) for i, t in enumerate(lines, 1) if "PP0] Scheduler hit an" in t)


# ----------------------------------------------------------------------------- the clients' forms


@pytest.mark.parametrize(
    ("name", "fmt", "launcher", "zone"),
    [
        ("timestamps-aux-list.log", "timestamps", "none", "Z"),
        ("compose-timestamps-aux-list.log", "timestamps", "compose", "+01:00"),
        ("kubectl-prefix-aux-list.log", "timestamps", "kubectl", "Z"),
        ("kubectl-prefix-plain-aux-list.log", "plain", "kubectl", None),
    ],
)
def test_each_client_s_form_is_peeled_and_its_time_is_the_line_s(name, fmt, launcher, zone):
    log = LOGS / name
    number, text = _root_line(log)
    result = _invoke(str(log), "--format", "json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    (read,) = report["logs"]
    assert (read["format"], read["launcher"]) == (fmt, launcher)
    (incident,) = report["incidents"]
    assert incident["root"] == {"ranks": "PP0", "log": str(log), "line": number}
    assert incident["time_zone"] == zone
    # The time shown is the collector's, as the line writes it (after kubectl's or compose's
    # prefix), else sglang's own.
    stamp = re.search(r"\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d)", text)
    if zone is None:
        assert stamp is None
        assert incident["time"] == text.split("[", 2)[2].split(" PP0]")[0]
    else:
        assert stamp is not None
        assert incident["time"] == stamp.group(0)
    (root,) = [f for f in report["findings"] if f["code"] == "PP801"]
    assert root["sglang_error"] == NON_TENSOR


def test_kubectl_logs_timestamps_no_longer_passes_a_gate():
    # What `kubectl logs --timestamps POD > log` saves: before, 0 tracebacks and exit 0.
    result = _invoke(str(LOGS / "timestamps-aux-list.log"), "--fail-on", "error")
    assert result.exit_code == 1
    assert "PP801 error" in result.output


def _pod_lines(pod: str, stamp: str, lines: list[str]) -> list[str]:
    return [f"[pod/{pod}/sglang] {stamp} {line}" for line in lines]


def _traceback(ranks: str, frames: list[tuple[str, int, str]], error: str) -> list[str]:
    lines = [
        f"[2026-12-03 10:00:00 {ranks}] Scheduler hit an exception: Traceback (most recent "
        "call last):"
    ]
    for file, line, function in frames:
        lines += [f'  File "{file}", line {line}, in {function}', "    call()"]
    return [*lines, error, ""]


_POP = [(f"{SITE}/sampling/sampling_observer_pp.py", 77, "pop_auxiliary_output_from_pp_tensors")]
_RECV = [(f"{SITE}/distributed/parallel_state.py", 1862, "recv_tensor_dict")]


def test_two_pods_lines_mixed_line_by_line_keep_their_tracebacks_apart(tmp_path):
    # `kubectl logs -f -l app=sglang --prefix --timestamps`: pod 1's lines, one of them a
    # traceback line of its own, come between the lines of pod 0's traceback.
    root = _traceback("PP0", _POP, f"RuntimeError: {NON_TENSOR}")
    later = _traceback("PP1", _RECV, "RuntimeError: Connection closed by peer [10.0.0.1]:29500")
    mixed: list[str] = []
    for index, line in enumerate(root):
        mixed += _pod_lines("sglang-0", f"2026-12-03T10:00:00.{index:09d}Z", [line])
        if index < len(later):
            mixed += _pod_lines("sglang-1", f"2026-12-03T10:00:01.{index:09d}Z", [later[index]])
    log = tmp_path / "pods.log"
    log.write_text("\n".join(mixed) + "\n", encoding="utf-8")
    report = triage_paths([str(log)])
    (first,) = [f for f in report.findings if f.code == "PP801"]
    assert first.key == "PP0"
    assert first.location.to_json() == {
        "file": str(log),
        "line": 1,
        "function": "pop_auxiliary_output_from_pp_tensors",
    }
    assert first.extra["time"] == "2026-12-03T10:00:00.000000000Z"
    (collateral,) = [f for f in report.findings if f.code == "PP803"]
    assert collateral.key == "PP1"
    assert collateral.location.function == "recv_tensor_dict"
    assert collateral.message.startswith("PP1 failed 1.0 s after the root with RuntimeError: ")
    assert report.data["logs"][0]["failures"] == 2


def test_the_same_ranks_under_two_pods_are_named_with_their_pod(tmp_path):
    # Two replicas read together: each pod's PP0 fails with the same error.
    lines = _pod_lines(
        "sglang-a-0",
        "2026-12-03T10:00:00.000000001Z",
        _traceback("PP0", _POP, f"RuntimeError: {NON_TENSOR}"),
    ) + _pod_lines(
        "sglang-b-0",
        "2026-12-03T10:00:00.500000000Z",
        _traceback("PP0", _POP, f"RuntimeError: {NON_TENSOR}"),
    )
    log = tmp_path / "replicas.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP801"]
    assert root.extra["ranks"] == ["pod/sglang-a-0/sglang PP0", "pod/sglang-b-0/sglang PP0"]
    # One pod's ranks keep their own name.
    single = tmp_path / "single.log"
    single.write_text("\n".join(lines[: len(lines) // 2]) + "\n", encoding="utf-8")
    (alone,) = [f for f in triage_paths([str(single)]).findings if f.code == "PP801"]
    assert alone.key == "PP0"


def test_a_record_without_ranks_is_named_by_its_pod(tmp_path):
    # The last stage's pod logs a bare traceback (no sglang prefix) of the closed connection.
    bare = [
        "Traceback (most recent call last):",
        f'  File "{SITE}/distributed/parallel_state.py", line 1862, in recv_tensor_dict',
        "    call()",
        "RuntimeError: Connection closed by peer [10.0.0.1]:29500",
    ]
    lines = _pod_lines(
        "sglang-0",
        "2026-12-03T10:00:00.000000001Z",
        _traceback("PP0", _POP, f"RuntimeError: {NON_TENSOR}"),
    ) + _pod_lines("sglang-1", "2026-12-03T10:00:02.000000000Z", bare)
    log = tmp_path / "bare.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (later,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP803"]
    assert later.key == "pod/sglang-1/sglang"
    assert later.message.startswith("pod/sglang-1/sglang failed 2.0 s after the root")


# ----------------------------------------------------------------------------- empty logs


def test_an_empty_log_given_by_name_is_one_line_and_exit_2(tmp_path):
    empty = tmp_path / "0.log"
    empty.write_bytes(b"")
    result = _invoke(str(empty))
    assert result.exit_code == 2
    assert f"ppaux: error: {empty}: empty file\n" in result.output
    assert "Traceback" not in result.output
    # Beside a log that holds a failure, it is still refused; the other is triaged.
    both = _invoke(str(empty), str(LOGS / "sglang-aux-list.log"))
    assert both.exit_code == 2
    assert "PP801" in both.output and f"{empty}: empty file" in both.output


def test_empty_stdin_and_an_empty_gzip_are_refused(tmp_path):
    result = _invoke("-", input=b"")
    assert result.exit_code == 2
    assert "ppaux: error: <stdin>: empty file\n" in result.output
    packed = tmp_path / "server.log.gz"
    packed.write_bytes(gzip.compress(b""))
    result = _invoke(str(packed))
    assert result.exit_code == 2
    assert f"ppaux: error: {packed}: empty log (the file inflates to nothing)\n" in result.output


def test_a_directory_of_only_empty_logs_is_refused_one_with_some_is_triaged(tmp_path):
    only = tmp_path / "only"
    only.mkdir()
    (only / "0.log").write_bytes(b"")
    (only / "1.log").write_bytes(b"")
    result = _invoke(str(only))
    assert result.exit_code == 2
    assert f"ppaux: error: {only}: every log file it holds is empty\n" in result.output
    some = tmp_path / "some"
    some.mkdir()
    (some / "0.log").write_bytes(b"")
    (some / "1.log").write_bytes((LOGS / "sglang-healthy.log").read_bytes())
    result = _invoke(str(some), "--format", "json")
    assert result.exit_code == 0, result.output
    lines = {Path(r["log"]).name: r["lines"] for r in json.loads(result.output)["logs"]}
    healthy = len((LOGS / "sglang-healthy.log").read_text().splitlines())
    assert lines == {"0.log": 0, "1.log": healthy}


# ----------------------------------------------------------------------------- next steps


def _steps(report) -> list[str]:
    return list(report.data["next_steps"])


def test_an_observer_that_raised_is_checked_with_check_observer_on_its_file():
    log = LOGS / "sglang-observer-raises.log"
    text = log.read_text(encoding="utf-8")
    file = re.search(r'File "(/srv/app/[^"]+)", line \d+, in from_pp_tensors', text).group(1)
    report = triage_paths([str(log)])
    assert [f.code for f in report.findings if f.code in ("PP801", "PP802")] == ["PP802"]
    steps = _steps(report)
    assert f"ppaux check-observer -- {file}:Observer" in steps
    # PP805's fix points at check-observer for an observer's method, which the steps hold;
    # it promises a capture only for an auxiliary-output root.
    (culprit,) = [f for f in report.findings if f.code == "PP805"]
    assert "'ppaux check-observer FILE:Class'" in culprit.hint
    assert "when the root is an auxiliary-output error" in culprit.hint
    assert not any(s.startswith("export PPAUX_CAPTURE") for s in steps)


def test_the_last_stage_s_add_refusing_the_observer_s_output_suggests_check_observer(tmp_path):
    frames = [
        (f"{SITE}/managers/scheduler_pp_mixin.py", 870, "_pp_prepare_tensor_dict"),
        (f"{SITE}/sampling/sampling_observer_pp.py", 50, "add_auxiliary_output_to_pp_tensors"),
    ]
    log = tmp_path / "add.log"
    log.write_text(
        "\n".join(
            _traceback("PP1", frames, "RuntimeError: auxiliary PP output 'scores' is not a tensor")
        )
        + "\n",
        encoding="utf-8",
    )
    result = _invoke(str(log), "--format", "text")
    assert result.exit_code == 1
    assert "\n  ppaux check-observer -- MODULE:Observer\n" in result.output
    # The causes are those of add's message (explain's page for it), not rank 0's pop's.
    assert "to_pp_tensors() returns Python values" in " ".join(result.output.split())
    assert "The first stage's pop" not in result.output


@pytest.mark.parametrize("name", ["sglang-aux-list.log", "sglang-aux-list-strict.log"])
def test_no_check_observer_where_the_observer_is_not_the_suspect(name):
    # The pop of a value out-of-tree code wrote, and ppaux's strict capture raising add's
    # message (it names the culprit itself).
    steps = _steps(triage_paths([str(LOGS / name)]))
    assert not any("check-observer" in s for s in steps)


_STEP_LINES = (
    "export PPAUX_CAPTURE_DIR=/var/tmp/ppaux",
    "export PPAUX_CAPTURE_STRICT=1  # on PP1 only: stop where a non-tensor value enters the "
    "output message",
    "ppaux fingerprint --pp-rank 0 --pp-size 2 -o stage-0.json  # on PP0's host",
    "ppaux fingerprint --pp-rank 1 --pp-size 2 -o stage-1.json  # on PP1's host",
    "ppaux check-skew -- stage-0.json stage-1.json  # with every stage's file in one place",
    "ppaux capture list --dir /var/tmp/ppaux",
)


def test_markdown_writes_the_next_steps_as_one_fenced_block_copyable_as_is():
    result = _invoke(str(LOGS / "sglang-aux-list.log"), "--format", "markdown")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    heading = lines.index("next steps:")
    assert lines[heading + 1] == ""
    fence = lines[heading + 2]
    assert fence == "```"
    end = lines.index(fence, heading + 3)
    block = lines[heading + 3 : end]
    for step in _STEP_LINES:
        assert step in block, step
    assert block[0].startswith("# capture the failing message")
    # No step left as a list item (a '# comment' would be a heading inside it), none escaped.
    assert not any(line.startswith("- #") or line.startswith("-   ") for line in lines)
    assert not any("\\_" in line or "\\*" in line for line in block)


class _Pre(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []
        self._in = False

    def handle_starttag(self, tag, attrs):
        if tag == "pre":
            self._in = True
            self.blocks.append("")

    def handle_endtag(self, tag):
        if tag == "pre":
            self._in = False

    def handle_data(self, data):
        if self._in:
            self.blocks[-1] += data


def test_html_writes_the_next_steps_as_a_pre_block_copyable_as_is():
    result = _invoke(str(LOGS / "sglang-aux-list.log"), "--format", "html")
    assert result.exit_code == 1
    page = result.output
    assert "<p>next steps:</p>" in page
    parser = _Pre()
    parser.feed(page)
    (block,) = parser.blocks
    lines = block.splitlines()
    for step in _STEP_LINES:
        assert step in lines, step
    # Escaped as everything else is: the apostrophe of "sglang's" is an entity in the page.
    assert "sglang&#x27;s environment" in page
    assert html.unescape(page).count("export PPAUX_CAPTURE_DIR=/var/tmp/ppaux") == 1
    assert "<li>  export" not in page


def test_only_a_heading_note_and_its_indented_lines_are_a_block():
    from ppaux.report import Report
    from ppaux.report.formats.markdown import render

    report = Report("capture")
    # capture list's form: an entry whose error ends with a colon, and its indented trail.
    report.notes += ["x.pt: RuntimeError: bad:", "    trail: recv dirty", "1 capture(s)"]
    report.notes += ["next steps:", "  ppaux inspect x.pt", "  # a comment"]
    lines = render(report).splitlines()
    assert "- x.pt: RuntimeError: bad:" in lines
    assert "- trail: recv dirty" in lines
    start = lines.index("```")
    assert lines[start - 2 : start + 4] == [
        "next steps:",
        "",
        "```",
        "ppaux inspect x.pt",
        "# a comment",
        "```",
    ]
