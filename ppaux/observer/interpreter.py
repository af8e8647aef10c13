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


def valid_seed(value: str) -> bool:
    """Whether Python starts with ``PYTHONHASHSEED=value`` (else it refuses to start)."""
    if value == "random":
        return True
    if not value.isascii() or not value.isdigit():
        return False
    return int(value) <= LARGEST_HASH_SEED


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
