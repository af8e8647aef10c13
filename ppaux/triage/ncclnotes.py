"""NCCL's warnings that report no failure: NCCL says what it could not use and goes on without
it. ``misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]`` is NCCL looking for
InfiniBand's verbs library on a host without it; it then uses its socket transport (a failure
that follows is told by its own lines)."""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["harmless_warning"]

_HARMLESS = lazy(r"NCCL WARN Failed to open libibverbs\.so(?:\[\.1\]|\.1)?\s*$")


def harmless_warning(text: str) -> bool:
    """True for an NCCL warning line ``text`` that reports no failure (NCCL goes on without
    what it names)."""
    return _HARMLESS.search(text.rstrip("\r\n")) is not None
