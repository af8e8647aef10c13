"""SARIF 2.1.0, as GitHub code scanning and other SARIF viewers read it.

One run per report. The driver lists the catalogue rules its results use (id, name,
descriptions, help in text and Markdown, default level, tags); each finding is a result pointing
at its file, stage or dump (``region.startLine`` 1: code scanning places an alert by its
region), with the key in the message and in the result's properties; a finding with a source
``location`` (a capture's culprit, a log's line) points at that file and line instead (its
``region``), so code scanning annotates the line, and keeps the dump as a related location.
Inputs that could not be read become error notifications of the invocation, which is then not
successful; the report's notes follow them as notifications of level ``note``. The
``automationDetails.id`` (``ppaux/<command>/``) keeps uploads of different commands apart.
"""

from __future__ import annotations

import hashlib
import os
import urllib.parse
from typing import Any

from ppaux.report.document import Report
from ppaux.report.findings import Finding, Location, Rule, Severity
from ppaux.report.formats import strict_json

__all__ = ["SARIF_SCHEMA_URI", "artifact_uri", "document", "render"]

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}

# GitHub sorts security alerts by this score (0.0 - 10.0): running code on load is "high".
_SECURITY_SEVERITY = {Severity.ERROR: "8.0", Severity.WARNING: "5.0", Severity.INFO: "2.0"}


def artifact_uri(path: str) -> str:
    """A URI reference for ``path``: relative paths stay relative (GitHub maps them onto the
    repository), absolute ones become ``file:`` URIs; unsafe characters are percent-encoded."""
    posix = path.replace(os.sep, "/") if os.sep != "/" else path
    if os.path.isabs(path):
        return "file://" + urllib.parse.quote(posix if posix.startswith("/") else "/" + posix)
    return urllib.parse.quote(posix)


def _rule_descriptor(rule: Rule) -> dict[str, Any]:
    from ppaux.report.formats.rules import rule_markdown

    help_text = (
        f"{rule.explanation}\n\nLikely causes:\n"
        + "\n".join(f"- {c}" for c in rule.causes)
        + f"\n\nFix: {rule.fix}"
        + (f"\n\nExample: {rule.example}" if rule.example else "")
    )
    properties: dict[str, Any] = {"tags": ["ppaux", rule.area] if rule.area else ["ppaux"]}
    if rule.area == "security":  # the "security" tag and score put it among security alerts
        properties["security-severity"] = _SECURITY_SEVERITY[rule.severity]
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.explanation},
        "help": {"text": help_text, "markdown": rule_markdown(rule, level=3, anchor=False)},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": properties,
    }


def _fingerprint(finding: Finding) -> str:
    # Stable across runs: the same code, place, key and message give the same value.
    material = "\0".join((finding.code, finding.path, finding.key or "", finding.message))
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def _location(path: str) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(path)}}}


def _file_location(path: str) -> dict[str, Any]:
    # A finding about a whole file, stage or dump: its first line, since code scanning places
    # an alert by region.startLine and shows none where a result has no region.
    location = _location(path)
    location["physicalLocation"]["region"] = {"startLine": 1}
    return location


def _code_location(location: Location) -> dict[str, Any]:
    # The source line that caused the finding: code scanning annotates it. A line of a
    # compressed log's text is no line of the file: the file alone, the line in the message.
    physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(location.file)}}
    if location.decompressed:
        return {
            "physicalLocation": physical,
            "message": {"text": f"line {location.line} of the decompressed text"},
        }
    physical["region"] = {"startLine": location.line}
    return {
        "physicalLocation": physical,
        "logicalLocations": [{"fullyQualifiedName": location.function, "kind": "function"}],
    }


def _result(finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    text = (
        # The key is already shown escaped: a repr would escape its backslashes once more.
        f"{finding.message} (key '{finding.key}')" if finding.key is not None else finding.message
    )
    if finding.sglang_error:
        text += f". Predicts the sglang error: {finding.sglang_error}"
    properties: dict[str, Any] = {
        "key": finding.key,
        "severity": finding.severity.value,
        # Which of the rule's messages this is (``ruleId`` stays the code), whatever its words.
        "message_id": finding.message_id,
    }
    if finding.sglang_error:
        properties["sglang_error"] = finding.sglang_error
    if finding.hint:
        properties["fix"] = finding.hint
    if finding.extra:
        properties["extra"] = finding.extra
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _LEVEL[finding.severity],
        "message": {"text": text},
        "locations": [_file_location(finding.path)],
        "partialFingerprints": {"ppauxFinding/v1": _fingerprint(finding)},
        "properties": properties,
    }
    if finding.location is not None:
        # The code is where the problem was made; the file it was found in stays related.
        result["locations"] = [_code_location(finding.location)]
        result["relatedLocations"] = [
            dict(_location(finding.path), id=1, message={"text": "found in"})
        ]
    if finding.code in index:
        result["ruleIndex"] = index[finding.code]
    return result


def document(report: Report) -> dict[str, Any]:
    """The SARIF log as a JSON-able dict."""
    from ppaux._version import __version__
    from ppaux.report.catalogue import RULES

    # The rules the results use, in the catalogue's order: the whole catalogue would be about
    # 250 KB of help text in every upload, for one finding.
    used = {f.code for f in report.findings}
    rules = [rule for rule in RULES.values() if rule.code in used]
    index = {rule.code: i for i, rule in enumerate(rules)}
    notifications = [
        {
            "level": "error",
            "message": {"text": f"could not read this input: {p.message}"},
            "locations": [_location(p.path)],
        }
        for p in report.problems
    ]
    notifications += [{"level": "note", "message": {"text": note}} for note in report.notes]
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "ppaux",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_rule_descriptor(r) for r in rules],
                    }
                },
                "automationDetails": {"id": f"ppaux/{report.command.replace(' ', '-')}/"},
                "invocations": [
                    {
                        "executionSuccessful": not report.problems,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": [_result(f, index) for f in report.findings],
            }
        ],
    }


def render(report: Report) -> str:
    """The SARIF log, indented, ending in a newline."""
    return strict_json.dumps(document(report))
