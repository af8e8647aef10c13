"""The judge's plain words and data for one step: a step's entry in the JSON report, the
table's cells and the short texts findings quote. Pure functions of plain data; imports nothing
beyond the standard library and the records' own types.
"""

from __future__ import annotations

from typing import Any

from ppaux.observer.compare import Difference
from ppaux.observer.paths import Fault
from ppaux.report import Finding

__all__ = [
    "MAX_SENT_TEXT",
    "SENT_LISTED",
    "about_requests",
    "cut",
    "difference_entry",
    "fault_of",
    "first_line",
    "first_sentence",
    "overlaps",
    "step_entry",
    "verdict_cell",
    "where",
]


#: The characters of a text the child sent (a reason, a value, an error's type or message) that
#: an error line or a report keeps: the child cuts its own messages there too.
MAX_SENT_TEXT = 500


def cut(value: object) -> str:
    """``value`` as text, its first :data:`MAX_SENT_TEXT` characters where it is longer (then
    saying how long it was)."""
    text = str(value)
    if len(text) <= MAX_SENT_TEXT:
        return text
    return f"{text[:MAX_SENT_TEXT]}... ({len(text):,} characters)"


def fault_of(data: object) -> Fault | None:
    if not isinstance(data, dict):
        return None
    return Fault(
        stage=cut(data.get("stage")),
        error_type=cut(data.get("error_type")),
        message=cut(data.get("message", "")),
        side=cut(data.get("side")),
        method=data.get("method"),
        name=data.get("name"),
        value=data.get("value"),
        where=data.get("where") if isinstance(data.get("where"), dict) else None,
    )


#: Names of what a step sent that its entry in the JSON report lists; the rest are counted
#: (``sent_left_out``), so that a report does not grow with the keys times the steps.
SENT_LISTED = 50


def step_entry(batch_size: int, index: int, sent: list[str]) -> dict[str, Any]:
    """A step's entry in the JSON report: what was ``sent`` (the first :data:`SENT_LISTED`
    names, and how many more), where driving the observer (``driving``), the single-stage path
    and the PP path stopped (None: they did not), and the differences between the two
    paths."""
    return {
        "batch_size": batch_size,
        "step": index,
        "sent": sent[:SENT_LISTED],
        "sent_left_out": max(len(sent) - SENT_LISTED, 0),
        "driving": None,
        "single_stage": None,
        "pp": None,
        "differences": [],
    }


def difference_entry(where: str, item: Difference) -> dict[str, Any]:
    return {
        "where": where,
        "path": item.path,
        "what": item.what,
        "single_stage": item.left,
        "pp": item.right,
    }


def verdict_cell(fault: Fault) -> str:
    """A table cell: who raised what ('the last stage's add: <message>')."""
    message = first_sentence(fault.message)
    if fault.stage == "hook":
        where = {"last stage": "the last stage", "rank 0": "rank 0"}.get(fault.side, fault.side)
        return f"{fault.method} raised {fault.error_type} on {where}: {message}"
    what = message if fault.error_type == "RuntimeError" else f"{fault.error_type}: {message}"
    return f"{_side(fault)}: {what}"


def _side(fault: Fault) -> str:
    if fault.stage == "add":
        return "the last stage's add"
    if fault.stage == "pop":
        return "rank 0's pop"
    if fault.stage == "wire":
        return f"the wire's {fault.side}"
    return fault.side


def where(batch_size: int, index: int) -> str:
    return f"batch size {batch_size}, step {index}"


def first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def first_sentence(text: str) -> str:
    """torch's long dispatcher messages, cut after their first sentence."""
    if len(text) <= 160:
        return text
    end = text.find(". ")
    return text[: end + 1] + " ..." if 0 < end < 160 else text[:157] + "..."


def overlaps(path: str, other: str) -> bool:
    """Whether one of two leaf paths is the other or lies within it ('.a' and '.a[3]')."""
    short, long = sorted((path, other), key=len)
    return long == short or (long.startswith(short) and long[len(short)] in "[.")


def about_requests(item: Finding) -> bool:
    """A finding about what ``consume`` did with the requests (PP712, or consume raising)."""
    return item.code == "PP712" or (
        item.code == "PP710" and (item.extra or {}).get("method") == "consume"
    )
