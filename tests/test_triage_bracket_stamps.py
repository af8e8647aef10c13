"""A time alone in brackets before every line (a CI runner's ``[<RFC 3339>Z] ``, Buildkite's
among them; a clock's ``[HH:MM:SS] ``; sglang's own time where a tool stamps frames with it)
is taken off, so that a traceback behind it is read as it is without it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

_FRAGMENT = (
    '  File "/srv/vllm/v1/sample/sampler.py", line 126, in sample\n'
    "    sampling_metadata.temperature < _SAMPLING_EPS,\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
)
_FULL = "Traceback (most recent call last):\n" + _FRAGMENT
_STAMPS = [
    "[2025-05-20T05:24:28Z] ",
    "[2025-05-20T05:24:28.123456Z] ",
    "[2025-05-20T05:24:28+02:00] ",
    "[2025-05-20 05:24:28] ",
    "[2025-05-20 05:24:28.123] ",
    "[05:24:28] ",
]


def _stamped(text: str, stamp: str) -> str:
    return "".join(stamp + line + "\n" for line in text.splitlines())


def _roots(path) -> list[tuple[str, str | None, str | None]]:
    report = triage_paths([str(path)])
    assert not report.problems
    return [
        (f.code, (f.extra or {}).get("exception"), (f.extra or {}).get("message"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


_ROOT = [
    ("PP802", "RuntimeError", "CUDA error: an illegal memory access was encountered"),
]


@pytest.mark.parametrize("stamp", _STAMPS)
@pytest.mark.parametrize("text", [_FRAGMENT, _FULL], ids=["fragment", "traceback"])
def test_a_stamp_before_every_line_hides_no_failure(tmp_path, stamp, text):
    log = tmp_path / "ci.log"
    log.write_text(_stamped(text, stamp))
    assert _roots(log) == _ROOT
    result = CliRunner().invoke(app, ["triage", str(log)])
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize("stamp", _STAMPS[:3] + _STAMPS[5:])
def test_a_stamped_one_line_exception_is_a_failure(tmp_path, stamp):
    # automodel#2575's one line behind a CI runner's stamp: a failure, as it is unstamped
    log = tmp_path / "one.log"
    log.write_text(f"{stamp}AssertionError: pp_batch_size 4 // pp_microbatch_size 1 must be >= 8\n")
    result = CliRunner().invoke(app, ["triage", str(log)])
    assert result.exit_code == 1, result.output
    assert "AssertionError" in result.output


def test_a_stamped_zone_gives_the_failure_its_instant(tmp_path):
    log = tmp_path / "ci.log"
    log.write_text(_stamped(_FRAGMENT, "[2025-05-20T05:24:28Z] "))
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert "2025-05-20T05:24:28Z" in root.message


def test_sglang_own_prefix_without_ranks_stays_the_server_process(tmp_path):
    # sglang's main process writes '[<time>] ' before a refused request's exception line: no
    # rank's failure, and no frame stamped with it says a tool put it there
    log = tmp_path / "server.log"
    log.write_text(
        '[2025-05-20 05:24:27] INFO:     127.0.0.1:5000 - "POST /generate HTTP/1.1" 400\n'
        "[2025-05-20 05:24:28] ValueError: the input is longer than the context\n"
    )
    assert _roots(log) == []


@settings(max_examples=30, deadline=None)
@given(
    seconds=st.integers(min_value=0, max_value=10**9),
    form=st.sampled_from(["T-Z", "T-zone", "T-micro", "space", "clock"]),
    indent=st.sampled_from(["", "  "]),
)
def test_any_stamp_gives_the_root_the_unstamped_log_gives(tmp_path_factory, seconds, form, indent):
    when = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    stamp = {
        "T-Z": when.strftime("[%Y-%m-%dT%H:%M:%SZ] "),
        "T-zone": when.strftime("[%Y-%m-%dT%H:%M:%S+05:30] "),
        "T-micro": when.strftime("[%Y-%m-%dT%H:%M:%S.%fZ] "),
        "space": when.strftime("[%Y-%m-%d %H:%M:%S] "),
        "clock": when.strftime("[%H:%M:%S] "),
    }[form]
    folder = tmp_path_factory.mktemp("stamps")
    plain, stamped = folder / "plain.log", folder / "stamped.log"
    text = "".join(indent + line + "\n" for line in _FRAGMENT.splitlines())
    plain.write_text(text)
    stamped.write_text(_stamped(text, stamp))
    assert _roots(stamped) == _roots(plain) == _ROOT
