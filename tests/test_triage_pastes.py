"""Pastes that are not one log line per line: hard-wrapped at a terminal's width, JSON documents
(an array of records, Loki's query API response), a traceback flattened onto one line, and
journald's messages written as byte arrays. Each is read as the plain log it holds."""

from __future__ import annotations

import bz2
import io
import json

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from triage_pastes import AUX, LOGS, roots, wrapped
from typer.testing import CliRunner

from ppaux.limits import Limits
from ppaux.suggestions import RaiseLimit
from ppaux.triage import triage_paths
from ppaux.triage.documents import is_document, records
from ppaux.triage.flattened import unflatten
from ppaux.triage.sources import LogOpenError
from ppaux.triage.wrapping import Unwrapped, wrap_width
from ppaux_cli.app import app


def test_a_paste_wrapped_at_80_or_120_columns_has_the_plain_log_s_root(tmp_path):
    plain = AUX.read_text(encoding="utf-8")
    expected = roots(triage_paths([str(AUX)]))
    assert expected and expected[0][0] == "PP801"
    for width in (80, 120):
        path = tmp_path / f"wrapped{width}.log"
        path.write_text(wrapped(plain, width), encoding="utf-8")
        assert roots(triage_paths([str(path)])) == expected


MARKED = (
    AUX,
    LOGS / "real" / "sglang-4289-nccl-init.log",
    LOGS / "real" / "sglang-3713-illegal-memory.log",
    LOGS / "real" / "sglang-27944-gloo-every-rank.log",
)


def _verdict(path):
    report = triage_paths([str(path)])
    (log,) = report.data["logs"]
    counts = (log["lines"], log["failures"], log["events"])
    return roots(report), counts, report.data["pp_size"]


def _marked(text: str, mark: str) -> str:
    lines = text.split("\n")[:-1]
    if mark == "cat -n":
        return "".join(f"{n:6}\t{line}\n" for n, line in enumerate(lines, 1))
    return "".join(mark + line + "\n" for line in lines)


def test_a_quoted_or_indented_paste_has_the_verdict_of_the_paste_it_quotes(tmp_path):
    # A reply's or an e-mail's '> ' (or '>> ', '> > ') on every line, the indentation of a
    # Markdown code block or cat -n's numbers, is the paste's envelope: peeled, the verdict is
    # the unmarked paste's, wrapped at a terminal's width or not.
    for log in MARKED:
        plain = log.read_text(encoding="utf-8")
        for width in (None, 80, 120):
            text = plain if width is None else wrapped(plain, width)
            (tmp_path / "as-is.log").write_text(text, encoding="utf-8")
            expected = _verdict(tmp_path / "as-is.log")
            quotes = ("> ", ">> ", "> > ", "> - ")
            marks = ("> ", ">> ", "> > ", "    ", "cat -n") if width else quotes
            for mark in marks:
                path = tmp_path / "marked.log"
                path.write_text(_marked(text, mark), encoding="utf-8")
                assert _verdict(path) == expected, (log.name, width, mark)


def test_the_quoted_nine_messages_and_every_rank_timeouts_keep_their_codes(tmp_path):
    aux = roots(triage_paths([str(AUX)]))
    assert [code for code, *_ in aux] == ["PP801"]
    gloo = LOGS / "real" / "sglang-27944-gloo-every-rank.log"
    assert [code for code, *_ in roots(triage_paths([str(gloo)]))] == ["PP809"]
    for log, code in ((AUX, "PP801"), (gloo, "PP809")):
        path = tmp_path / "quoted.log"
        path.write_text(_marked(log.read_text(encoding="utf-8"), "> "), encoding="utf-8")
        assert [c for c, *_ in roots(triage_paths([str(path)]))] == [code]


_PASTE_LINE = st.builds(
    str.__add__,
    # no line opens as a quote or a list item: every line one would be the paste's own mark
    st.characters(exclude_categories=("Cs", "Cc", "Zs"), exclude_characters=">-*+"),
    st.text(
        alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\r\n"), max_size=29
    ),
)


@settings(max_examples=100, deadline=None)
@given(
    lines=st.lists(_PASTE_LINE, min_size=4, max_size=30),
    mark=st.sampled_from(["> ", ">", ">> ", "> > ", "> - ", ">> * ", "  ", "\t", "    "]),
)
def test_peeling_a_paste_s_mark_gives_its_lines_back_one_for_one(lines, mark):
    from ppaux.triage.pastemarks import Unmarked, paste_mark

    text = "\n".join(lines) + "\n"
    raw = _marked(text, mark).encode("utf-8")
    found = paste_mark(raw)
    assert found is not None
    out = io.BufferedReader(Unmarked(io.BufferedReader(io.BytesIO(raw)), found, 1 << 16)).read()
    assert out == text.encode("utf-8")


