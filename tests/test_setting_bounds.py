"""Settings out of range are one error line and exit 2, before anything runs: a timeout that is
not a number of seconds (NaN, infinity, 1e300), and check sizes that would ask for gigabytes."""

from __future__ import annotations

import pytest
from helpers import REPO, cli

pytestmark = pytest.mark.torch

GOOD = str(REPO / "fixtures/observers/entropy_good.py") + ":EntropyObserver"
DUMP = str(REPO / "fixtures/dumps/clean_output.pt")
TIMEOUT = "must be a number of seconds above 0 and at most 86400"


@pytest.mark.parametrize("value", ["nan", "inf", "1e300", "1e400", "0", "-1", "86401"])
def test_a_timeout_that_is_not_seconds_is_refused(value: str) -> None:
    # Every value out of range, in the one wording of the range (the library's), echoed as it
    # was typed ('0', not '0.0'; '1e400', not 'inf').
    for args in (
        ("replay", DUMP, "--transport", "torch-distributed"),
        ("replay", DUMP),
        ("check-observer", GOOD, "--transport", "torch-distributed"),
    ):
        result = cli(*args, "--timeout", value)
        assert result.exit_code == 2, (args, result.output)
        (line,) = result.stderr.splitlines()
        assert line == f"ppaux: error: --timeout {value}: {TIMEOUT}", line


def test_a_timeout_that_is_no_number_is_one_line_naming_it() -> None:
    result = cli("check-observer", GOOD, "--timeout", "abc")
    assert result.exit_code == 2
    assert result.stderr == "ppaux: error: --timeout: 'abc' is not a number of seconds\n"


@pytest.mark.parametrize(
    "args, reason",
    [
        (("--vocab-size", "100000000000"), "--vocab-size 100000000000: must be 2 to 4194304"),
        (("--batch-size", "100000"), "--batch-size 100000: must be at most 4096"),
        (("--steps", "1000000"), "--steps 1000000: must be 1 to 1000"),
        (
            ("--batch-size", "4096", "--vocab-size", "1000000"),
            "--vocab-size 1000000: with a batch of 4096 makes logits of more than 16777216 "
            "elements; give a smaller vocabulary or batch",
        ),
    ],
)
def test_check_sizes_that_would_take_gigabytes_are_refused(
    args: tuple[str, ...], reason: str
) -> None:
    result = cli("check-observer", GOOD, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"ppaux: error: {reason}\n"


def test_the_largest_allowed_sizes_still_check() -> None:
    result = cli("check-observer", GOOD, "--batch-size", "64", "--vocab-size", "262144")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), 0.0, -1.0, 1e300])
def test_the_library_refuses_the_same_timeouts(value: float) -> None:
    from ppaux.observer import ObserverConfigError, ObserverOptions, check_observer
    from ppaux.replay import ReplayConfigError, ReplayOptions, replay_paths

    with pytest.raises(ReplayConfigError) as replay_error:
        replay_paths([DUMP], ReplayOptions(timeout_s=value))
    assert (replay_error.value.option, replay_error.value.reason) == ("timeout_s", TIMEOUT)
    with pytest.raises(ObserverConfigError) as observer_error:
        check_observer(GOOD, ObserverOptions(timeout_s=value))
    assert (observer_error.value.option, observer_error.value.reason) == ("timeout_s", TIMEOUT)


def test_check_observer_s_timeout_help_says_it_bounds_a_hung_target() -> None:
    said = " ".join(cli("check-observer", "--help", env={"COLUMNS": "200"}).stdout.split())
    assert (
        "How long a two-process transport waits for its peer (seconds, at most 86400); a step, "
        "the target's loading or the end of a batch size that takes longer than the timeout "
        "plus 5 s is stopped as hung"
    ) in said.replace(" │ ", " ")
