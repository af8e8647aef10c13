"""Exports written newest first, whatever else was done to them: wrapped at a terminal's
width, timed without a zone, several streams interleaved."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

#: 2026-12-03T14:56:00Z in nanoseconds; rows a millisecond apart.
BASE = 1796309760_000000000
_SRT = "/usr/local/lib/python3.11/site-packages/sglang/srt/managers"


def _roots(report):
    return [
        (f.code, f.key, f.extra.get("exception"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def _moment(n: int) -> datetime:
    return datetime.fromtimestamp((BASE + n * 1_000_000) / 1e9, tz=UTC)


def _iso(n: int) -> str:
    return _moment(n).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def _table(lines: list[str]) -> list[str]:
    """Grafana's table download: time, labels, line."""
    return [
        f'{_iso(n)}\t{{namespace="llm", pod="sglang-pp-0"}}\t{line}' for n, line in enumerate(lines)
    ]


def _stamped(lines: list[str]) -> list[str]:
    return [f"{_iso(n)} {line}" for n, line in enumerate(lines)]


def _loki_cli(lines: list[str]) -> list[str]:
    """logcli's default output: time, the stream's labels, line."""
    return [
        f'{_iso(n)} {{container="sglang", namespace="llm", pod="sglang-0"}} {line}'
        for n, line in enumerate(lines)
    ]


def _two_failures(first: int, exception: str, noise: int) -> list[str]:
    """Rank ``first`` fails with ``exception``; a second later another rank fails as fallout
    (its traceback cut off by the process's end)."""
    other = (first + 1) % 4
    lines = [
        f"[2026-12-03 14:56:00 PP{n % 4}] Decode batch, #running-req: {n}, #token: 96, "
        "token usage: 0.00, gen throughput (token/s): 41.52, #queue-req: 0"
        for n in range(noise)
    ]
    lines += [
        f"[2026-12-03 14:56:02 PP{first}] Scheduler hit an exception: "
        "Traceback (most recent call last):",
        f'  File "{_SRT}/scheduler.py", line 3076, in run_scheduler_process',
        "    scheduler.event_loop_pp()",
        f'  File "{_SRT}/scheduler_pp_mixin.py", line 120, in event_loop_pp',
        "    result = self.run_batch(self.cur_batch)",
        f"{exception}: stage {first} failed while running its batch of requests, see above",
        f"[2026-12-03 14:56:41 PP{other}] Scheduler hit an exception: "
        "Traceback (most recent call last):",
        f'  File "{_SRT}/scheduler.py", line 3076, in run_scheduler_process',
        "    scheduler.event_loop_pp()",
        f'  File "{_SRT}/scheduler_pp_mixin.py", line 131, in event_loop_pp',
        "    work.wait()",
        f"torch.distributed.DistBackendError: NCCL communicator was aborted on rank {other}.",
        "[2026-12-03 14:56:42] Received sigquit from a child process. "
        "It usually means the child failed.",
    ]
    return lines


def _wrapped(rows: list[str], width: int) -> str:
    """``rows`` as a terminal of ``width`` columns shows them."""
    return "".join(
        "".join(row[i : i + width] + "\n" for i in range(0, len(row), width)) or "\n"
        for row in rows
    )


_ENVELOPES = {"table": _table, "stamped": _stamped, "logcli": _loki_cli}
_EXCEPTIONS = st.sampled_from(["RuntimeError", "ValueError", "torch.OutOfMemoryError", "KeyError"])


@pytest.mark.parametrize("width", [80, 132])
@pytest.mark.parametrize("envelope", sorted(_ENVELOPES))
def test_a_wrapped_newest_first_export_has_the_oldest_first_root(tmp_path, envelope, width):
    rows = _ENVELOPES[envelope](_two_failures(2, "torch.OutOfMemoryError", 12))
    oldest = tmp_path / "oldest.log"
    oldest.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    newest = tmp_path / "newest.log"
    newest.write_text(_wrapped(rows[::-1], width), encoding="utf-8")
    expected = [("PP802", "PP2", "torch.OutOfMemoryError")]
    assert _roots(triage_paths([str(oldest)])) == expected
    report = triage_paths([str(newest)])
    assert _roots(report) == expected
    # the root's place: the first piece of its header's row in the file as written
    file_lines = newest.read_text(encoding="utf-8").split("\n")
    (root,) = (f for f in report.findings if f.code == "PP802")
    place = root.extra["line"]
    assert "PP2] Scheduler hit" in file_lines[place - 1] + file_lines[place]
    (log,) = report.data["logs"]
    assert log["lines"] == len(file_lines) - 1


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.integers(0, 3),
    exception=_EXCEPTIONS,
    noise=st.integers(4, 30),
    envelope=st.sampled_from(sorted(_ENVELOPES)),
    # a terminal's usual widths (at others, a cut can fall where wrapping is not told from
    # content, in either order: the test below)
    width=st.one_of(st.none(), st.sampled_from([80, 100, 120, 132, 160, 200])),
)
def test_any_newest_first_export_wrapped_or_not_keeps_the_root(
    tmp_path, first, exception, noise, envelope, width
):
    rows = _ENVELOPES[envelope](_two_failures(first, exception, noise))
    path = tmp_path / "newest.log"
    newest = rows[::-1]
    path.write_text(
        "".join(row + "\n" for row in newest) if width is None else _wrapped(newest, width),
        encoding="utf-8",
    )
    assert _roots(triage_paths([str(path)])) == [("PP802", f"PP{first}", exception)]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.integers(0, 3),
    exception=_EXCEPTIONS,
    noise=st.integers(4, 30),
    envelope=st.sampled_from(sorted(_ENVELOPES)),
    width=st.integers(40, 200),
)
def test_a_wrapped_export_reads_the_same_newest_or_oldest_first(
    tmp_path, first, exception, noise, envelope, width
):
    # at any width, narrower than a terminal's too: the order of the rows changes nothing
    rows = _ENVELOPES[envelope](_two_failures(first, exception, noise))
    oldest, newest = tmp_path / "oldest.log", tmp_path / "newest.log"
    oldest.write_text(_wrapped(rows, width), encoding="utf-8")
    newest.write_text(_wrapped(rows[::-1], width), encoding="utf-8")
    assert _roots(triage_paths([str(newest)])) == _roots(triage_paths([str(oldest)]))


