"""``--limit NAME=N`` takes N in ASCII digits only, from 1 to 2**63 - 1, with nothing around
it; anything else is one error line naming the value (cut when long), exit 2, on every command
that takes ``--limit``."""

from __future__ import annotations

import re

import pytest
from helpers import cli
from hypothesis import given
from hypothesis import strategies as st
from skew_fixtures import tree

from ppaux.limits import LARGEST, Limits, parse_limit

#: 2**63 - 1, written out here rather than taken from the code under test.
TOP = 9_223_372_036_854_775_807


def test_the_largest_value_is_the_largest_ssize_t():
    assert LARGEST == TOP


@given(st.text(max_size=60))
def test_a_value_is_taken_exactly_when_it_is_ascii_digits_within_the_range(value):
    ascii_digits = re.fullmatch(r"[0-9]+", value, flags=re.ASCII) is not None
    in_range = ascii_digits and 1 <= int(value) <= TOP
    try:
        taken = parse_limit(f"max_depth={value}")
    except ValueError as exc:
        assert not in_range, value
        message = str(exc)
        assert "\n" not in message and message.startswith("limit max_depth must be ")
        # A value is shown whole up to 40 characters, else its first 40 and its length.
        shown = repr(value) if len(value) <= 40 else f"{value[:40]!r}... ({len(value)} characters)"
        assert message.endswith(f", not {shown}"), message
    else:
        assert in_range, value
        assert taken == ("max_depth", int(value))


@given(st.integers(min_value=1, max_value=TOP), st.integers(min_value=0, max_value=3))
def test_every_value_in_range_is_taken_with_its_leading_zeros(number, zeros):
    assert parse_limit(f"max_value_nesting={'0' * zeros}{number}") == ("max_value_nesting", number)


@pytest.mark.parametrize(
    "value",
    [
        "\u0661\u0662",  # Arabic-Indic 12
        "\uff11\uff12",  # fullwidth 12
        " 12",
        "12 ",
        "\t12",
        "1_000",
        "+5",
        "-5",
        "0",
        "000",
        "12345678901234567890123",  # 23 digits
        str(TOP + 1),
        "0" * 5000 + "1" + "0" * 19,  # past int()'s 4,300 digits
    ],
)
def test_refused_values(value):
    with pytest.raises(ValueError) as refused:
        parse_limit(f"max_depth={value}")
    message = str(refused.value)
    assert "\n" not in message and len(message) < 200


def test_the_edges_of_the_range():
    assert parse_limit(f"max_depth={TOP}") == ("max_depth", TOP)
    assert parse_limit("max_depth=1") == ("max_depth", 1)
    assert parse_limit("max-depth=0" + "0" * 5000 + "7") == ("max_depth", 7)


def test_a_long_value_is_cut_in_the_message():
    value = "9" * 10_000
    with pytest.raises(ValueError) as refused:
        parse_limit(f"max_depth={value}")
    assert str(refused.value) == (
        f"limit max_depth must be from 1 to {TOP}, not '{'9' * 40}'... (10,000 characters)"
    )


def test_names_are_exact():
    with pytest.raises(ValueError, match=r"^unknown limit ' max_depth'"):
        parse_limit(" max_depth=5")
    with pytest.raises(ValueError, match=r"^unknown limit 'max_depth '"):
        parse_limit("max_depth =5")


@pytest.mark.parametrize(
    "command",
    [
        ("inspect", "fixtures/dumps/aux_list.pt"),
        ("check-skew", "fixtures/skew/fingerprints/consistent"),
    ],
)
@pytest.mark.parametrize("value", ["\u0661\u0662", " 5", "12345678901234567890123"])
def test_each_command_refuses_with_one_line(command, value):
    result = cli(*command, "--limit", f"max_depth={value}")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppaux: error: --limit: limit max_depth must")
    assert "Traceback" not in result.stdout + result.stderr


def test_check_observer_refuses_with_one_line():
    result = cli(
        "check-observer",
        "fixtures/observers/entropy_good.py:EntropyObserver",
        "--limit",
        "max_value_nesting=\u0661\u0662",
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "ppaux: error: --limit: limit max_value_nesting must be a whole number in ASCII digits "
        "(0-9, nothing else), not '\u0661\u0662'"
    ]


def test_every_field_takes_the_whole_range():
    for field in Limits.__dataclass_fields__:
        assert parse_limit(f"{field}={TOP}") == (field, TOP)


@pytest.mark.parametrize(
    "command",
    [
        ("inspect", "fixtures/dumps/aux_list.pt", "--limit", f"max_pickle_bytes={TOP}"),
        ("triage", "fixtures/logs/sglang-healthy.log", "--limit", f"max_log_document={TOP}"),
        (
            "check-skew",
            "fixtures/skew/fingerprints/consistent",
            "--limit",
            f"max_fingerprint_bytes={TOP}",
        ),
    ],
    ids=["inspect", "triage", "check-skew"],
)
def test_the_largest_limit_reads_as_any_other(command):
    # A read of limit + 1 bytes would allocate them first: 2**63 bytes is no allocation.
    result = cli(*command)
    assert result.exit_code in (0, 1), result.output
    assert "internal error" not in result.output + result.stderr


def test_fingerprint_reads_a_tree_under_the_largest_limit(tmp_path):
    out = tmp_path / "fp.json"
    result = cli(
        "fingerprint",
        "--sglang-path",
        tree("v0523"),
        "--limit",
        f"max_source_bytes={TOP}",
        "-o",
        str(out),
    )
    assert result.exit_code == 0, result.output + result.stderr
    assert out.stat().st_size > 0


@pytest.mark.parametrize(
    ("command", "name", "used"),
    [
        (("fingerprint", "-o", "unused.json"), "max_depth", "max_source_bytes"),
        (
            ("check-observer", "fixtures/observers/entropy_good.py:EntropyObserver"),
            "max_source_bytes",
            "max_digested_items",
        ),
    ],
    ids=["fingerprint", "check-observer"],
)
def test_a_limit_the_command_does_not_read_is_refused(command, name, used):
    result = cli(*command, "--limit", f"{name}=5")
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"ppaux: error: --limit: {command[0]} does not use limit '{name}';")
    assert used in line
