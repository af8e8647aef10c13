"""A prefix a host fan-out, a launcher, a forwarder or a log store puts before each line
(``node1: ``, ``[default0]:``, ``[1,0]<stderr>:``, fluent-bit's ``[0] tag: [time, {...}]``,
logfmt's ``msg="..."``, a store's ``host=... source=...`` columns) is peeled off: the root's
rank, exception and kind are those of the same log without it.

Expected values are written here, never computed with triage's code.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

SITE = "/usr/local/lib/python3.11/site-packages/sglang/srt"
NON_TENSOR = "received a non-tensor auxiliary PP output"
OOM = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB"
GLOO = "Connection closed by peer [127.0.0.1]:13718. This is typically caused by a remote crash"
#: (exception type, message, the kind triage must give it)
FAILURES = [
    ("RuntimeError", NON_TENSOR, "auxiliary-output"),
    ("torch.OutOfMemoryError", OOM, "memory"),
]


def _log(rank: int, exception: str, message: str, stages: int = 4) -> list[str]:
    """A PP run: decode lines, ``rank``'s traceback, the parent's SIGQUIT, and another stage
    dying of the closed connection."""
    other = (rank + 1) % stages
    lines = [
        f"[2026-12-03 14:56:0{t} PP{pp}] Decode batch, #running-req: 3, #token: 96, "
        "token usage: 0.00, gen throughput (token/s): 41.52, #queue-req: 0"
        for t in range(3)
        for pp in range(stages)
    ]
    lines += [
        f"[2026-12-03 14:56:07 PP{rank}] Scheduler hit an exception: Traceback (most recent "
        "call last):",
        f'  File "{SITE}/managers/scheduler.py", line 2950, in run_scheduler_process',
        "    scheduler.event_loop_pp()",
        f'  File "{SITE}/managers/scheduler_pp_mixin.py", line 991, in _pp_prep_batch_result',
        "    auxiliary_output = pop_auxiliary_output_from_pp_tensors(",
        f'  File "{SITE}/sampling/sampling_observer_pp.py", line 77, in '
        "pop_auxiliary_output_from_pp_tensors",
        '    raise RuntimeError("received a non-tensor auxiliary PP output")',
        f"{exception}: {message}",
        "",
        "[2026-12-03 14:56:07] Received sigquit from a child process. It usually means the "
        "child failed.",
        f"[2026-12-03 14:56:12 PP{other}] Scheduler hit an exception: Traceback (most recent "
        "call last):",
        f'  File "{SITE}/managers/scheduler.py", line 2950, in run_scheduler_process',
        "    scheduler.event_loop_pp()",
        f'  File "{SITE}/distributed/parallel_state.py", line 1684, in recv_object',
        "    work.wait()",
        f"RuntimeError: [../gloo/transport/tcp/pair.cc:553] {GLOO}",
        "",
        "[2026-12-03 14:56:12] Received sigquit from a child process. It usually means the "
        "child failed.",
    ]
    return lines


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _csv(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _at(i: int) -> str:
    return f"2026-12-03T14:56:{i % 60:02d}.000021123Z"


def _docker(i: int, line: str) -> str:
    """``line`` as Docker's json-file driver writes it."""
    return json.dumps({"log": line + "\n", "stream": "stderr", "time": _at(i)})


