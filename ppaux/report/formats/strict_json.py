"""JSON text that every strict parser accepts: non-finite floats are written as strings.

Python's :func:`json.dumps` writes a float NaN or infinity as the bare tokens ``NaN``,
``Infinity`` and ``-Infinity``, which are not JSON: strict parsers (jq, Go, Rust, the SARIF and
GitLab validators) refuse the whole document. ppaux writes them as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"`` instead (see docs/report-schema.md). A value from a file may
hold one (capture metadata, a float in a dict); the common case pays nothing for the check.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["dumps", "finite"]


def finite(value: object) -> Any:
    """``value`` with every non-finite float (in dicts, lists and tuples) made a string."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: object) -> str:
    """``value`` as indented, strict JSON (UTF-8 text, not ASCII-escaped), ending in a newline."""
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError:  # a NaN or an infinity somewhere: rare, so the walk is paid only then
        text = json.dumps(finite(value), indent=2, ensure_ascii=False, allow_nan=False)
    return text + "\n"
