"""Shared fixtures, and the torch gate: the torch-free tests run where torch is absent.

Modules of the torch wing (replay, transport, capture) import torch at the top and are not
collected without it; a test elsewhere that needs torch carries ``@pytest.mark.torch`` and is
skipped without it. ``PPAUX_TEST_NO_TORCH=1`` hides an installed torch from this process, to
check that split where torch is installed (``tests/test_layout.py`` runs it).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

import pytest
from helpers import REPO


class _NoTorch(importlib.abc.MetaPathFinder):
    """Makes ``import torch`` fail as it does where torch is not installed."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if os.environ.get("PPAUX_TEST_NO_TORCH") == "1":
    sys.meta_path.insert(0, _NoTorch())
    HAVE_TORCH = False
else:
    HAVE_TORCH = importlib.util.find_spec("torch") is not None

#: Test modules that import torch at the top: the torch wing, and tests that make real tensors.
TORCH_MODULES = [
    "tensor_tags.py",
    "test_capture.py",
    "test_capture_cli.py",
    "test_capture_hop_hooks.py",
    "test_capture_plugin.py",
    "test_capture_story.py",
    "test_capture_wheels.py",
    "test_check_skew_distributed.py",
    "test_checks.py",
    "test_materialize.py",
    "test_replay.py",
    "test_replay_cuda.py",
    "test_replay_distributed.py",
    "test_replay_fixtures.py",
    "pp_messages.py",
    "test_sglang_transport.py",
    "test_transport.py",
    "test_transport_wheels.py",
    "test_wire.py",
]

collect_ignore = [] if HAVE_TORCH else list(TORCH_MODULES)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if HAVE_TORCH:
        return
    skip = pytest.mark.skip(reason="needs torch")
    for item in items:
        if item.get_closest_marker("torch"):
            item.add_marker(skip)


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run the test from the repository root (fixture paths are relative to it)."""
    monkeypatch.chdir(REPO)
    yield


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An sglang-shaped module tree (``tests/sglang_shaped.py``) in the test's directory, first on
    ``sys.path``; afterwards capture is uninstalled and the tree's modules are forgotten."""
    import sglang_shaped

    from ppaux import capture
    from ppaux.capture import host

    root = sglang_shaped.build(tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    sglang_shaped.forget()
    host.sglang_version.cache_clear()
    yield root
    capture.uninstall()
    sglang_shaped.forget()
    host.sglang_version.cache_clear()