#: Each prefix as the tool writes it, given the line's index and text.
PREFIXES: dict[str, Callable[[int, str], str]] = {
    "pdsh": lambda i, line: f"node1: {line}",
    "clush": lambda i, line: f"gpu-node-07.cluster: {line}",
    "fluent-bit": lambda i, line: (
        f"[0] kube.var.log.containers.sglang-0_llm_sglang-abc.log: "
        f"[{1796309761 + i}.123, {json.dumps({'log': line, 'stream': 'stderr'})}]"
    ),
    "fluent-bit-v2": lambda i, line: (
        f"[0] kube.var.log.containers.x.log: "
        f"[[{1796309761 + i}.000001907, {{}}], {json.dumps({'log': line, 'stream': 'stderr'})}]"
    ),
    "fluent-bit-printed": lambda i, line: (
        f'[0] tail.0: [{1796309761 + i}.000001907, {{"log"=>"{line}", "stream"=>"stderr"}}]'
    ),
    "fluent-bit-printed-escaped": lambda i, line: (
        f"[0] tail.0: [{1796309761 + i}.000001907, "
        f'{{"log"=>{json.dumps(line)}, "stream"=>"stderr"}}]'
    ),
    "fluent-bit-v2-printed": lambda i, line: (
        f"[0] tail.0: [[{1796309761 + i}.000001907, {{}}], "
        f'{{"log"=>"{line}", "stream"=>"stderr", "time"=>"2026-12-03T14:56:00Z"}}]'
    ),
    "docker-in-cloudwatch": lambda i, line: json.dumps(
        {"timestamp": 1796309761000 + i, "message": _docker(i, line)}
    ),
    "docker-in-docker": lambda i, line: json.dumps(
        {"log": _docker(i, line) + "\n", "stream": "stdout", "time": _at(i)}
    ),
    "docker-in-loki": lambda i, line: f'{_at(i)} {{pod="sglang-0"}} {_docker(i, line)}',
    "k9s": lambda i, line: f"sglang-pp-0 {line}",
    "stern": lambda i, line: f"sglang-7d9f8-x2k4p sglang {line}",
    "torchrun": lambda i, line: f"[default0]:{line}",
    "stern-torchrun": lambda i, line: f"[default3]: {line}",
    "torchx-torchrun": lambda i, line: f"trainer-ft3/0 [default1]:{line}",
    "mpirun": lambda i, line: f"[1,0]<stderr>:{line}",
    "logfmt": lambda i, line: (
        f"ts=2026-12-03T14:56:{i % 60:02d}.123Z level=error caller=app.go:12 msg={_quoted(line)}"
    ),
    "splunk": lambda i, line: (
        f"2026-12-03T14:56:{i % 60:02d}.000+00:00 host=node1 source=/var/log/sglang.log "
        f"sourcetype=sglang {line}"
    ),
    "python-logging": lambda i, line: f"2026-12-03 14:56:{i % 60:02d},123 - root - ERROR - {line}",
    "datadog-json": lambda i, line: json.dumps(
        {"timestamp": f"2026-12-03T14:56:{i % 60:02d}.000Z", "host": "node1", "message": line}
    ),
    "ecs-json": lambda i, line: json.dumps(
        {"log": {"original": line}, "@timestamp": f"2026-12-03T14:56:{i % 60:02d}.000Z"}
    ),
    "datadog-csv": lambda i, line: f"2026-12-03T14:56:{i % 60:02d}.000Z,node1,sglang,{_csv(line)}",
    "supervisord": lambda i, line: f"2026-12-03 14:56:{i % 60:02d},{i:03d} INFO {line}",
    "supervisor-stdout": lambda i, line: f"sglang stderr | {line}",
    "supervisor-channel": lambda i, line: f"sglang:stderr {line}",
}


