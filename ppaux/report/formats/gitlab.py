"""GitLab code quality: a Code Climate JSON array, as ``artifacts:reports:codequality`` reads it.

Each finding is one issue with the fields GitLab requires (``description``, ``check_name``,
``fingerprint``, ``severity``, ``location.path``, ``location.lines.begin``). Dumps and
fingerprints have no lines, so ``begin`` is 1; a finding with a source ``location`` (a capture's
culprit) gives that file and line. Severities map error -> critical, warning ->
major, info -> info; an input that could not be read is a ``blocker`` issue named
``ppaux/input-not-checked``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ppaux.report.document import Report
from ppaux.report.findings import Severity
from ppaux.report.formats import strict_json

__all__ = ["CHECK_NOT_READ", "issues", "render"]

#: check_name of the issue reported for an input that could not be read.
CHECK_NOT_READ = "ppaux/input-not-checked"

_SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}
_CATEGORY = {"security": "Security", "skew": "Compatibility"}


def _fingerprint(parts: tuple[str, ...], seen: dict[str, int]) -> str:
    # GitLab treats equal fingerprints as one issue: repeats of an identical finding get a
    # counter so that none of them disappears, and the first keeps the stable value. ``seen``
    # holds every value given out, and for each material the last counter used, so that n
    # repeats cost n hashes, not n**2 / 2.
    material = "\0".join(parts)
    counter = seen.get("\0" + material, 0)
    while True:
        counter += 1
        text = material if counter == 1 else f"{material}\0{counter}"
        value = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        if value not in seen:
            break
    seen["\0" + material] = counter
    seen[value] = 0
    return value


def issues(report: Report) -> list[dict[str, Any]]:
    """The Code Climate issues, findings first, then unreadable inputs."""
    from ppaux.report.catalogue import RULES

    seen: dict[str, int] = {}
    out = []
    for f in report.findings:
        rule = RULES.get(f.code)
        where = f" [{f.key}]" if f.key is not None else ""
        body = f.hint
        if f.sglang_error:
            body = f"Predicts the sglang error: {f.sglang_error}\n\nFix: {f.hint}"
        issue = {
            "type": "issue",
            "check_name": f.code,
            "description": f"{f.code}{where}: {f.message}",
            "categories": [_CATEGORY.get(rule.area if rule else "", "Bug Risk")],
            "severity": _SEVERITY[f.severity],
            "fingerprint": _fingerprint((f.code, f.path, f.key or "", f.message), seen),
            "location": {"path": f.path, "lines": {"begin": 1}},
        }
        if f.location is not None:  # the line of code that caused it
            issue["location"] = {
                "path": f.location.file,
                # a compressed log's line is of its text, not its bytes: the file alone
                "lines": {"begin": 1 if f.location.decompressed else f.location.line},
            }
            if f.location.decompressed:
                body = f"At {f.location.file} (decompressed):{f.location.line}.\n\n{body}"
            body = f"Found in {f.path}.\n\n{body}" if body else f"Found in {f.path}."
        if body:
            issue["content"] = {"body": body}
        out.append(issue)
    for p in report.problems:
        out.append(
            {
                "type": "issue",
                "check_name": CHECK_NOT_READ,
                "description": f"could not read this input: {p.message}",
                "categories": ["Bug Risk"],
                "severity": "blocker",
                "fingerprint": _fingerprint((CHECK_NOT_READ, p.path, p.message), seen),
                "location": {"path": p.path, "lines": {"begin": 1}},
            }
        )
    return out


def render(report: Report) -> str:
    """The JSON array, indented, ending in a newline."""
    return strict_json.dumps(issues(report))
