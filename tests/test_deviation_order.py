"""Which deviation a file's PP118 names: the grammar of the bytes is read first, the values the
pickle builds after; a later deviation where torch's reading could differ (severe) wins over an
earlier one where it reads alike, so a memo slip cannot hide a state torch.load refuses."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ppaux.dump.grammar import Deviation
from ppaux.dump.structure import machine_deviation

_MILD = Deviation("data.pkl byte 9 (EMPTY_DICT)", "not memoized", False)
_SEVERE = Deviation("data.pkl byte 9 (BINPUT)", "memo index 49", True)


def _machine(deviation):
    return SimpleNamespace(deviation=deviation)


@pytest.mark.parametrize(
    ("found", "built", "expected"),
    [
        (None, None, None),
        (_MILD, None, _MILD),
        (_SEVERE, None, _SEVERE),
        (
            None,
            ("byte 250", "sets 'data'", True),
            Deviation("data.pkl byte 250", "sets 'data'", True),
        ),
        (
            _MILD,
            ("byte 250", "sets 'data'", True),
            Deviation("data.pkl byte 250", "sets 'data'", True),
        ),
        (_MILD, ("byte 250", "a torch.Size", False), _MILD),
        (_SEVERE, ("byte 250", "sets 'data'", True), _SEVERE),
        (_SEVERE, ("byte 250", "a torch.Size", False), _SEVERE),
    ],
)
def test_the_worse_deviation_is_named_the_first_of_equals(found, built, expected):
    assert machine_deviation(_machine(built), "data.pkl", found) == expected