def _roots(text: str) -> list[tuple[str | None, str | None, str | None]]:
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    return [
        (f.key, f.extra.get("exception"), f.extra.get("kind"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def _prefixed(lines: list[str], prefix: Callable[[int, str], str]) -> str:
    return "".join(prefix(i, line) + "\n" for i, line in enumerate(lines))


def test_the_log_without_a_prefix_has_its_root():
    assert _roots("\n".join(_log(0, "RuntimeError", NON_TENSOR)) + "\n") == [
        ("PP0", "RuntimeError", "auxiliary-output")
    ]


@pytest.mark.parametrize("name", sorted(PREFIXES))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rank=st.integers(0, 3), failure=st.sampled_from(FAILURES))
def test_a_prefix_on_every_line_keeps_the_root_s_rank_exception_and_kind(name, rank, failure):
    exception, message, kind = failure
    text = _prefixed(_log(rank, exception, message), PREFIXES[name])
    assert _roots(text) == [(f"PP{rank}", exception, kind)], name


def test_a_host_prefix_is_never_read_as_the_exception():
    lines = [
        "node1: Traceback (most recent call last):",
        f'node1:   File "{SITE}/managers/scheduler.py", line 2950, in run_scheduler_process',
        "node1:     scheduler.event_loop_pp()",
        "node1: RuntimeError: boom",
    ]
    # the host names the process (as a pod does), never the exception
    assert _roots("\n".join(lines) + "\n") == [("node1", "RuntimeError", "other")]


def test_torchrun_s_local_rank_names_a_traceback_without_sglang_s_prefix():
    lines = [
        "[default1]:Traceback (most recent call last):",
        f'[default1]:  File "{SITE}/managers/scheduler.py", line 2950, in run_scheduler_process',
        "[default1]:    scheduler.event_loop_pp()",
        f"[default1]:torch.OutOfMemoryError: {OOM}",
    ]
    assert _roots("\n".join(lines) + "\n") == [("local rank 1", "torch.OutOfMemoryError", "memory")]


def test_a_replica_s_prefix_before_torch_s_rank_prefix_is_peeled():
    # TorchX (NeMo-Run) names the role's replica before torchrun's local rank and torch's
    # '[rankN]:': the rank, the exception and its kind are those of the same lines without it.
    lines = [
        f'[rank1]:   File "{SITE}/distributed/parallel_state.py", line 1, in init',
        "[rank1]:     work = group.broadcast([tensor], opts)",
        "[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator and"
        " retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but"
        " store->get('0') got error: wait timeout after 600000ms",
    ]
    for prefix in ("B-nemo-ft3/0 [default1]:", "trainer/12 "):
        text = "".join(f"{prefix}{line}\n" for line in lines)
        report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
        (root,) = [f for f in report.findings if f.code == "PP809"]
        assert root.extra["no_root"] == "network-or-other-node", prefix
        assert "rank 1" in root.message, prefix


def test_a_cri_paste_that_starts_mid_traceback_names_no_output_stream_as_its_rank():
    # The paste starts after the header: no sglang prefix is left to name the rank, and
    # 'stderr' (where the line was written) must not stand in for one.
    lines = _log(2, "torch.OutOfMemoryError", OOM)
    start = next(n for n, line in enumerate(lines) if "Scheduler hit" in line) + 1
    end = next(n for n, line in enumerate(lines) if line.startswith("torch.OutOfMemory")) + 1
    text = "".join(
        f"2026-12-03T14:56:07.{n:09d}Z stderr F {line}\n" for n, line in enumerate(lines[start:end])
    )
    roots = _roots(text)
    assert roots == [(None, "torch.OutOfMemoryError", "memory")]
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    assert "stderr" not in " ".join(f.message for f in report.findings)


#: The container runtimes' envelopes, beside the prefixes above.
ENVELOPES: dict[str, Callable[[int, str], str]] = {
    **PREFIXES,
    "cri": lambda i, line: f"2026-12-03T14:56:{i % 60:02d}.{i:09d}Z stderr F {line}",
    "docker-json": lambda i, line: json.dumps(
        {"log": line + "\n", "stream": "stderr", "time": f"2026-12-03T14:56:{i % 60:02d}.0Z"}
    ),
    "kubectl-prefix": lambda i, line: f"[pod/sglang-0/sglang] {line}",
}


@pytest.mark.parametrize("name", sorted(ENVELOPES))
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rank=st.integers(0, 3),
    indent=st.one_of(st.integers(1, 8).map(lambda n: " " * n), st.just("\t")),
)
def test_a_paste_s_uniform_indentation_changes_no_envelope_s_root(name, rank, indent):
    # A Markdown code block (or an e-mail) indents every line of the paste alike.
    text = _prefixed(_log(rank, "torch.OutOfMemoryError", OOM), ENVELOPES[name])
    indented = "".join(indent + line + "\n" for line in text.split("\n")[:-1])
    assert _roots(indented) == [(f"PP{rank}", "torch.OutOfMemoryError", "memory")], name


#: Table downloads: the header, and each row's fields before and after the message.
TABLES: dict[str, tuple[list[str], Callable[[int], list[str]], Callable[[int], list[str]]]] = {
    "grafana-3": (["Time", "pod", "Line"], lambda i: [_stamp(i, " "), "sglang-1"], lambda i: []),
    "datadog": (
        ["date", "host", "service", "message"],
        lambda i: [_stamp(i, "T") + "Z", "node1", "sglang"],
        lambda i: [],
    ),
    "splunk": (
        ["_time", "host", "source", "sourcetype", "_raw"],
        lambda i: [_stamp(i, "T") + "Z", "node1", "/var/log/sglang.log", "sglang"],
        lambda i: [],
    ),
    "message-first": (["message", "time", "host"], lambda i: [], lambda i: [_stamp(i, " "), "n1"]),
    "no-message-name": (["Time", "pod", "text"], lambda i: [_stamp(i, " "), "p-0"], lambda i: []),
}


def _stamp(i: int, sep: str) -> str:
    return f"2026-12-03{sep}14:{56 + i // 60:02d}:{i % 60:02d}.000"


@pytest.mark.parametrize("name", sorted(TABLES))
@pytest.mark.parametrize("delimiter", [",", "\t", ";"])
@pytest.mark.parametrize("quoting", [csv.QUOTE_ALL, csv.QUOTE_MINIMAL])
@pytest.mark.parametrize("newest_first", [False, True])
def test_a_table_download_s_message_column_is_read_whatever_its_other_columns(
    name, delimiter, quoting, newest_first
):
    header, before, after = TABLES[name]
    lines = _log(2, "torch.OutOfMemoryError", OOM)
    rows = [[*before(i), line, *after(i)] for i, line in enumerate(lines)]
    if newest_first:
        rows.reverse()
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, quoting=quoting, lineterminator="\n")
    writer.writerows([header, *rows])
    report = triage_paths(["run.csv"], {"run.csv": io.BytesIO(out.getvalue().encode())})
    found = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    assert [(f.key, f.extra.get("exception"), f.extra.get("kind")) for f in found] == [
        ("PP2", "torch.OutOfMemoryError", "memory")
    ], (name, delimiter)
    # the root's line is the file's: the header is line 1, the traceback's header row below it
    at = lines.index(next(line for line in lines if "PP2] Scheduler hit" in line))
    expected = len(lines) - at + 1 if newest_first else at + 2
    assert report.data["incidents"][0]["root"]["line"] == expected, (name, delimiter)


