"""Behaviour every ppaux command group shares: its help on stderr, exit 2, when bare."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    # Typer 0.28 carries Click inside it; its own methods are typed with these classes.
    from typer._click import Context

__all__ = ["CONTEXT_SETTINGS", "HelpOnBare", "PlainUsage"]

#: -h works wherever --help does.
CONTEXT_SETTINGS: dict[str, list[str]] = {"help_option_names": ["-h", "--help"]}


class HelpOnBare(TyperGroup):
    """A group that prints its help on stderr and exits 2 when no command is given.

    Click would raise a usage error holding the whole help text, which ppaux prints as one
    line; ruff's behaviour is the model: the help, readable, on stderr, and exit 2.
    """

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            sys.stderr.write(ctx.get_help() + "\n")
            ctx.exit(2)
        result: list[str] = super().parse_args(ctx, args)
        return result


class PlainUsage(TyperCommand):
    """A command whose usage line writes arguments as Click does: ``PATH...``, ``[PATH]...``.

    Typer wraps a required argument in braces (``{PATH}``) and drops the ``...`` of one that
    repeats; braces read as "one of", so ppaux's usage lines use Click's plain form.
    """

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces: list[str] = [self.options_metavar or "[OPTIONS]"]
        for param in self.get_params(ctx):
            if getattr(param, "param_type_name", "") != "argument":
                continue
            name = param.metavar or (param.name or "").upper()
            piece = name if param.required else f"[{name}]"
            pieces.append(piece + ("..." if param.nargs != 1 else ""))
        return pieces
