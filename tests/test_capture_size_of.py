"""The length add's hooks take of the message before add runs (``before``: how many of its
items were there at the call): ``len`` where the value has one, -1 for any other value, and
never an exception into the host."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ppaux.capture.hooks import size_of


class _LenRaises:
    def __len__(self) -> int:
        raise RuntimeError("the target's own __len__")


class _LenNegative:
    def __len__(self) -> int:
        return -3


class _LenAttributeOnly:
    """A ``__len__`` on the instance only: ``len()`` looks at the type, so it has none."""

    def __init__(self) -> None:
        self.__len__ = lambda: 5


class _LenNone:
    __len__ = None


_ODD = st.sampled_from([_LenRaises, _LenNegative, _LenAttributeOnly, _LenNone, object]).map(
    lambda make: make()
)

_VALUES = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.text(),
    st.binary(),
    st.lists(st.integers()),
    st.dictionaries(st.text(), st.integers()),
    st.frozensets(st.integers()),
    _ODD,
)


@given(_VALUES)
def test_size_of_is_len_or_minus_one(value: object) -> None:
    try:
        expected = len(value)
    except Exception:
        expected = -1
    assert size_of(value) == expected


def test_size_of_named_cases() -> None:
    assert size_of({"a": 1, "b": 2}) == 2
    assert size_of([]) == 0
    assert size_of(None) == -1
    assert size_of(7) == -1
    assert size_of(_LenRaises()) == -1
    assert size_of(_LenNegative()) == -1  # len() refuses a negative length
    assert size_of(_LenAttributeOnly()) == -1
    assert size_of(_LenNone()) == -1