#: Prefixes of tools ppaux knows nothing of, as each writes them (line index, line).
UNKNOWN_PREFIXES: dict[str, Callable[[int, str], str]] = {
    "clush-range": lambda i, line: f"node[1-2]: {line}",
    "mpirun-ctime": lambda i, line: f"Thu Dec  3 14:56:{i % 60:02d} 2026[1,2]<stderr>:{line}",
    "gh-run-view": lambda i, line: (
        f"build\tRun sglang\t2026-12-03T14:56:{i % 60:02d}.0000010Z {line}"
    ),
    "parallel-tag": lambda i, line: f"node1\t{line}",
    "moreutils-ts": lambda i, line: f"Dec 03 14:56:{i % 60:02d} {line}",
    "heroku": lambda i, line: f"2026-12-03T14:56:{i % 60:02d}.{i:06d}+00:00 app[web.1]: {line}",
    "ray-job": lambda i, line: f"(raylet, ip=10.0.0.2) {line}",
    # ctime's day padded to two places turns 'Wed Dec  9' into 'Thu Dec 10' right after the
    # header; the pid in brackets grows a digit: the prefix changes its length.
    "ctime-midnight": lambda i, line: (
        f"{'Wed' if i < 13 else 'Thu'} Dec {9 if i < 13 else 10:2d} 2{i % 10}:59:59 2026 "
        f"node7 sglang[{90 + i}]: {line}"
    ),
}


