"""Test helper: save tensors as if they lived on another device, on a CPU-only machine."""

from __future__ import annotations

from contextlib import contextmanager

import torch


@contextmanager
def saved_as(location: str):
    """Tag every storage with ``location`` at save time (torch asks location_tag for it)."""
    original = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: location
    try:
        yield
    finally:
        torch.serialization.location_tag = original
