"""A value an exception's message names in quotes (a dict's key, a prompt) is no word of its
kind: ``KeyError: 'MPI error'`` is a missing key, not a failure on the network. Expected values
are written by hand from the log below."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_HEAD = (
    "[2026-12-03 14:56:07 PP0 TP0] Scheduler hit an exception: "
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", '
    "line 100, in event_loop_pp\n"
    "    x = table[key]\n"
)
#: Words of the communication and MPI kinds, each quoted as a value below.
_WORDS = (
    "MPI error",
    "MPI_ERR_OTHER",
    "NCCL error",
    "Connection closed by peer",
    "ncclSystemError: x",
)


def _findings(path: Path) -> dict[str, list[str]]:
    report = triage_paths([str(path)])
    assert not report.problems
    found: dict[str, list[str]] = {}
    for f in report.findings:
        found.setdefault(f.code, []).append(f.message)
    return found


@pytest.mark.parametrize(
    "last",
    [f"KeyError: '{w}'" for w in _WORDS] + ['ValueError: bad prompt "ncclSystemError: x"'],
)
def test_a_quoted_value_is_no_word_of_the_failure_s_kind(tmp_path, last):
    path = tmp_path / "q.log"
    path.write_text(_HEAD + last + "\n", encoding="utf-8")
    found = _findings(path)
    assert "PP809" not in found, found["PP809"]
    assert len(found["PP802"]) == 1
    assert "a communication failure" not in found["PP802"][0]
    report = triage_paths([str(path)])
    commands = [" ".join(s["argv"]) for s in report.data["steps"] if s["argv"]]
    assert "mpirun --version" not in commands and "export NCCL_DEBUG=INFO" not in commands


def test_the_message_s_own_words_still_say_communication(tmp_path):
    path = tmp_path / "c.log"
    path.write_text(
        _HEAD + "RuntimeError: Connection closed by peer [10.0.0.2]:13718\n", encoding="utf-8"
    )
    assert "PP809" in _findings(path)


_KEY = st.sampled_from(_WORDS)
_QUOTE = st.sampled_from(["'", '"'])


@settings(max_examples=20, deadline=None)
@given(word=_KEY, quote=_QUOTE, exception=st.sampled_from(["KeyError", "ValueError"]))
def test_no_quoted_word_hides_the_root(tmp_path_factory, word, quote, exception):
    path = tmp_path_factory.mktemp("q") / "q.log"
    path.write_text(f"{_HEAD}{exception}: {quote}{word}{quote}\n", encoding="utf-8")
    found = _findings(path)
    assert "PP809" not in found and len(found["PP802"]) == 1