def _cut_trimmed(text: str, width: int) -> str:
    return "".join(piece.rstrip(" ") + "\n" for piece in wrapped(text, width).split("\n")[:-1])


def test_a_wrapped_paste_whose_rows_lost_their_trailing_spaces_keeps_its_frames(tmp_path):
    # tmux's capture-pane and screen's hardcopy trim each row: a frame row cut at the space
    # before its function name ends ', in', and the name on the next row is no exception line.
    for log in (AUX, LOGS / "real" / "sglang-4289-nccl-init.log"):
        plain = log.read_text(encoding="utf-8")
        expected = roots(triage_paths([str(log)]))
        cut_frames = 0
        for width in range(60, 201):
            text = _cut_trimmed(plain, width)
            if not any(row.endswith(", in") for row in text.split("\n")):
                continue
            cut_frames += 1
            path = tmp_path / f"trimmed{width}.log"
            path.write_text(text, encoding="utf-8")
            assert roots(triage_paths([str(path)])) == expected, (log.name, width)
        assert cut_frames >= 2, log.name


def test_a_wrapped_paste_keeps_the_file_s_line_numbers(tmp_path):
    header = (
        "[2026-12-03 14:50:12 PP1 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):"
    )
    lines = [
        "[2026-12-03 14:50:01 PP0 TP0] Load weight begin. avail mem=" + "7" * 60,
        "[2026-12-03 14:50:02 PP1 TP0] Load weight begin. avail mem=" + "7" * 60,
        header,
        '  File "/usr/lib/python3/site-packages/sglang/srt/model_executor/model_runner.py", '
        "line 588, in init_torch_distributed",
        "    initialize_model_parallel(",
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    ]
    path = tmp_path / "wrapped.log"
    path.write_text(wrapped("\n".join(lines) + "\n", 80), encoding="utf-8")
    physical = path.read_text(encoding="utf-8").split("\n")
    # The header starts on the file's 5th line: the two lines before it take two lines each.
    assert physical[4].startswith("[2026-12-03 14:50:12 PP1 TP0]")
    report = triage_paths([str(path)])
    root = next(f for f in report.findings if f.code == "PP802")
    assert root.key == "PP1 TP0"
    assert root.extra["exception"] == "RuntimeError"
    assert "RuntimeError: NCCL error: unhandled system error" in root.message
    assert root.extra["kind"] == "communication-init"
    assert root.extra["line"] == 5
    assert report.data["logs"][0]["lines"] == len(physical) - 1


def test_the_joined_line_s_number_maps_to_its_first_piece():
    text = b"a" * 60 + b"\n" + b"bc\n" + b"d\n" + b"e" * 60 + b"\n" + b"f\n" + b"g\n"
    unwrapped = Unwrapped(io.BufferedReader(io.BytesIO(text)), 60, 1 << 16)  # type: ignore[arg-type]
    out = io.BufferedReader(unwrapped).read()
    assert out == b"a" * 60 + b"bc\n" + b"d\n" + b"e" * 60 + b"f\n" + b"g\n"
    # given-out line n -> the file's line: 1 -> 1, 2 -> 3, 3 -> 4, 4 -> 6
    assert [unwrapped.physical(n) for n in (1, 2, 3, 4, 5)] == [1, 3, 4, 6, 7]


def test_logs_with_lines_alike_in_length_are_not_taken_for_wrapped():
    assert wrap_width(AUX.read_bytes()) is None
    assert wrap_width((LOGS / "sglang-healthy.log").read_bytes()) is None
    rows = "".join(
        f'"2026-06-17 06:48:30.123","[2026-06-24 15:38:0{n} PP{n}] Decode"\n' for n in range(9)
    )
    assert wrap_width(rows.encode() * 4) is None


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from(["a", " ", "[", "F", "\n", "é", "\r", '"']), max_size=600
    ),
    width=st.integers(min_value=1, max_value=12),
)
def test_unwrapping_loses_and_invents_no_character(text, width):
    raw = text.encode("utf-8")
    unwrapped = Unwrapped(io.BufferedReader(io.BytesIO(raw)), width, 64)  # type: ignore[arg-type]
    out = io.BufferedReader(unwrapped).read()

    def ends(data: bytes) -> bytes:
        return data.replace(b"\r\n", b"").replace(b"\n", b"")

    assert ends(out) == ends(raw)
    given_out = out.count(b"\n") + (0 if out.endswith(b"\n") or not out else 1)
    # the last given-out line maps to a line of the file, never past it
    assert given_out == 0 or unwrapped.physical(given_out) <= raw.count(b"\n") + 1


