"""``ppaux explain CODE|NAME|MESSAGE``: print one catalogue rule, or the error page of one of
sglang's nine messages pasted from a log."""

from __future__ import annotations

from typing import Annotated

import typer

from ppaux.report import RulesFormat
from ppaux_cli.exits import fail
from ppaux_cli.options import OutputOption, choice_option, complete_codes
from ppaux_cli.output import write_text

__all__ = ["explain"]


def explain(
    code: Annotated[
        str,
        typer.Argument(
            metavar="CODE|NAME|MESSAGE",
            autocompletion=complete_codes,
            help="A rule code such as PP101 (any case), a rule name such as aux-non-tensor, or "
            "one of sglang's messages as pasted from a log, quotes and name included: "
            "\"duplicate auxiliary PP tensor 'scores'\".",
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
            help="text, json (one rule or page object) or markdown (renders on GitHub).",
        ),
    ] = RulesFormat.TEXT,
    output: OutputOption = None,
) -> None:
    """Explain one finding code, or one of sglang's PP messages: what it means, where sglang
    raises it, likely causes, the fix and the ppaux rules that predict it."""
    from ppaux.report import RULES, UnknownRuleError, get_rule
    from ppaux.sglang import search_message

    wanted = code.strip()
    rule = None
    try:
        rule = get_rule(wanted)
    except UnknownRuleError:
        rule = next((r for r in RULES.values() if r.name == wanted.lower()), None)
    if rule is None:
        found = search_message(wanted)
        if found is None:
            fail(_unknown(wanted))
        write_text(_page(found.message.id, found.name, format), output, "the page")
        return
    if format == RulesFormat.JSON:
        import json

        from ppaux.report import rule_json

        text = json.dumps(rule_json(rule), indent=2, ensure_ascii=False) + "\n"
    elif format == RulesFormat.MARKDOWN:
        from ppaux.report import rule_markdown

        # No attr_list anchor: GitHub, an issue or a pull request would show it as text.
        text = rule_markdown(rule, anchor=False)
    else:
        from ppaux.report import render_rule

        text = render_rule(rule)
    write_text(text, output, "the rule")


def _page(message_id: str, name: str | None, format: RulesFormat) -> str:
    from ppaux.report import page_for

    page = page_for(message_id)
    if format == RulesFormat.JSON:
        import json

        from ppaux.report import error_page_json

        return json.dumps(error_page_json(page, name), indent=2, ensure_ascii=False) + "\n"
    if format == RulesFormat.MARKDOWN:
        from ppaux.report import error_page_markdown

        return error_page_markdown(page, site=False)
    from ppaux.report import error_page_text

    return error_page_text(page, name)


def _unknown(wanted: str) -> str:
    """The error for a value that is no code, name or message, with the closest of them."""
    import re

    from ppaux.report import RULES, UnknownRuleError
    from ppaux.sglang import MESSAGES
    from ppaux_cli.options import did_you_mean

    shown = wanted if len(wanted) <= 80 else wanted[:77] + "..."
    if " " in wanted:
        # A sentence: a message misspelled or cut. The name inside quotes is not compared.
        bare = re.sub(r"""(['"]).*?\1""", "{name!r}", wanted)
        bare = re.sub(r"^\s*RuntimeError\s*:\s*", "", bare).rstrip(". ")
        hint = did_you_mean(bare, [m.template for m in MESSAGES])
        return (
            f"{shown!r} is none of sglang's nine PP messages; docs/errors/index.md lists them{hint}"
        )
    if "-" in wanted:
        names = [r.name for r in RULES.values()]
        return f"unknown rule name {shown!r}; 'ppaux rules' lists them{did_you_mean(wanted, names)}"
    return f"{UnknownRuleError(shown)}{did_you_mean(wanted.upper(), RULES)}"
