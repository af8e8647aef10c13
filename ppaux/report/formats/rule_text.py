"""Plain-text view of one catalogue rule, as ``ppaux explain CODE`` prints it."""

from __future__ import annotations

from ppaux.report.findings import Rule
from ppaux.report.formats.wrapping import wrap

__all__ = ["render_rule"]


def render_rule(rule: Rule, width: int = 80) -> str:
    """The rule's code, name, severity and summary, then what it means, the sglang error it
    predicts, likely causes, the fix and an example, each under its own heading, wrapped at
    ``width`` between words."""

    def wrapped(text: str, indent: str = "  ", hanging: str | None = None) -> str:
        return "\n".join(wrap(text, width, indent, indent if hanging is None else hanging))

    parts = [
        wrapped(f"{rule.code} {rule.name} ({rule.severity.value})", ""),
        wrapped(rule.summary, ""),
    ]
    if rule.sglang_error:
        parts.append(wrapped(f"Predicts the sglang error: {rule.sglang_error}", "", "    "))
    if rule.inconclusive:
        parts.append(
            wrapped(
                'A "could not check" finding: with --strict it is an error and fails the gate.', ""
            )
        )
    if rule.always_reported:
        parts.append(wrapped("Always reported: --select and --ignore never drop it.", ""))
    parts += ["", "What it means:", wrapped(rule.explanation), ""]
    parts += ["Likely causes:"]
    parts += [wrapped(cause, "  - ", "    ") for cause in rule.causes]
    parts += ["", "Fix:", wrapped(rule.fix)]
    if rule.kind_fixes:
        parts += ["", "Fix of each kind (what a finding of that kind shows):"]
        parts += [wrapped(f"{kind}: {text}", "  - ", "    ") for kind, text in rule.kind_fixes]
    if rule.example:
        # A literal (a key and value, a message): broken only between words, its continuation
        # two spaces further in.
        parts += ["", "Example:", wrapped(rule.example, "  ", "    ")]
    return "\n".join(parts) + "\n"
