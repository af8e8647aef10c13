"""``ppaux explain CODE``: print one catalogue rule."""

from __future__ import annotations

from typing import Annotated

import typer

from ppaux.catalogue import UnknownRuleError, get_rule
from ppaux.formats.rule_text import render_rule
from ppaux_cli.output import fail


def explain(
    code: Annotated[str, typer.Argument(help="A rule code such as PP101.")],
) -> None:
    """Explain one finding code: what it means, likely causes, the fix and an example."""
    try:
        rule = get_rule(code)
    except UnknownRuleError as exc:
        fail(str(exc))
    typer.echo(render_rule(rule), nl=False)