def _loki(lines: list[str], labels: dict[str, str]) -> str:
    values = [[str(1764773767000000000 + n), line] for n, line in enumerate(lines)]
    return json.dumps(
        {
            "status": "success",
            "data": {"resultType": "streams", "result": [{"stream": labels, "values": values}]},
        }
    )


def test_loki_s_query_api_response_is_read_as_its_lines_and_names_the_pod(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    expected = roots(triage_paths([str(AUX)]))
    labels = {"namespace": "llm", "pod": "sglang-pp-0", "container": "sglang"}
    for name, text in (
        ("compact.json", _loki(lines, labels)),
        ("pretty.json", json.dumps(json.loads(_loki(lines, labels)), indent=2)),
    ):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        report = triage_paths([str(path)])
        assert roots(report) == expected
        steps = report.data["steps"]
        assert any(s["where"] == "the pod spec" for s in steps)
        assert any((s["argv"] or [""])[0] == "kubectl" for s in steps)
        assert not any("export" in (s["argv"] or []) for s in steps)


def test_a_loki_stream_s_many_labels_are_not_copied_into_every_line(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    lines = lines + ["[2026-12-03 14:56:09 PP0 TP0] Decode batch, #running-req: 1"] * 400
    expected = roots(triage_paths([str(AUX)]))
    labels = {f"label_{n}": "v" * 60 for n in range(600)}
    labels.update(namespace="llm", pod="sglang-pp-0", container="sglang")
    text = _loki(lines, labels).encode("utf-8")
    out = records(io.BytesIO(text), "loki.json").read()
    # every line's record is its line and a bounded part of the labels, not all 600 of them
    assert out.count(b"\n") == len(lines)
    assert len(out) < 2 * len(text)
    assert b"label_" not in out
    path = tmp_path / "loki.json"
    path.write_bytes(text)
    report = triage_paths([str(path)])
    assert roots(report) == expected
    assert any(s["where"] == "the pod spec" for s in report.data["steps"])


@settings(max_examples=50, deadline=None)
@given(
    labels=st.dictionaries(st.text(max_size=20), st.text(max_size=400), max_size=30),
    count=st.integers(min_value=1, max_value=40),
)
def test_a_loki_record_s_size_is_bounded_whatever_its_stream_s_labels(labels, count):
    values = [[str(n), "[2026-12-03 14:56:09 PP0 TP0] x"] for n in range(count)]
    document = {"status": "success", "data": {"result": [{"stream": labels, "values": values}]}}
    out = records(io.BytesIO(json.dumps(document).encode("utf-8")), "loki.json").read()
    got = [json.loads(line) for line in out.splitlines()]
    assert [r["line"] for r in got] == [v[1] for v in values]
    for record in got:
        assert set(record["labels"]) <= {
            "namespace",
            "pod",
            "pod_name",
            "container",
            "container_name",
        }
        assert all(len(value) <= 253 for value in record["labels"].values())
        assert all(labels[key] == value for key, value in record["labels"].items())


def test_a_json_array_of_records_on_one_line_is_read_record_by_record(tmp_path):
    lines = [
        "[2026-12-03 14:56:06 PP0 TP0] Decode batch, #running-req: 12",
        "[2026-12-03 14:56:07 PP1 TP0] RuntimeError: CUDA error: an illegal memory access was "
        "encountered",
        "[2026-12-03 14:56:08] Received sigquit from a child process. It usually means the child "
        "failed.",
    ]
    entries = [{"textPayload": t, "timestamp": "2026-12-03T14:56:07.123Z"} for t in lines]
    path = tmp_path / "entries.json"
    path.write_text(json.dumps(entries, separators=(",", ":")), encoding="utf-8")
    report = triage_paths([str(path)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert (root.key, root.extra["exception"]) == ("PP1 TP0", "RuntimeError")
    assert "RuntimeError: CUDA error: an illegal memory access was encountered" in root.message


def test_a_document_too_large_to_read_whole_is_one_problem(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps([{"textPayload": "x" * 100}]), encoding="utf-8")
    report = triage_paths([str(path)], limits=Limits(max_log_document=64))
    [problem] = report.problems
    assert problem.message == (
        "one JSON document larger than 64 bytes; give it one record per line (jq -c '.[]') "
        "(limit max_log_document=64 reached)"
    )
    assert problem.suggestions == (RaiseLimit("max_log_document", 64),)
    # The default reads it (and finds no sglang line in it).
    assert [p.message for p in triage_paths([str(path)]).problems] == [
        "not an sglang log: no line has the shape of sglang's, of a launcher's or of a traceback"
    ]


def test_a_document_without_a_log_line_is_one_problem_that_says_so(tmp_path):
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps([{"a": 1}, {"b": [2]}]), encoding="utf-8")
    report = triage_paths([str(path)])
    assert not report.findings
    assert [p.message for p in report.problems] == [
        "a JSON document none of whose records holds a log line (a 'line', 'log', 'message', "
        "'textPayload' or 'MESSAGE' member, or Loki's values)"
    ]


def test_what_is_a_json_document():
    assert is_document(b'[{"textPayload": "x"}]')
    assert is_document(b'[\n  {\n    "line": "x"\n  }\n]\n')
    assert is_document(b'{"status": "success", "data": {"resultType": "streams"')
    assert not is_document(b'{"log": "x\\n", "stream": "stderr"}\n{"log": "y\\n"}\n')
    assert not is_document(b"[2026-12-03 14:56:06 PP0 TP0] Decode batch\n")
    assert not is_document(b"")


_JSONISH = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["line", "log", "a", "MESSAGE", "ts"]), inner, max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=300), _JSONISH.map(lambda v: json.dumps(v)[1:])))
def test_any_document_text_is_read_refused_or_given_back_as_it_came(text):
    raw = ("[" + text).encode("utf-8", "surrogatepass")
    try:
        document = json.loads(raw)
    except ValueError:
        assert records(io.BufferedReader(io.BytesIO(raw)), "doc.json").read() == raw  # type: ignore[arg-type]
        return
    try:
        out = records(io.BufferedReader(io.BytesIO(raw)), "doc.json").read()  # type: ignore[arg-type]
    except LogOpenError as exc:
        assert "holds a log line" in str(exc)
        assert not any(
            isinstance(r, dict) and {"line", "log", "MESSAGE"} & set(r) for r in document
        )
        return
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines and all(isinstance(r, dict) and {"line", "log", "MESSAGE"} & set(r) for r in lines)
    assert lines == [
        r for r in document if isinstance(r, dict) and {"line", "log", "MESSAGE"} & set(r)
    ]


