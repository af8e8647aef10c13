"""The command-line reference page (docs/cli.md), generated from the Typer application itself.

Each command's section holds its usage line, its full help text and one row per argument or
option, exactly as ``--help`` words them, so the page cannot drift from the code without the
docs test noticing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer
    from typer._click import Command, Context

__all__ = ["cli_reference_markdown"]


def _commands(
    command: Command, ctx: Context, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], Command, Context]]:
    from typer.core import TyperGroup

    yield path, command, ctx
    if not isinstance(command, TyperGroup):
        return
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        sub_ctx = sub.make_context(name, [], parent=ctx, resilient_parsing=True)
        yield from _commands(sub, sub_ctx, (*path, name))


def _cell(text: str) -> str:
    from ppaux.report import markdown_text

    return markdown_text(" ".join(text.split())).replace("|", "\\|")


def _section(path: tuple[str, ...], command: Command, ctx: Context) -> list[str]:
    from ppaux.report import markdown_code

    title = " ".join(path)
    level = "#" * min(len(path) + 1, 4)
    usage = " ".join([title, *command.collect_usage_pieces(ctx)])
    lines = [f"{level} {title}", "", f"    {usage}", ""]
    for paragraph in (command.help or "").strip().split("\n\n"):
        if paragraph.strip():
            lines += [_cell(paragraph), ""]
    rows = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        name, help_text = record
        rows.append(f"| {markdown_code(name)} | {_cell(help_text)} |")
    if rows:
        lines += ["| argument or option | description |", "|---|---|", *rows, ""]
    from typer.core import TyperGroup

    if isinstance(command, TyperGroup):
        names = [
            n
            for n in command.list_commands(ctx)
            if not getattr(command.get_command(ctx, n), "hidden", False)
        ]
        lines += [f"Commands: {', '.join(markdown_code(n) for n in names)}.", ""]
    return lines


def cli_reference_markdown(app: typer.Typer | None = None, prog_name: str = "ppaux") -> str:
    """The reference page for ``app`` (default: ppaux's own application)."""
    import typer

    if app is None:
        from ppaux_cli.app import app as own

        app = own
    root = typer.main.get_command(app)
    ctx = root.make_context(prog_name, [], resilient_parsing=True)
    lines = [
        "<!-- Generated from the Typer application by scripts/generate_docs.py; do not edit. -->",
        "",
        "# Command-line reference",
        "",
        "Every command that checks something takes the same report options (`--format`, "
        "`--output`, `--fail-on`, `--select`, `--ignore`, `--extend-select`, `--extend-ignore`, "
        "`--strict`, `--config`, `--root`, `--statistics`, `--findings-only`, `--progress`, `-q`, "
        "`-v`) with the same "
        "meaning; exit codes are 0 (nothing at or above `--fail-on`), 1 (findings at or above "
        "it) and 2 (an input, a value on the command line or the configuration could not be "
        "used). `-h` is `--help` everywhere; `-` as an input reads stdin in `triage`, "
        "`inspect` and `explain` (`replay`, `diff`, `tensorize` and `check-skew` read files and "
        "refuse it), `-o -` writes stdout. "
        "Bare `ppaux` and bare `ppaux capture` print their help on stderr and exit 2, as ruff "
        "does. See [Formats, thresholds and configuration](gate.md).",
        "",
    ]
    for path, command, command_ctx in _commands(root, ctx, (prog_name,)):
        lines += _section(path, command, command_ctx)
    return "\n".join(lines).rstrip("\n") + "\n"
