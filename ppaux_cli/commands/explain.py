"""``ppaux explain CODE``: print one catalogue rule."""

from __future__ import annotations

from typing import Annotated

import typer

from ppaux.report.formats.rules import RulesFormat
from ppaux_cli.exits import fail
from ppaux_cli.options import OutputOption, choice_option, complete_codes
from ppaux_cli.output import write_text

__all__ = ["explain"]


def explain(
    code: Annotated[
        str,
        typer.Argument(
            metavar="CODE",
            autocompletion=complete_codes,
            help="A rule code such as PP101 (any case).",
        ),
    ],
    format: Annotated[
        RulesFormat,
        choice_option(
            RulesFormat,
            "--format",
            "-f",
            "--output-format",
            default="text",
            help="text, json (one rule object) or markdown.",
        ),
    ] = RulesFormat.TEXT,
    output: OutputOption = None,
) -> None:
    """Explain one finding code: what it means, likely causes, the fix and an example."""
    from ppaux.report.catalogue import RULES, UnknownRuleError, get_rule
    from ppaux_cli.options import did_you_mean

    try:
        rule = get_rule(code)
    except UnknownRuleError as exc:
        fail(f"{exc}{did_you_mean(code.strip().upper(), RULES)}")
    if format is RulesFormat.JSON:
        import json

        from ppaux.report.formats.rules import rule_json

        text = json.dumps(rule_json(rule), indent=2, ensure_ascii=False) + "\n"
    elif format is RulesFormat.MARKDOWN:
        from ppaux.report.formats.rules import rule_markdown

        text = rule_markdown(rule)
    else:
        from ppaux.report.formats.rule_text import render_rule

        text = render_rule(rule)
    write_text(text, output, "the rule")
