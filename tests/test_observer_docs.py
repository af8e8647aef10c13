"""docs/observers.md tells the truth: each ``$ ppaux check-observer`` command of the worked
example prints exactly the ``text`` block under it (and exits as the page says), and the
failing test's message is what ``assert_pp_safe`` raises."""

from __future__ import annotations

import re

import pytest
from helpers import REPO, cli

from ppaux.observer.fresh import FORK_HOOK

pytestmark = pytest.mark.torch

PAGE = REPO / "docs" / "observers.md"


def _examples() -> list[tuple[str, str]]:
    text = PAGE.read_text(encoding="utf-8")
    found = re.findall(
        r"^```console\n\$ (ppaux check-observer fixtures/[^\n]*)\n```\n\n```text\n(.*?)^```$",
        text,
        re.S | re.M,
    )
    return found


def test_the_worked_example_has_the_good_the_leaking_and_the_fixed_observer():
    commands = [command for command, _ in _examples()]
    assert commands == [
        "ppaux check-observer fixtures/observers/entropy_good.py:EntropyObserver",
        "ppaux check-observer fixtures/observers/entropy_list.py:EntropyObserver",
        "ppaux check-observer fixtures/observers/entropy_fixed.py:EntropyObserver",
    ]


@pytest.mark.parametrize(("command", "expected"), _examples())
def test_each_command_prints_what_the_page_shows(command, expected, monkeypatch):
    monkeypatch.chdir(REPO)  # the page's commands run from the repository root
    monkeypatch.delenv(FORK_HOOK, raising=False)  # as users run them: rank 0 fresh
    done = cli(*command.split()[1:], env={"COLUMNS": "80"})  # as in a pipe or a file
    assert done.stderr == ""
    assert done.stdout == expected
    assert done.exit_code == (1 if "entropy_list" in command else 0)


def test_the_failing_test_reads_as_the_page_shows():
    from ppaux.observer.target import load_object
    from ppaux.testing import assert_pp_safe

    text = PAGE.read_text(encoding="utf-8")
    shown = re.search(r"^```text\n(AssertionError: .*?)^```$", text, re.S | re.M)
    assert shown is not None
    leaking = load_object(f"{REPO / 'fixtures' / 'observers' / 'entropy_list.py'}:EntropyObserver")
    with pytest.raises(AssertionError) as caught:
        assert_pp_safe(leaking)
    assert f"AssertionError: {caught.value}\n" == shown.group(1)
