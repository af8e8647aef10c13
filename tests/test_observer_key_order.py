"""A ``frozenset`` dict key's text in a path (:mod:`ppaux.observer.keyorder`) is the same in
processes with other string hash seeds, as the key is the same key to Python in both; any other
key is shown as ``repr`` shows it."""

from __future__ import annotations

import os
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from ppaux.observer.keyorder import key_repr

PROBE = (
    "from ppaux.observer.walk import _key_text\n"
    "tags = frozenset(f'tag_{n}' for n in range(30))\n"
    "print(_key_text(tags)); print(repr(tags))\n"
)


def _under_seed(seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_frozenset_key_has_one_text_whatever_the_hash_seed():
    (shown_1, repr_1), (shown_2, repr_2) = _under_seed("1"), _under_seed("2")
    assert repr_1 != repr_2  # Python's own repr follows the seed
    assert shown_1 == shown_2


PLAIN = st.recursive(
    st.one_of(st.text(max_size=5), st.integers(), st.none(), st.booleans()),
    lambda inner: st.tuples(inner, inner),
    max_leaves=6,
)


@given(PLAIN)
def test_a_key_with_no_frozenset_is_its_repr(key):
    assert key_repr(key) == repr(key)


KEYS = st.recursive(
    st.text(max_size=5),
    lambda inner: st.frozensets(inner, max_size=4) | st.tuples(inner) | st.tuples(inner, inner),
    max_leaves=8,
)


@given(KEYS)
def test_a_keys_text_reads_back_as_an_equal_key(key):
    assert eval(key_repr(key), {"frozenset": frozenset}) == key