@pytest.mark.parametrize("name", sorted(UNKNOWN_PREFIXES))
def test_an_unknown_prefix_learned_from_the_header_is_taken_off_the_frames(name):
    text = _prefixed(_log(2, "torch.OutOfMemoryError", OOM), UNKNOWN_PREFIXES[name])
    assert _roots(text) == [("PP2", "torch.OutOfMemoryError", "memory")], name


def test_an_unknown_prefix_is_learned_from_a_header_without_sglang_s_prefix():
    lines = [
        "job#3 ~ Traceback (most recent call last):",
        f'worker-3 |   File "{SITE}/managers/scheduler.py", line 2950, in run_scheduler_process',
        "job#3 ~     scheduler.event_loop_pp()",
        f"job#3 ~ torch.OutOfMemoryError: {OOM}",
    ]
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(("\n".join(lines) + "\n").encode())})
    exceptions = [f.extra.get("exception") for f in report.findings if f.code == "PP802"]
    assert exceptions == ["torch.OutOfMemoryError"]


def test_an_unknown_prefix_of_another_shape_is_left_on_the_line():
    lines = [
        "node[1-2]: [2026-12-03 14:56:07 PP1] Scheduler hit an exception: Traceback (most "
        "recent call last):",
        f'node[1-2]:   File "{SITE}/managers/scheduler.py", line 2950, in run_scheduler_process',
        "node[1-2]:     scheduler.event_loop_pp()",
        "gpu(1-2): torch.OutOfMemoryError: " + OOM,
    ]
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(("\n".join(lines) + "\n").encode())})
    exceptions = [f.extra.get("exception") for f in report.findings if f.code == "PP802"]
    assert exceptions == [None]


#: Any printable text that is no traceback's line, and that does not make every line of the
#: file read as Python source (a decorator's ``@name``, ``def ``, ``class ``, ``import ``,
#: quoted or not).
_PREFIX_TEXT = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=60),
    st.lists(
        st.sampled_from(
            [
                "node1",
                ": ",
                "[",
                "]",
                " ",
                "\t",
                " | ",
                "(pid=3)",
                "2026-12-03T14:56:00Z",
                "14:56:00",
                "<stderr>",
                "1,2",
                "{",
                "}",
                '"',
                "=>",
                "app",
                "PP1",
            ]
        ),
        min_size=1,
        max_size=8,
    )
    .map("".join)
    .filter(lambda p: len(p) <= 60),
).filter(
    lambda p: (
        p.strip() != ""
        and "Traceback" not in p
        and not p.lstrip(" \t>").startswith(("@", "def ", "class ", "import ", "from "))
    )
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefix=_PREFIX_TEXT, rank=st.integers(0, 3), failure=st.sampled_from(FAILURES))
def test_any_text_before_every_line_keeps_the_root_s_rank_exception_and_kind(prefix, rank, failure):
    exception, message, kind = failure
    text = _prefixed(_log(rank, exception, message), lambda i, line: prefix + line)
    assert _roots(text) == [(f"PP{rank}", exception, kind)]


@pytest.mark.parametrize("name", ["docker-in-cloudwatch", "docker-in-docker", "docker-in-loki"])
def test_a_json_file_line_inside_another_record_gives_the_exception_s_own_message(name):
    text = _prefixed(_log(2, "torch.OutOfMemoryError", OOM), PREFIXES[name])
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    roots = [f.extra.get("message") for f in report.findings if f.code == "PP802"]
    assert roots == [OOM], name


def test_programs_relayed_by_supervisord_are_streams_of_their_own():
    """Two programs' tracebacks interleaved, neither header under sglang's prefix: each line is
    read behind its program's name and channel, whichever program wrote the last header."""
    lines = []
    for name in ("pp0", "pp1"):
        lines.append(f"{name} stderr | Traceback (most recent call last):")
    for n in range(2):
        for name in ("pp0", "pp1"):
            lines.append(
                f'{name} stderr |   File "{SITE}/managers/scheduler.py", line {10 + n}, in f{n}'
            )
    lines.append(f"pp0 stderr | torch.OutOfMemoryError: {OOM}")
    lines.append(f"pp1 stderr | RuntimeError: [../gloo/transport/tcp/pair.cc:553] {GLOO}")
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(("\n".join(lines) + "\n").encode())})
    roots = [(f.key, f.extra.get("exception")) for f in report.findings if f.code == "PP802"]
    assert roots == [("pp0", "torch.OutOfMemoryError")]