FLAT = (
    "> `2026-05-20 08:02:45 PP1 ATTN_CP0 TP0] Scheduler hit an exception: Traceback (most recent "
    'call last): File "/srv/sglang/srt/managers/scheduler.py", line 4227, in run_scheduler_process '
    'scheduler.run_event_loop() File "/srv/sglang/srt/layers/attention/backend.py", line 812, in '
    "forward_decode o = o + self.sink RuntimeError: The size of tensor a (4) must match the size "
    "of tensor b (8) at non-singleton dimension 0`"
)


def test_a_flattened_traceback_is_split_back_into_its_lines():
    assert unflatten(FLAT) == [
        "> `2026-05-20 08:02:45 PP1 ATTN_CP0 TP0] Scheduler hit an exception: Traceback (most "
        "recent call last):",
        '  File "/srv/sglang/srt/managers/scheduler.py", line 4227, in run_scheduler_process',
        "    scheduler.run_event_loop()",
        '  File "/srv/sglang/srt/layers/attention/backend.py", line 812, in forward_decode',
        "    o = o + self.sink",
        "RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at "
        "non-singleton dimension 0",
    ]
    assert unflatten("Traceback (most recent call last):") is None
    assert unflatten("[2026-05-20 08:02:45 PP0 TP0] Decode batch") is None


def test_a_flattened_traceback_s_exception_is_the_root_s(tmp_path):
    path = tmp_path / "flat.log"
    path.write_text(FLAT + "\n", encoding="utf-8")
    report = triage_paths([str(path)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert (root.key, root.extra["kind"]) == ("PP1 ATTN_CP0 TP0", "shape-kernel")
    assert "RuntimeError: The size of tensor a (4) must match" in root.message


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                'File "a.py", line 3, in f',
                "Traceback (most recent call last):",
                "x = 1",
                "ValueError: v",
                " ",
                "Error",
            ]
        ),
        max_size=12,
    ).map(" ".join)
)
def test_unflattening_any_text_never_fails_and_keeps_every_frame(text):
    lines = unflatten(text)
    if lines is not None:
        # What precedes the header comes first (a padded paste's records, a line each), each
        # line a piece of the text before it; then the header; then every frame after it.
        header = text.find("Traceback (most recent call last):")
        at = next(
            i for i, line in enumerate(lines) if line.endswith("Traceback (most recent call last):")
        )
        assert all(line.strip() in text[:header] for line in lines[:at])
        frames = [line for line in lines[at + 1 :] if line.startswith('  File "')]
        assert len(frames) == text[header:].count('File "a.py", line 3, in f')


