"""``ppaux rules``: list the rule catalogue."""

from __future__ import annotations

from typing import Annotated

import typer

from ppaux.report import RulesFormat
from ppaux_cli.choices import choice_option
from ppaux_cli.exits import fail
from ppaux_cli.options import OutputOption
from ppaux_cli.output import text_width, write_text
from ppaux_cli.report_options import complete_codes

__all__ = ["rules"]


def rules(
    format: Annotated[
        RulesFormat,
        choice_option(
            RulesFormat,
            "--format",
            "-f",
            "--output-format",
            default="text",
            help="text (a line per rule, wrapped at the terminal's width), json "
            "(ppaux.rules/1) or markdown (the "
            "documentation page).",
        ),
    ] = RulesFormat.TEXT,
    select: Annotated[
        list[str] | None,
        typer.Option(
            "--select",
            metavar="CODE",
            show_default=False,
            autocompletion=complete_codes,
            help="List only these codes or code prefixes; repeat or separate with commas.",
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """List every finding code with its severity, area, name and summary."""
    from ppaux.report import RULES, Selection, UnknownCodeError, parse_codes, render_rules

    try:
        chosen = Selection(parse_codes(select or (), RULES))
    except UnknownCodeError as exc:
        from ppaux_cli.closest import did_you_mean

        fail(f"--select: {exc}{did_you_mean(exc.pattern, RULES)}")
    chosen_rules = [r for r in RULES.values() if chosen.includes(r.code)]
    write_text(render_rules(chosen_rules, format, text_width()), output, "the rules")
