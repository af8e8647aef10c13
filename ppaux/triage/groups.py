"""The margins of an exception group's traceback (Python 3.11 and later).

A group (``ExceptionGroup``, asyncio's ``TaskGroup``, anyio's) prints its traceback and each
of its sub-exceptions behind a margin: ``  + Exception Group Traceback (most recent call
last):`` opens it, every line after it stands behind ``  | `` (two more spaces per level of
nesting), and rules part the sub-exceptions (``  +-+---------------- 1 ----------------``,
``    +---------------- 2 ----------------``) and close the group
(``    +------------------------------------``). Inside the margin the lines are a
traceback's own: frames, the group's exception line, each sub-exception's traceback.

Python shortens a large group in two complete forms, neither of them a cut: past the
fifteenth sub-exception a rule titled ``...`` and ``and N more exceptions``; past
``max_group_depth`` (10) levels of nesting, ``... (max_group_depth is 10)`` in place of the
deeper group (:func:`shortened`).
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = [
    "GROUP_HEADER",
    "MAX_DEPTH",
    "GroupRule",
    "group_rule",
    "left_out",
    "shortened",
    "too_deep",
    "unmargined",
]

#: The first line of a group's traceback, behind its ``+`` margin.
GROUP_HEADER = "Exception Group Traceback (m"

#: Spaces a margin stands behind, at most (two per level of nesting).
_MAX_MARGIN = 64
#: A line behind a group's margin: the spaces of its level, ``|`` (or the header's ``+``),
#: one space before the text (none on an empty line).
_MARGIN = lazy(rf"^(?P<indent> {{0,{_MAX_MARGIN}}})[|+](?: |$)")
#: A rule between two sub-exceptions (titled with the next one's number, or ``...`` past
#: those shown), or the rule that closes the group (untitled).
_RULE = lazy(
    rf"^(?P<indent> {{0,{_MAX_MARGIN}}})\+(?P<nests>-\+)?-{{4,}}"
    r"(?: (?P<title>\d{1,9}|\.\.\.) -{4,})?\s*$"
)

#: What Python writes behind a margin in place of what it leaves out of a large group: the
#: count of sub-exceptions left out, or the depth past which nested groups are.
_SHORTENED = lazy(
    r"^(?:and (?P<more>\d{1,9}) more exceptions?|"
    r"\.\.\. \(max_group_depth is (?P<depth>\d{1,9})\))\s*$"
)


def shortened(text: str) -> bool:
    """True for the text (behind its margin) that stands for sub-exceptions or levels of
    nesting Python left out: ``and 5 more exceptions``, ``... (max_group_depth is 10)``."""
    return _SHORTENED.match(text) is not None


#: A line behind a margin deeper than ppaux reads (more than 32 levels of nesting).
_TOO_DEEP = lazy(rf"^ {{{_MAX_MARGIN + 1},}}[|+]")
#: Levels of nesting read: the margin's spaces, two per level.
MAX_DEPTH = _MAX_MARGIN // 2


def too_deep(text: str) -> bool:
    """True for a line behind a group's margin nested deeper than :data:`MAX_DEPTH` levels:
    the group's, left unread."""
    return _TOO_DEEP.match(text) is not None


def left_out(text: str) -> tuple[int, int]:
    """(sub-exceptions left out, the depth past which nested groups are left out) that the
    shortened form ``text`` says (each 0 where it says none): ``and 5 more exceptions`` gives
    ``(5, 0)``, ``... (max_group_depth is 10)`` gives ``(0, 10)``."""
    found = _SHORTENED.match(text)
    if found is None:
        return 0, 0
    return int(found.group("more") or 0), int(found.group("depth") or 0)


class GroupRule:
    """A rule line of a group: its indentation, whether it opens a sub-exception (titled)
    or closes the group (untitled), and whether it opens a level of nesting (``+-+``: the
    exception line before it is a group's own, its sub-exceptions follow)."""

    __slots__ = ("indent", "nests", "titled")

    def __init__(self, indent: int, titled: bool, nests: bool = False) -> None:
        self.indent = indent
        self.titled = titled
        self.nests = nests


def group_rule(text: str) -> GroupRule | None:
    """The rule ``text`` is, or None when it is none."""
    found = _RULE.match(text)
    if found is None:
        return None
    return GroupRule(
        len(found.group("indent")),
        found.group("title") is not None,
        found.group("nests") is not None,
    )


def unmargined(text: str) -> tuple[int, str] | None:
    """(the margin's indentation, the text behind it) of a line behind a group's margin
    (``    | RuntimeError: ...`` gives ``(4, "RuntimeError: ...")``), or None."""
    found = _MARGIN.match(text)
    if found is None:
        return None
    return len(found.group("indent")), text[found.end() :]