def _naive(n: int, separator: str = " ") -> str:
    """A row's time as a browser's local time, no zone, to the millisecond."""
    return _moment(n).strftime(f"%Y-%m-%d{separator}%H:%M:%S.%f")[:-3]


def _grafana_csv(lines: list[str]) -> list[str]:
    """Grafana's CSV download of a logs panel: a header row, then time and line, quoted."""
    quoted = ('"' + line.replace('"', '""') + '"' for line in lines)
    return ['"Time","Line"'] + [f'"{_naive(n)}",{line}' for n, line in enumerate(quoted)]


def _grafana_tsv(lines: list[str]) -> list[str]:
    return ["Time\tLine"] + [f"{_naive(n)}\t{line}" for n, line in enumerate(lines)]


def _iso_naive(lines: list[str]) -> list[str]:
    return [f"{_naive(n, 'T')} {line}" for n, line in enumerate(lines)]


_NAIVE = {"csv": _grafana_csv, "tsv": _grafana_tsv, "iso": _iso_naive}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.integers(0, 3),
    exception=_EXCEPTIONS,
    noise=st.integers(4, 30),
    envelope=st.sampled_from(sorted(_NAIVE)),
    newest=st.booleans(),
)
def test_an_export_timed_without_a_zone_is_read_in_time_order(
    tmp_path, first, exception, noise, envelope, newest
):
    rows = _NAIVE[envelope](_two_failures(first, exception, noise))
    if newest:  # the header row stays first
        rows = rows[:1] + rows[:0:-1] if envelope != "iso" else rows[::-1]
    path = tmp_path / "export.log"
    path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    assert _roots(triage_paths([str(path)])) == [("PP802", f"PP{first}", exception)]


def _loki_response(lines: list[str], backward: bool) -> str:
    """Loki's query API response: one stream per pod (the pipeline rank of the line, or of the
    traceback it belongs to; lines of no rank the parent's), each stream's values in the query's
    direction, the streams one after the other."""
    streams: dict[str, list[list[str]]] = {}
    pod = "sglang-parent"
    for n, line in enumerate(lines):
        if line.startswith("[2026-"):
            rank = line.split("]", 1)[0].rsplit(" ", 1)[-1]
            pod = f"sglang-{rank.lower()}" if rank.startswith("PP") else "sglang-parent"
        streams.setdefault(pod, []).append([str(BASE + n * 1_000_000), line])
    result = [
        {
            "stream": {"pod": pod, "container": "sglang"},
            "values": values[::-1] if backward else values,
        }
        for pod, values in sorted(streams.items())
    ]
    document = {"status": "success", "data": {"resultType": "streams", "result": result}}
    return json.dumps(document)


def test_a_loki_response_of_short_streams_newest_first_keeps_each_traceback_whole(tmp_path):
    # three lines or fewer per rank before its failure: each stream steps down only twice
    lines = _two_failures(2, "torch.OutOfMemoryError", 8)
    for backward in (False, True):
        path = tmp_path / f"loki-{backward}.json"
        path.write_text(_loki_response(lines, backward), encoding="utf-8")
        report = triage_paths([str(path)])
        assert _roots(report) == [("PP802", "PP2", "torch.OutOfMemoryError")], backward


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.integers(0, 3),
    exception=_EXCEPTIONS,
    noise=st.integers(0, 40),
    backward=st.booleans(),
)
def test_any_loki_response_of_one_stream_per_pod_keeps_the_root(
    tmp_path, first, exception, noise, backward
):
    path = tmp_path / "loki.json"
    lines = _two_failures(first, exception, noise)
    path.write_text(_loki_response(lines, backward), encoding="utf-8")
    assert _roots(triage_paths([str(path)])) == [("PP802", f"PP{first}", exception)]
