"""Plain-text view of one catalogue rule, as ``ppaux explain CODE`` prints it."""

from __future__ import annotations

import textwrap

from ppaux.report.findings import Rule

__all__ = ["render_rule"]


def _wrap(text: str, indent: str = "  ", hanging: str | None = None) -> str:
    return textwrap.fill(
        text,
        width=88,
        initial_indent=indent,
        subsequent_indent=indent if hanging is None else hanging,
        break_long_words=False,
        break_on_hyphens=False,
    )


def render_rule(rule: Rule) -> str:
    """The rule's code, name, severity and summary, then what it means, the sglang error it
    predicts, likely causes, the fix and an example, each under its own heading."""
    parts = [f"{rule.code} {rule.name} ({rule.severity.value})", _wrap(rule.summary, "")]
    if rule.sglang_error:
        parts.append(f"Predicts the sglang error: {rule.sglang_error}")
    if rule.inconclusive:
        parts.append(
            _wrap(
                'A "could not check" finding: with --strict it is an error and fails the gate.', ""
            )
        )
    parts += ["", "What it means:", _wrap(rule.explanation), ""]
    parts += ["Likely causes:"]
    parts += [_wrap(cause, "  - ", "    ") for cause in rule.causes]
    parts += ["", "Fix:", _wrap(rule.fix)]
    if rule.example:
        # The example is a literal (a key and value, a message): never re-wrapped.
        parts += ["", "Example:", f"  {rule.example}"]
    return "\n".join(parts) + "\n"
