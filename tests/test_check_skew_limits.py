"""check-skew takes only the limits it reads (a limit it would ignore is refused in one line),
says a long limit value cut, and refuses a fingerprint nested deeper than
``max_fingerprint_nesting`` in one line naming the file and the limit, however deep it is."""

from __future__ import annotations

import json

import pytest
from helpers import REPO, cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.limits import Limits, parse_limit
from ppaux.skew import FingerprintError, loads
from ppaux.suggestions import RaiseLimit

CONSISTENT = REPO / "fixtures" / "skew" / "fingerprints" / "consistent"
PP0 = CONSISTENT / "pp0.json"


def _one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("name", ["max_depth", "max_items", "max_log_line", "max_source_bytes"])
def test_a_limit_check_skew_does_not_read_is_refused(name):
    line = _one_error_line(cli("check-skew", str(CONSISTENT), "--limit", f"{name}=500"))
    assert line == (
        f"ppaux: error: --limit: check-skew on fingerprint files does not use limit '{name}'; "
        "it uses max_fingerprint_bytes, max_fingerprint_nesting"
    )


@pytest.mark.parametrize("name", ["max_fingerprint_bytes", "max_fingerprint_nesting"])
def test_the_limits_it_reads_are_taken(name):
    assert cli("check-skew", str(CONSISTENT), "--limit", f"{name}=500000").exit_code == 0


def test_the_distributed_run_takes_the_analysis_limits_too(monkeypatch):
    """With --distributed the analysis limits are read (by the local fingerprint); the run then
    stops for want of a launcher, not on the limit."""
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    result = cli("check-skew", "--distributed", "--limit", "max_source_bytes=100")
    assert "--limit" not in result.stderr
    refused = cli("check-skew", "--distributed", "--limit", "max_depth=100")
    assert _one_error_line(refused).startswith(
        "ppaux: error: --limit: check-skew --distributed does not use limit 'max_depth'; it uses "
        "max_fingerprint_bytes, max_fingerprint_nesting, max_source_bytes,"
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (
            "9" * 5000,
            "must be from 1 to 9223372036854775807, not '" + "9" * 40 + "'... (5,000 characters)",
        ),
        (
            "-" + "1" + "0" * 4999,
            "must be from 1 to 9223372036854775807, not '-1" + "0" * 38 + "'... (5,001 characters)",
        ),
        (
            "9223372036854775808",
            "must be from 1 to 9223372036854775807, not '9223372036854775808'",
        ),
        (
            "x" * 5000,
            "must be a whole number in ASCII digits (0-9, nothing else), not '"
            + "x" * 40
            + "'... (5,000 characters)",
        ),
    ],
)
def test_a_long_limit_value_is_shown_cut(value, shown):
    line = _one_error_line(
        cli("check-skew", str(CONSISTENT), "--limit", f"max_fingerprint_bytes={value}")
    )
    assert line == f"ppaux: error: --limit: limit max_fingerprint_bytes {shown}"


def test_a_long_limit_name_is_shown_cut():
    line = _one_error_line(cli("check-skew", str(CONSISTENT), "--limit", "y" * 5000 + "=1"))
    assert line.startswith(
        "ppaux: error: --limit: unknown limit '" + "y" * 40 + "'... (5,000 characters);"
    )


@given(st.integers(min_value=1, max_value=2**63 - 1))
def test_every_value_up_to_the_largest_is_read_as_written(number):
    assert parse_limit(f"max_depth={number}") == ("max_depth", number)
    assert parse_limit(f"max_depth=000{number}") == ("max_depth", number)


@given(st.integers(min_value=2**63, max_value=10**400))
def test_every_value_past_the_largest_is_refused(number):
    with pytest.raises(ValueError, match="must be from 1 to 9223372036854775807"):
        parse_limit(f"max_depth={number}")


@pytest.mark.parametrize(("opening", "closing"), [("[", "]"), ('{"a":', "}")])
def test_a_fingerprint_nested_50000_deep_is_one_line_naming_the_file_and_the_limit(
    tmp_path, opening, closing
):
    path = tmp_path / "deep.json"
    path.write_text(opening * 50_000 + "1" + closing * 50_000)
    line = _one_error_line(cli("check-skew", str(path)))
    assert line == (
        f"ppaux: error: {path}: nests arrays and objects deeper than 64 levels (limit "
        "max_fingerprint_nesting=64 reached); raise it with --limit max_fingerprint_nesting=N"
    )


def test_past_what_the_decoder_follows_the_message_says_so(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 50_000 + "]" * 50_000)
    result = cli("check-skew", str(path), "--limit", "max_fingerprint_nesting=100000")
    assert _one_error_line(result) == (
        f"ppaux: error: {path}: nests arrays and objects deeper than Python's JSON decoder "
        "follows (about 500 levels)"
    )


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


#: How deep the fixture fingerprint nests on its own (``sglang.files[i]``: the document, the
#: sglang object, the files list, one file's object).
OWN_DEPTH = 4


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(min_value=0, max_value=120), limit=st.integers(min_value=4, max_value=120))
def test_a_fingerprint_is_refused_exactly_when_it_nests_past_the_limit(depth, limit):
    doc = json.loads(PP0.read_text())
    doc["extra"] = _nested(depth)  # one level for the document, then `depth` arrays
    text = json.dumps(doc)
    deepest = max(OWN_DEPTH, 1 + depth)
    if deepest <= limit:
        assert loads(text, "pp0", Limits(max_fingerprint_nesting=limit)).host == "node-0"
    else:
        with pytest.raises(FingerprintError) as caught:
            loads(text, "pp0", Limits(max_fingerprint_nesting=limit))
        assert f"deeper than {limit} levels" in caught.value.reason
        assert caught.value.suggestions == (RaiseLimit("max_fingerprint_nesting", limit),)
