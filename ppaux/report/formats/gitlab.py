"""GitLab code quality: a Code Climate JSON array, as ``artifacts:reports:codequality`` reads it.

Each finding is one issue with the fields GitLab requires (``description``, ``check_name``,
``fingerprint``, ``severity``, ``location.path``, ``location.lines.begin``). Dumps and
fingerprints have no lines, so ``begin`` is 1. Severities map error -> critical, warning ->
major, info -> info; an input that could not be read is a ``blocker`` issue named
``ppaux/input-not-checked``.
"""

from __future__ import annotations

from typing import Any

import hashlib
import json

from ppaux.report.findings import Severity
from ppaux.report.document import Report

__all__ = ["CHECK_NOT_READ", "issues", "render"]

#: check_name of the issue reported for an input that could not be read.
CHECK_NOT_READ = "ppaux/input-not-checked"

_SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}
_CATEGORY = {"security": "Security", "skew": "Compatibility"}


def _fingerprint(parts: tuple[str, ...], seen: set[str]) -> str:
    # GitLab treats equal fingerprints as one issue: repeats of an identical finding get a
    # counter so that none of them disappears, and the first keeps the stable value.
    material = "\0".join(parts)
    value = hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()
    counter = 1
    while value in seen:
        counter += 1
        value = hashlib.sha256(f"{material}\0{counter}".encode("utf-8", "surrogatepass")).hexdigest()
    seen.add(value)
    return value


def issues(report: Report) -> list[dict[str, Any]]:
    """The Code Climate issues, findings first, then unreadable inputs."""
    from ppaux.report.catalogue import RULES

    seen: set[str] = set()
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
        if body:
            issue["content"] = {"body": body}
        out.append(issue)
    for p in report.problems:
        out.append({
            "type": "issue",
            "check_name": CHECK_NOT_READ,
            "description": f"could not read this input: {p.message}",
            "categories": ["Bug Risk"],
            "severity": "blocker",
            "fingerprint": _fingerprint((CHECK_NOT_READ, p.path, p.message), seen),
            "location": {"path": p.path, "lines": {"begin": 1}},
        })
    return out


def render(report: Report) -> str:
    """The JSON array, indented, ending in a newline."""
    return json.dumps(issues(report), indent=2, ensure_ascii=False) + "\n"
