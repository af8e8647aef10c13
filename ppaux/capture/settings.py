"""The capture's settings: the ``PPAUX_CAPTURE_*`` variables, their defaults and every limit.

:class:`CaptureConfig` is what a running capture obeys; :func:`config_from_env` reads it the way
the sglang plugin does. Every bound of the capture lives here: how many files and bytes a
directory may hold, how long a writer waits for the directory lock, how long the skipped counter
may be, how many messages the checkpoints follow at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_FILES",
    "ENV_DIR",
    "ENV_MAX_BYTES",
    "ENV_MAX_FILES",
    "ENV_SAMPLE_EVERY",
    "ENV_STRICT",
    "ENV_WHEN",
    "LOCK_TIMEOUT_S",
    "MAX_COUNTER_BYTES",
    "MAX_FOLLOWED_MESSAGES",
    "CaptureConfig",
    "config_from_env",
    "parse_size",
]

ENV_DIR = "PPAUX_CAPTURE_DIR"
ENV_WHEN = "PPAUX_CAPTURE_WHEN"
ENV_MAX_FILES = "PPAUX_CAPTURE_MAX_FILES"
ENV_MAX_BYTES = "PPAUX_CAPTURE_MAX_BYTES"
ENV_SAMPLE_EVERY = "PPAUX_CAPTURE_SAMPLE_EVERY"
#: '1' makes the last stage raise at the first hop where an output message is dirty.
ENV_STRICT = "PPAUX_CAPTURE_STRICT"

DEFAULT_MAX_FILES = 100
DEFAULT_MAX_BYTES = 1 << 30

#: How long a writer waits for the directory lock before it gives the capture up: the critical
#: section is a directory listing and a rename, so a longer wait means something is stuck.
LOCK_TIMEOUT_S = 5.0
#: The skipped counter is a few digits; a longer file is not ppaux's.
MAX_COUNTER_BYTES = 32
#: Output messages the checkpoints follow at once per process (sglang keeps one or two in
#: flight per micro-batch); the oldest is forgotten beyond this.
MAX_FOLLOWED_MESSAGES = 64

_WHEN = ("error", "always")
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@dataclass(frozen=True)
class CaptureConfig:
    """Where captures go and how many: ``when`` is 'error' (failing calls only) or 'always'
    (every ``sample_every``-th call of each function as well, for healthy traffic).

    Bounds count finished capture files on disk; once either is reached new captures are
    skipped and counted, and the first ones are kept. ``strict`` makes the last stage raise
    at the first hop where an output message carries a non-tensor auxiliary value.
    """

    directory: Path
    when: str = "error"
    max_files: int = DEFAULT_MAX_FILES
    max_bytes: int = DEFAULT_MAX_BYTES
    sample_every: int = 1
    strict: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "directory", Path(self.directory))
        if self.when not in _WHEN:
            raise ValueError(f"when must be 'error' or 'always', not {self.when!r}")
        for name in ("max_files", "max_bytes", "sample_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")
        if not isinstance(self.strict, bool):
            raise ValueError(f"strict must be True or False, not {self.strict!r}")


def parse_size(text: str) -> int:
    """Bytes from '1073741824', '64M', '1G' or '1GiB' (K, M, G, T are powers of 1024)."""
    raw = text.strip()
    body = raw.upper().removesuffix("IB").removesuffix("B")
    unit = body[-1:] if body[-1:] in _SIZE_UNITS and body[-1:] else ""
    number = body[: len(body) - len(unit)].strip()
    if not number.isdigit():
        raise ValueError(f"{raw!r} is not a size such as 1073741824, 512M or 1G")
    return int(number) * _SIZE_UNITS[unit]


def config_from_env(environ: Mapping[str, str] | None = None) -> CaptureConfig | None:
    """The configuration the plugin would use: None when ``PPAUX_CAPTURE_DIR`` is unset or empty.

    Raises :class:`ValueError` naming the variable when a ``PPAUX_CAPTURE_*`` value is invalid.
    """
    env = os.environ if environ is None else environ
    directory = env.get(ENV_DIR, "").strip()
    if not directory:
        return None
    fields: dict[str, Any] = {"directory": Path(directory)}
    when = env.get(ENV_WHEN, "").strip()
    if when:
        if when not in _WHEN:
            raise ValueError(f"{ENV_WHEN}={when!r}: must be 'error' or 'always'")
        fields["when"] = when
    parsers: tuple[tuple[str, str, Callable[[str], int], str], ...] = (
        (ENV_MAX_FILES, "max_files", int, "a whole number"),
        (ENV_MAX_BYTES, "max_bytes", parse_size, "a size such as 1073741824, 512M or 1G"),
        (ENV_SAMPLE_EVERY, "sample_every", int, "a whole number"),
    )
    for name, field, parse, expected in parsers:
        text = env.get(name, "").strip()
        if not text:
            continue
        try:
            value = parse(text)
        except ValueError:
            raise ValueError(f"{name}={text!r}: not {expected}") from None
        if value < 1:
            raise ValueError(f"{name}={text!r}: must be at least 1")
        fields[field] = value
    strict = env.get(ENV_STRICT, "").strip()
    if strict:
        if strict not in ("0", "1"):
            raise ValueError(f"{ENV_STRICT}={strict!r}: must be 0 or 1")
        fields["strict"] = strict == "1"
    return CaptureConfig(**fields)
