"""Formatters: pure functions from a :class:`~ppaux.report.Report` to text, one module each."""

from __future__ import annotations

import enum

from ppaux.report import Report

__all__ = ["Format", "render"]


class Format(str, enum.Enum):
    """Output formats every command accepts with ``--format``."""

    TEXT = "text"
    JSON = "json"


def render(report: Report, fmt: Format, *, color: bool = False, width: int = 100) -> str:
    """Render ``report`` in ``fmt``; ``color`` and ``width`` matter only to the text format."""
    if fmt is Format.JSON:
        from ppaux.formats import json as json_format

        return json_format.render(report)
    from ppaux.formats import text

    return text.render(report, color=color, width=width)
