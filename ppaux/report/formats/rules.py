"""The rule catalogue as text, JSON and Markdown: ``ppaux rules``, SARIF rule help, the docs page.

Every view is a pure function of :class:`~ppaux.report.findings.Rule` objects, so the documentation
page (docs/catalogue.md) is generated from the same data that the findings carry.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from ppaux.report.findings import Rule

__all__ = [
    "RULES_SCHEMA",
    "RulesFormat",
    "catalogue_markdown",
    "markdown_code",
    "markdown_text",
    "render_rules",
    "render_rules_json",
    "render_rules_text",
    "rule_json",
    "rule_markdown",
    "rules_document",
]

#: Version of the JSON document ``ppaux rules --format json`` prints.
RULES_SCHEMA = "ppaux.rules/1"


class RulesFormat(str, enum.Enum):
    """Formats of ``ppaux rules`` and ``ppaux explain``."""

    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"


def render_rules(rules: Iterable[Rule], fmt: RulesFormat, width: int = 80) -> str:
    """The rules as a text table (at ``width``), a ``ppaux.rules/1`` JSON document or the
    Markdown page."""
    if fmt == RulesFormat.JSON:
        return render_rules_json(rules)
    if fmt == RulesFormat.MARKDOWN:
        return catalogue_markdown(rules)
    return render_rules_text(rules, width)


def rule_json(rule: Rule) -> dict[str, Any]:
    """One rule as a JSON object (every field of the catalogue entry)."""
    return {
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity.value,
        "area": rule.area,
        "summary": rule.summary,
        "explanation": rule.explanation,
        "causes": list(rule.causes),
        "fix": rule.fix,
        "example": rule.example or None,
        "sglang_error": rule.sglang_error,
        "inconclusive": rule.inconclusive,
        **({"kind_fixes": dict(rule.kind_fixes)} if rule.kind_fixes else {}),
        "always_reported": rule.always_reported,
    }


def rules_document(rules: Iterable[Rule]) -> dict[str, Any]:
    """The catalogue as one JSON document: schema, tool, rules in code order."""
    from ppaux._version import __version__

    return {
        "schema": RULES_SCHEMA,
        "tool": {"name": "ppaux", "version": __version__},
        "rules": [rule_json(r) for r in rules],
    }


def render_rules_json(rules: Iterable[Rule]) -> str:
    """:func:`rules_document`, indented, ending in a newline."""
    from ppaux.report.formats import strict_json

    return strict_json.dumps(rules_document(rules))


#: The narrowest the summary column gets beside the others; at less, each summary goes on the
#: lines under its rule.
_MIN_SUMMARY = 36


def render_rules_text(rules: Iterable[Rule], width: int = 80) -> str:
    """One aligned line per rule: code, severity, area, name, and the summary wrapped at
    ``width`` under its own column; where that column would be narrower than
    :data:`_MIN_SUMMARY`, the summary goes on the lines under the rule, under its name."""
    from ppaux.report.formats.wrapping import wrap

    rows = [(r.code, r.severity.value, r.area, r.name, r.summary) for r in rules]
    header = ("code", "severity", "area", "name", "summary")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    start = sum(widths) + 2 * 4
    beside = width - start >= _MIN_SUMMARY
    lines = []
    for row in [header, *rows]:
        cells = "  ".join(row[i].ljust(widths[i]) for i in range(4))
        if beside:
            lines += wrap(row[4], width, cells + "  ", " " * start)
        else:
            lines.append(cells.rstrip())
            under = " " * (widths[0] + 2)
            lines += wrap(row[4], width, under, under)
    return "\n".join(line.rstrip() for line in lines) + "\n"


_MARKDOWN_SPECIAL = "\\`*_[]<>"


def markdown_text(text: str) -> str:
    """Prose with Markdown's special characters escaped (keys like ``__x__`` are not bold)."""
    return "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in text)


def markdown_code(text: str) -> str:
    """An inline code span holding ``text`` exactly, whatever backticks it contains."""
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def rule_markdown(rule: Rule, level: int = 2, *, anchor: bool = True) -> str:
    """One rule as a Markdown section; with ``anchor`` its heading gets the id ``<code>`` in
    lower case (attr_list syntax, which the docs site reads and other renderers do not)."""
    heading = "#" * level
    facts = f"**{rule.severity.value}** · area {rule.area or '-'}"
    if rule.inconclusive:
        facts += ' · "could not check" (fails the gate with `--strict`)'
    if rule.always_reported:
        facts += " · always reported (`--select` and `--ignore` never drop it)"
    title = f"{heading} {rule.code} {rule.name}"
    if anchor:
        title += f" {{ #{rule.code.lower()} }}"
    lines = [title, "", facts, ""]
    lines += [markdown_text(rule.summary), ""]
    if rule.sglang_error:
        lines += [f"Predicts the sglang error {markdown_code(rule.sglang_error)}.", ""]
    lines += ["**What it means.** " + markdown_text(rule.explanation), ""]
    lines += ["**Likely causes:**", ""]
    lines += [f"- {markdown_text(cause)}" for cause in rule.causes]
    lines += ["", "**Fix.** " + markdown_text(rule.fix), ""]
    if rule.kind_fixes:
        lines += ["**Fix of each kind** (what a finding of that kind shows):", ""]
        lines += [f"- {kind}: {markdown_text(text)}" for kind, text in rule.kind_fixes]
        lines += [""]
    if rule.example:
        lines += ["**Example:** " + markdown_code(rule.example), ""]
    return "\n".join(lines)


def catalogue_markdown(rules: Iterable[Rule]) -> str:
    """The docs page listing every rule: an index table, then one section per rule."""
    rules = list(rules)
    lines = [
        "<!-- Generated from ppaux/catalogue by scripts/generate_docs.py; do not edit. -->",
        "",
        "# Rule catalogue",
        "",
        "Every finding ppaux reports carries one of these codes. `ppaux explain CODE` prints "
        "the same text in a terminal, `ppaux rules` lists the codes, and `--select` / "
        "`--ignore` take a code or a code prefix (`PP1` is every payload rule).",
        "",
        "| code | name | severity | area | summary |",
        "|---|---|---|---|---|",
    ]
    for r in rules:
        summary = markdown_text(r.summary).replace("|", "\\|")
        lines.append(
            f"| [{r.code}](#{r.code.lower()}) | {r.name} | {r.severity.value} | {r.area} "
            f"| {summary} |"
        )
    lines.append("")
    for r in rules:
        lines.append(rule_markdown(r))
    return "\n".join(lines).rstrip("\n") + "\n"
