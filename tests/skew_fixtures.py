"""Paths of the check-skew fixtures (fixtures/skew/) and the corruptions the tests make of them."""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["BAD", "SETS", "SKEW", "TREES", "copy_tree", "fingerprint_set", "tree"]

SKEW = Path(__file__).resolve().parent.parent / "fixtures" / "skew"
TREES = SKEW / "trees"
SETS = SKEW / "fingerprints"
BAD = SKEW / "bad"

TRANSPORT = "sglang/srt/sampling/sampling_observer_pp.py"


def tree(name: str) -> str:
    """The fixture tree ``name`` (a directory holding ``sglang/``)."""
    return str(TREES / name)


def fingerprint_set(name: str) -> list[str]:
    """The fingerprint files of one fixture deployment, pp0 first."""
    return sorted(str(p) for p in (SETS / name).glob("*.json"))


def copy_tree(name: str, target: Path) -> Path:
    """A writable copy of a fixture tree, for the corruptions a test makes."""
    destination = target / name
    shutil.copytree(TREES / name, destination)
    return destination
