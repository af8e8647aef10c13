"""``PYTHONHASHSEED`` is read as CPython reads it (:func:`ppaux.observer.interpreter.seed_of`):
the expectation is a real interpreter started under each value (whether it starts, and the
hash of a string it then gives, against the seed ppaux read)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ppaux.observer.interpreter import seed_of, valid_seed

PROBE = "import sys; print(sys.flags.hash_randomization, hash('ppaux-seed-probe'))"


def _python_under(seed: str) -> tuple[int, str]:
    """How a real interpreter starts with ``PYTHONHASHSEED=seed``: its exit code and what it
    printed (the hash randomization flag and a string's hash)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = seed
    done = subprocess.run(
        [sys.executable, "-S", "-c", PROBE], env=env, capture_output=True, text=True, timeout=60
    )
    return done.returncode, done.stdout.strip()


SEEDS = st.text(alphabet=" \t\n\v\f\r+-0123456789x٣", max_size=8)


@settings(max_examples=12, deadline=None)
@given(SEEDS)
@example(" 1")
@example("+1")
@example("-0")
@example("\t\v7")
@example("1 ")
@example(" ")
@example("-1")
@example("+")
@example("")
@example("random")
@example("4294967296")
@example("-18446744073709551615")  # strtoul negates in unsigned: 1 where unsigned long has 64 bits
def test_the_seed_read_is_the_one_python_starts_with(value):
    code, printed = _python_under(value)
    if code != 0:
        assert not valid_seed(value)
        with pytest.raises(ValueError):
            seed_of(value)
        return
    assert valid_seed(value)
    seed = seed_of(value)
    if seed is None:
        assert printed.split()[0] == "1"
    else:
        assert _python_under(str(seed)) == (0, printed)