def test_journald_byte_array_messages_keep_the_header_s_rank(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    expected = roots(triage_paths([str(AUX)]))
    records_ = [
        json.dumps(
            {
                "__REALTIME_TIMESTAMP": "1764773767000000",
                "MESSAGE": list(line.encode()) if "Traceback" in line or "Error" in line else line,
            }
        )
        for line in lines
    ]
    path = tmp_path / "journald.json"
    path.write_text("\n".join(records_) + "\n", encoding="utf-8")
    assert roots(triage_paths([str(path)])) == expected


def test_epoch_then_rfc3339_rows_are_peeled_and_the_time_shown_is_rfc3339(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    expected = roots(triage_paths([str(AUX)]))
    path = tmp_path / "rows.log"
    path.write_text(
        "".join(f"1779264164499\t2026-05-20T08:02:44.499Z\t{line}\n\n" for line in lines),
        encoding="utf-8",
    )
    report = triage_paths([str(path)])
    assert roots(report) == expected


def test_a_one_megabyte_wrapped_paste_and_loki_document_keep_their_root(tmp_path):
    # Their cost (within 2 s of CPU and 250 MB) is measured by benchmarks/bench_triage.py
    # --small, not here: a timed test fails on a loaded machine.
    lines = AUX.read_text(encoding="utf-8").splitlines()
    healthy = [
        f"[2026-12-03 14:55:{n % 60:02d} PP0 TP0] Decode batch, #running-req: 12, #token: {n}, "
        "token usage: 0.11, cuda graph: True, gen throughput (token/s): 301.22, #queue-req: 0"
        for n in range(6600)
    ]
    body = healthy + lines
    paste = tmp_path / "wrapped.log"
    paste.write_text(wrapped("\n".join(body) + "\n", 80), encoding="utf-8")
    loki = tmp_path / "loki.json"
    loki.write_text(_loki(body, {"pod": "sglang-0"}), encoding="utf-8")
    for path in (paste, loki):
        assert path.stat().st_size >= 1 << 20
        report = triage_paths([str(path)])
        assert [r[0] for r in roots(report)] == ["PP801"]


def test_a_quoted_paste_with_long_lines_alike_in_length_is_not_taken_for_wrapped():
    lines = []
    for rank in range(4):
        lines.append(
            f"> [rank{rank}]:[E1203 15:06:07.00000{rank} 7{rank}1 ProcessGroupNCCL.cpp:2168] "
            "[PG ID 2 PG GUID 3(pp) Rank 0] Process group watchdog thread terminated with "
            "exception: [Rank 0] Watchdog caught collective operation timeout"
        )
        lines.append("> Exception raised from checkTimeout at ProcessGroupNCCL.cpp:635")
    assert wrap_width(("\n".join(lines) + "\n").encode()) is None


def test_a_compressed_log_cut_before_its_first_line_is_said_cut_not_empty(tmp_path):
    packed = bz2.compress(AUX.read_bytes())
    path = tmp_path / "cut.log"
    path.write_bytes(packed[: len(packed) // 2])
    report = triage_paths([str(path)])
    assert [p.message for p in report.problems] == [
        "bzip2 stream cut before its first line (Compressed file ended before the end-of-stream "
        "marker was reached); nothing could be read"
    ]


_CHAIN_SENTENCES = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)


@settings(max_examples=40, deadline=None)
@given(
    chain=st.lists(
        st.tuples(
            st.integers(1, 3),
            st.sampled_from(["RuntimeError", "ValueError", "torch.OutOfMemoryError"]),
            st.sampled_from(_CHAIN_SENTENCES),
        ),
        min_size=1,
        max_size=4,
    ),
    separator=st.sampled_from([" ", "  ", "\t"]),
)
def test_a_chained_traceback_flattened_with_spaces_gives_its_lines_back(chain, separator):
    lines = [
        "[2026-12-03 14:56:07 PP0] Scheduler hit an exception: Traceback (most recent call last):"
    ]
    for number, (frames, exception, sentence) in enumerate(chain):
        if number:
            lines += ["", sentence, "", "Traceback (most recent call last):"]
        for frame in range(frames):
            lines.append(f'  File "/srv/sglang/srt/m{number}.py", line {frame + 10}, in f{frame}')
            lines.append(f"    g{frame}(x)")
        lines.append(f"{exception}: failure {number}")
    flat = separator.join(line.strip() for line in lines if line)
    assert unflatten(flat) == lines


def test_a_launcher_s_process_name_starts_a_line_after_one_of_the_widest():
    # Two lines of the same longest length are no terminal's wrapping where the line after
    # each opens with a process's name ('(VllmWorker rank=7 pid=1030) '): a line of its own.
    from ppaux.triage.wrapping import wrap_width

    critical = (
        "CRITICAL 03-15 17:24:18 [executor.py:48] the executor got a fatal signal " + "x" * 60
    )
    lines = [
        "(Worker rank=1 pid=788) INFO 03-15 17:24:17 [pynccl.py:69] using nccl==2.25.1",
        critical,
        "(Worker rank=2 pid=825) Process SpawnProcess-1:3:",
        "(Worker rank=3 pid=866) Process SpawnProcess-1:4:",
        critical,
        "(Worker rank=7 pid=1030) Traceback (most recent call last):",
        "(Worker rank=5 pid=948) Traceback (most recent call last):",
    ]
    assert wrap_width(("\n".join(lines) + "\n").encode()) is None


#: A real fragment (sglang PR #30747's description): frames and the exception line, no header.
_FRAGMENT = LOGS / "real" / "sglang-30747-pp-rope-shape-fragment.log"


def test_a_quoted_fragment_with_a_blank_line_or_a_reply_s_words_around_it_is_read(tmp_path):
    # GitHub ends a comment's quote with a blank line; a reply's own words stand around it.
    # Each form is the fragment's failure: a shape error, the rank unknown.
    quoted = ["> " + line for line in _FRAGMENT.read_text(encoding="utf-8").splitlines()]
    forms = {
        "blank after": [*quoted, ""],
        "blank before": ["", *quoted],
        "blank around": ["", *quoted, "", ""],
        "reply": ["After rebasing I get this:", "", ">```", *quoted, ">```", "", "any idea?"],
    }
    for name, form in forms.items():
        path = tmp_path / "comment.md"
        path.write_text("\n".join(form) + "\n", encoding="utf-8")
        found = roots(triage_paths([str(path)]))
        assert found == [("PP802", None, "shape-kernel", "RuntimeError")], name
        result = CliRunner().invoke(app, ["triage", str(path)])
        assert result.exit_code == 1, (name, result.output)


def test_a_log_whose_quoted_lines_are_few_is_not_taken_for_a_quote():
    from ppaux.triage.pastemarks import paste_mark

    # four quoted lines among five lines of a log's own: the log's, not a quote's
    lines = [f"[2026-12-03 14:56:0{i}] step {i}" for i in range(5)]
    head = "\n".join([*lines, *(f"> echo {i}" for i in range(4))]) + "\n"
    assert paste_mark(head.encode()) is None


@settings(max_examples=100, deadline=None)
@given(
    lines=st.lists(_PASTE_LINE, min_size=4, max_size=30),
    before=st.lists(_PASTE_LINE, max_size=3),
    after=st.lists(_PASTE_LINE, max_size=3),
    blanks=st.tuples(st.sampled_from(["", " ", "\t"]), st.sampled_from(["", "  "])),
    mark=st.sampled_from(["> ", ">", ">> ", "> > "]),
)
def test_a_quote_among_a_reply_s_own_lines_is_peeled_from_the_quoted_lines_only(
    lines, before, after, blanks, mark
):
    from ppaux.triage.pastemarks import Unmarked, paste_mark

    assume(len(before) + len(after) < len(lines))
    around = [*before, blanks[0]], [blanks[1], *after]
    raw = "\n".join([*around[0], *(mark + line for line in lines), *around[1]]) + "\n"
    found = paste_mark(raw.encode("utf-8"))
    assert found is not None
    stream = Unmarked(io.BufferedReader(io.BytesIO(raw.encode("utf-8"))), found, 1 << 16)
    out = io.BufferedReader(stream).read()
    assert out == ("\n".join([*around[0], *lines, *around[1]]) + "\n").encode("utf-8")
