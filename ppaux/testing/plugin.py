"""ppaux's pytest plugin (entry point ``pytest11``: ``ppaux``): the fixture ``pp_safe``.

It adds one fixture and nothing else: no hook, no option, no import of torch or of ppaux's
checks until a test asks for the fixture. ``pp_safe(observer, **options)`` is
:func:`ppaux.testing.assert_pp_safe`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["pp_safe"]


@pytest.fixture
def pp_safe() -> Callable[..., Any]:
    """:func:`ppaux.testing.assert_pp_safe`: fails the test, listing each finding, when the
    sampling observer given is not PP-safe."""
    from ppaux.testing import assert_pp_safe

    return assert_pp_safe
