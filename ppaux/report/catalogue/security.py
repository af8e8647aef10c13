"""Rules about what loading a file would execute (codes PP2xx)."""

from __future__ import annotations

from ppaux.report.findings import Rule, Severity

__all__ = ["RULES"]

RULES = (
    Rule(
        code="PP201",
        name="unsafe-global",
        severity=Severity.ERROR,
        summary="The pickle references a global outside the tensor allowlist.",
        explanation=(
            "Loading this file with torch.load(weights_only=False) or pickle would import this "
            "name and, where the pickle calls it, run it. ppaux never imports or calls it: it "
            "records the name and its arguments."
        ),
        causes=(
            "A custom class or function saved inside the tensor dict (for example an output "
            "object instead of its tensors).",
            "A hostile file crafted to run code when it is loaded.",
        ),
        fix="Do not load the file with weights_only=False. If the object is yours, save its "
        "tensors instead; if you did not expect it, treat the file as hostile.",
        example="os.system('touch /tmp/pwned')",
        area="security",
    ),
)
