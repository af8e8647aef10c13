"""Where a finding of ``check-observer`` points (its ``at:``): plain data, in the parent.

The line of the target that made the value a finding is about, from the child's 'made' records
(the lines each hook ran in the target's own files, :mod:`.lines`): for a difference in what
rank 0 rebuilt, the sender's ``to_pp_tensors`` where what the wire carried already differs from
the output, else ``from_pp_tensors``; for a request after ``consume``, ``consume``. Where no
record names the value, the ``def`` of the method whose code the finding is about (the
'locations' record). Imports nothing beyond the standard library and :mod:`.compare`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ppaux.observer.compare import differences
from ppaux.report import Finding, Location

__all__ = ["Places"]

#: Whose code each finding is about: the subject and its method (None: the class itself).
_MADE_IN = {
    "PP701": ("output", None),
    "PP702": ("rank0", None),
    "PP703": ("output", "to_pp_tensors"),
    "PP704": ("output", "to_pp_tensors"),
    "PP705": ("output", "to_pp_tensors"),
    "PP706": ("output", "to_pp_tensors"),
    "PP707": ("rank0", "from_pp_tensors"),
    "PP709": ("output", "to_pp_tensors"),
    "PP711": ("rank0", "from_pp_tensors"),
    "PP712": ("rank0", "from_pp_tensors"),
    "PP713": ("observer", "after_sample"),
    "PP717": ("output", "to_pp_tensors"),
}
_HOOK_SUBJECT = {
    "is_active": "observer",
    "before_grammar": "observer",
    "after_sample": "observer",
    "from_pp_tensors": "rank0",
    "to_pp_tensors": "output",
    "copy_to_host": "output",
}


@dataclass
class Places:
    """What the child said of where things are: ``locations`` (per subject and method, its
    ``def``), ``made`` (per hook, the lines that made each named value), and what ``add`` sent
    in the first step that sent anything (``wire``) with that step's output
    (``wire_output``)."""

    locations: dict[str, Any] = field(default_factory=dict)
    made: dict[str, dict[str, Any]] = field(default_factory=dict)
    wire: dict[str, Any] = field(default_factory=dict)
    wire_output: dict[str, Any] = field(default_factory=dict)

    def located(self, item: Finding) -> Finding:
        """``item`` with the place it points at (see the module's docstring)."""
        import dataclasses

        if item.location is not None:
            return item
        subject, method = _MADE_IN.get(item.code, (None, None))
        if item.code == "PP710":
            said = item.extra.get("method")
            method = said if isinstance(said, str) else None
            subject = _HOOK_SUBJECT.get(method or "")
        elif item.code == "PP708":
            add = item.extra.get("stage") == "add"
            subject, method = ("output", "to_pp_tensors") if add else ("rank0", "from_pp_tensors")
        if subject is None:
            return item
        location = (self.locations.get(subject) or {}).get(method or "")
        made = self._made_location(item, method)
        if made is not None:
            return dataclasses.replace(item, location=made)
        if not isinstance(location, dict):
            return item
        return dataclasses.replace(item, location=Location.of(location))

    def _made_location(self, item: Finding, method: str | None) -> Location | None:
        """The line that made the value ``item`` is about: in the hook that made it (for a
        difference of what rank 0 rebuilt, the sender's ``to_pp_tensors`` where the wire
        already differs from the output, else ``from_pp_tensors``; for a request after
        ``consume``, ``consume``), the latest line that names it; None where no record says."""
        names = re.findall(r"[A-Za-z_]\w*", item.key or "")
        if item.code == "PP711":
            method = "to_pp_tensors" if self._sent_changed(names) else "from_pp_tensors"
        elif item.code == "PP712":
            method = "consume"
        made = self.made.get(method or "")
        if made is None:
            return None
        found = made["names"]
        place = next((found[n] for n in reversed(names) if _is_place(found.get(n))), None)
        if place is None:
            place = made.get("return")
        if not _is_place(place):
            return None
        assert isinstance(place, list)
        return Location(place[0], place[1], place[2])

    def _sent_changed(self, names: list[str]) -> bool:
        """Whether what add sent under one of ``names`` already differs from the output's
        field of that name (the sender changed it, not rank 0's rebuild)."""
        output = self.wire_output
        if not output or not self.wire:
            return False
        for name in names:
            sent = self.wire.get(f"[{name!r}]")
            own = output.get(f".{name}")
            if isinstance(sent, dict) and isinstance(own, dict):
                return bool(differences({"": own}, {"": sent}))
        return False


def _is_place(value: object) -> bool:
    """Whether ``value`` is a [file, line, function] a 'made' record gave."""
    return (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], str)
        and isinstance(value[2], str)
        and isinstance(value[1], int)
        and not isinstance(value[1], bool)
        and value[1] >= 1
    )
