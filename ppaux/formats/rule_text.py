"""Plain-text view of one catalogue rule, as ``ppaux explain CODE`` prints it."""

from __future__ import annotations

import textwrap

from ppaux.findings import Rule

__all__ = ["render_rule"]


def _wrap(text: str, indent: str = "", hanging: str | None = None) -> str:
    return textwrap.fill(
        text, width=88, initial_indent=indent,
        subsequent_indent=indent if hanging is None else hanging,
    )


def render_rule(rule: Rule) -> str:
    """The rule's code, name, severity, predicted sglang error, explanation, causes, fix, example."""
    parts = [f"{rule.code} {rule.name} ({rule.severity.value})", _wrap(rule.summary), ""]
    if rule.sglang_error:
        parts += [f"Predicts the sglang error: {rule.sglang_error}", ""]
    parts += [_wrap(rule.explanation), "", "Likely causes:"]
    parts += [_wrap(cause, "  - ", "    ") for cause in rule.causes]
    parts += ["", "Fix:", _wrap(rule.fix, "  ")]
    if rule.example:
        parts += ["", "Example:", _wrap(rule.example, "  ")]
    return "\n".join(parts) + "\n"