def test_supervisord_s_level_is_no_host_and_its_program_s_exception_stays_whole():
    lines = [
        "2026-12-01 10:00:00,120 INFO spawned: 'sglang' with pid 4242",
        "2026-12-01 10:00:00,123 INFO Traceback (most recent call last):",
        f'2026-12-01 10:00:00,123 INFO   File "{SITE}/managers/scheduler.py", line 9, in f',
        "2026-12-01 10:00:00,123 INFO RuntimeError: stage 1 could not receive",
        "2026-12-01 10:00:01,500 INFO exited: sglang (exit status 1; not expected)",
    ]
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(("\n".join(lines) + "\n").encode())})
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["exception"] == "RuntimeError"
    assert root.extra["message"].startswith("stage 1 could not receive")


@settings(max_examples=20, deadline=None)
@given(
    opening=st.sampled_from(["`", "``", "```"]),
    closing=st.sampled_from(["", "`", "``"]),
    failure=st.sampled_from(FAILURES),
)
def test_an_exception_line_pasted_as_inline_code_is_still_its_failure(opening, closing, failure):
    # A report quotes the error in backticks, the closing one often on the next line.
    exception, message, kind = failure
    text = f"The error when it crashes\n{opening}{exception}: {message}{closing}\n`\n"
    assert _roots(text) == [(None, exception, kind)]


@settings(max_examples=20, deadline=None)
@given(
    opening=st.sampled_from(["`", "``"]),
    prose=st.sampled_from([" or one of its eight siblings.", ", which stage 1 raises", " is"]),
    failure=st.sampled_from(FAILURES),
)
def test_a_message_quoted_inside_a_sentence_is_no_failure(opening, prose, failure):
    # A README's '`RuntimeError: X` or one of ...': the code span closes and words follow it on
    # the same line, so the line quotes a message; the same span pasted alone is a record.
    exception, message, kind = failure
    quoted = f"{opening}{exception}: {message}{opening}"
    assert _roots(f"The error when it crashes is\n{quoted}{prose}\n") == []
    assert _roots(f"The error when it crashes\n{quoted}\n") == [(None, exception, kind)]


def test_a_message_with_its_own_quoted_words_pasted_behind_a_backtick_is_still_its_failure():
    # Backticks inside the message (sglang quotes names) are no closing of the paste's span.
    for line in (
        "`ValueError: auxiliary output `scores` is not a tensor`",
        "`ValueError: auxiliary output `scores` is not a tensor",
    ):
        report = triage_paths(["run.log"], {"run.log": io.BytesIO(f"{line}\n".encode())})
        (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
        assert root.extra["exception"] == "ValueError"
        assert root.extra["message"] == "auxiliary output `scores` is not a tensor"


def test_a_line_of_backticks_alone_is_no_failure():
    assert _roots("```\n`\nDecode batch done\n```\n") == []


@pytest.mark.parametrize(
    "prefix", ["[TP0] ", "[PP1 ATTN_CP0 TP0] ", "2026-06-23T15:16:14Z [PP1 ATTN_CP0 TP0] "]
)
def test_sglang_s_rank_prefix_without_its_time_names_the_ranks(prefix):
    # A paste that kept the ranks of sglang's prefix and lost (or never had) its time.
    ranks = prefix.rstrip().rsplit("[", 1)[1][:-1]
    lines = [
        f"{prefix}Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{SITE}/managers/scheduler.py", line 2950, in run_scheduler_process',
        "    scheduler.event_loop_pp()",
        f"torch.OutOfMemoryError: {OOM}",
    ]
    assert _roots("\n".join(lines) + "\n") == [(ranks, "torch.OutOfMemoryError", "memory")]
