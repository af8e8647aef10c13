"""How ppaux starts the interpreters that run the target: the check's child and rank 0's process.

Both are isolated as ``python -I`` isolates (no ``PYTHON*`` variable read at start, no user
site, the current directory not first on the path), with one exception: a valid
``PYTHONHASHSEED`` in the user's environment. sglang starts each scheduler (each pipeline
stage) as a fresh interpreter, each with a hash seed of its own unless the user exported
``PYTHONHASHSEED`` for all of them; ``-I`` would ignore it. Where it is set, the interpreter
starts with ``-s -P`` (what ``-I`` implies besides ``-E``) and an environment whose only
``PYTHON*`` variable is ``PYTHONHASHSEED``; the other ``PYTHON*`` variables are put back in
``os.environ`` once it has started (:func:`put_back`), so that the target sees the
environment it would see under ``-I``.

Imports nothing beyond the standard library.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["put_back", "started"]

#: The largest seed Python accepts (``PYTHONHASHSEED`` is "random" or 0 to this).
LARGEST_HASH_SEED = 4294967295


#: The blanks C's ``strtoul`` skips before a number (``isspace`` in the C locale).
_C_BLANKS = " \t\n\v\f\r"


def seed_of(value: str) -> int | None:
    """The hash seed Python starts with under ``PYTHONHASHSEED=value``: None for a random
    one ("random", or empty, which Python takes as unset); raises ValueError where Python
    refuses to start. Read as CPython reads it (``config_init_hash_seed``, 3.9 to 3.13:
    ``strtoul`` in base 10, the whole value used, at most 4294967295)."""
    import struct

    if value in ("", "random"):
        return None
    rest = value.lstrip(_C_BLANKS)
    sign = rest[:1] if rest[:1] in ("+", "-") else ""
    digits = rest[len(sign) :]
    if not digits or not all("0" <= c <= "9" for c in digits):
        raise ValueError(f"PYTHONHASHSEED={value!r} is not a number Python reads")
    whole = int(digits)
    bits = 8 * struct.calcsize("L")  # C's unsigned long, as strtoul returns it
    if whole >= 1 << bits:
        raise ValueError(f"PYTHONHASHSEED={value!r} is out of range")
    seed = (-whole) % (1 << bits) if sign == "-" else whole  # strtoul negates in unsigned
    if seed > LARGEST_HASH_SEED:
        raise ValueError(f"PYTHONHASHSEED={value!r} is out of range")
    return seed


def valid_seed(value: str) -> bool:
    """Whether Python starts with ``PYTHONHASHSEED=value`` (else it refuses to start)."""
    try:
        seed_of(value)
    except ValueError:
        return False
    return True


def started(env: Mapping[str, str]) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """For an interpreter started with ``env``: its isolation options, the environment it
    starts with, and the ``PYTHON*`` entries to put back once it has started."""
    seed = env.get("PYTHONHASHSEED")
    if seed is None or not valid_seed(seed):
        return ["-I"], dict(env), {}
    later = {k: v for k, v in env.items() if k.startswith("PYTHON") and k != "PYTHONHASHSEED"}
    return ["-s", "-P"], {k: v for k, v in env.items() if k not in later}, later


def put_back(later: Mapping[str, str]) -> None:
    """The ``PYTHON*`` entries :func:`started` held back, in this process's environment."""
    for key, value in later.items():
        os.environ[str(key)] = str(value)
