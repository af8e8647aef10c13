"""Settings out of range are one error line and exit 2, before anything runs: a timeout that is
not a number of seconds (NaN, infinity, 1e300), and check sizes that would ask for gigabytes."""

from __future__ import annotations

import json

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
        (
            ("--vocab-size", "100000000000"),
            "--vocab-size 100000000000: must be at most 4194304 (limit max_vocab_size=4194304 "
            "reached); raise it with --limit max_vocab_size=N",
        ),
        (
            ("--batch-size", "100000"),
            "--batch-size 100000: must be at most 4096 (limit max_batch_size=4096 reached); "
            "raise it with --limit max_batch_size=N",
        ),
        (
            ("--steps", "1000000"),
            "--steps 1000000: must be at most 1000 (limit max_steps=1000 reached); "
            "raise it with --limit max_steps=N",
        ),
        (
            ("--batch-size", "4", "--limit", "max_batch_size=2"),
            "--batch-size 4: must be at most 2 (limit max_batch_size=2 reached); "
            "raise it with --limit max_batch_size=N",
        ),
        (
            ("--batch-size", "4096", "--vocab-size", "1000000"),
            "--vocab-size 1000000: with a batch of 4096 makes logits of more than 67108864 "
            "elements (limit max_logits_elements=67108864 reached): give a smaller vocabulary "
            "or batch; raise it with --limit max_logits_elements=N",
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


def test_a_production_vocabulary_at_a_production_batch_checks() -> None:
    # Qwen2's vocabulary at a batch of 128: 19,447,808 logits a step, past 2**24.
    fixed = str(REPO / "fixtures/observers/entropy_fixed.py") + ":EntropyObserver"
    args = ("--batch-size", "128", "--vocab-size", "151936", "--steps", "1")
    result = cli("check-observer", fixed, *args, "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["findings"] == [] and report["observer"]["batch_sizes"] == [128]
    assert [(s["batch_size"], s["sent"]) for s in report["steps"]] == [(128, ["entropy"])]


#: A batch of 512 at Qwen2's vocabulary: 77,791,232 logits, past the default 2**26.
OVER = ("--batch-size", "512", "--vocab-size", "151936", "--steps", "1")


def test_logits_past_the_default_are_refused_naming_the_limit() -> None:
    result = cli("check-observer", GOOD, *OVER)
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "ppaux: error: --vocab-size 151936: with a batch of 512 makes logits of more than "
        "67108864 elements (limit max_logits_elements=67108864 reached): give a smaller "
        "vocabulary or batch; raise it with --limit max_logits_elements=N\n"
    )


def test_the_logits_bound_is_the_limit_given() -> None:
    # Batch 4 at a vocabulary of 32 is 128 logits: a limit of 127 refuses it, 128 admits it.
    small = ("--batch-size", "4", "--vocab-size", "32", "--steps", "1")
    refused = cli("check-observer", GOOD, *small, "--limit", "max_logits_elements=127")
    assert refused.exit_code == 2, refused.output
    assert refused.stderr == (
        "ppaux: error: --vocab-size 32: with a batch of 4 makes logits of more than 127 "
        "elements (limit max_logits_elements=127 reached): give a smaller vocabulary or batch; "
        "raise it with --limit max_logits_elements=N\n"
    )
    admitted = cli("check-observer", GOOD, *small, "--limit", "max_logits_elements=128")
    assert admitted.exit_code == 0, admitted.output


def test_raising_the_limit_admits_logits_past_the_default() -> None:
    # The refused shape above, admitted once --limit raises the bound: the check gets past its
    # settings to the target (one that does not exist, so that nothing runs 300 MB of logits).
    missing = str(REPO / "fixtures/observers/entropy_good.py") + ":NoSuchObserver"
    raised = ("--limit", f"max_logits_elements={512 * 151936}")
    refused = cli("check-observer", missing, *OVER)
    assert refused.exit_code == 2, refused.output
    assert "(limit max_logits_elements=67108864 reached)" in refused.stderr
    admitted = cli("check-observer", missing, *OVER, *raised)
    assert admitted.exit_code == 2, admitted.output
    (line,) = admitted.stderr.splitlines()
    assert "max_logits_elements" not in line and "NoSuchObserver" in line, line


def test_the_library_carries_the_logits_limit_as_data() -> None:
    from ppaux.limits import Limits
    from ppaux.observer import ObserverConfigError, ObserverOptions, check_observer
    from ppaux.suggestions import RaiseLimit

    options = ObserverOptions(batch_sizes=(4,), vocab_size=32, steps=1)
    with pytest.raises(ObserverConfigError) as caught:
        check_observer(GOOD, options, limits=Limits(max_logits_elements=100))
    assert caught.value.option == "vocab_size"
    assert caught.value.suggestions == (RaiseLimit("max_logits_elements", 100),)
    assert str(caught.value).endswith("raise it with limits=Limits(max_logits_elements=N)")


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
