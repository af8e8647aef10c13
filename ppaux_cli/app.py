"""The ``ppaux`` Typer application: the commands, loaded lazily, and one-line usage errors.

A run builds only the command it runs: the root group knows each command by name, module and
one-line summary (:data:`COMMANDS`), imports the module when the command is asked for, and
turns that one function into a Click command then. ``ppaux --help`` imports no command module
at all. tests/test_cli_conventions.py checks that each summary is the first line of the
command's own help.

Usage errors print as one ``ppaux: error: ...`` line with exit code 2, in ppaux's words: a bad
option value reads ``ppaux: error: --format: 'jsn' is not one of ...; did you mean 'json'?``.
Bare ``ppaux`` and a bare group command (``ppaux capture``) print their help on stderr and exit
2, as ruff does: a command is missing, so it is a usage error, and stdout stays empty.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Protocol, cast

import typer

import ppaux
from ppaux_cli.groups import CONTEXT_SETTINGS, HelpOnBare, PlainUsage

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from typer._click import Command, Context, HelpFormatter, Parameter

__all__ = ["COMMANDS", "app", "main"]


@dataclass(frozen=True)
class CommandEntry:
    """Where a command lives: ``module.attribute`` is its function (or its Typer group)."""

    module: str
    attribute: str
    summary: str


#: Every command, in the order ``--help`` lists them.
COMMANDS: dict[str, CommandEntry] = {
    "triage": CommandEntry(
        "ppaux_cli.commands.triage",
        "triage",
        "Name the first failing ranks in sglang logs, their error, what followed, and what to run.",
    ),
    "inspect": CommandEntry(
        "ppaux_cli.commands.inspect",
        "inspect",
        "Show every key, dtype, shape, device and auxiliary entry, and predict sglang's error.",
    ),
    "explain": CommandEntry(
        "ppaux_cli.commands.explain",
        "explain",
        "Explain one finding code, or one of sglang's PP messages: what it means, where sglang "
        "raises it, likely causes, the fix and the ppaux rules that predict it.",
    ),
    "rules": CommandEntry(
        "ppaux_cli.commands.rules",
        "rules",
        "List every finding code with its severity, area, name and summary.",
    ),
    "fingerprint": CommandEntry(
        "ppaux_cli.commands.fingerprint",
        "fingerprint",
        "Write a JSON snapshot of versions, rank and sglang's PP transport, for check-skew.",
    ),
    "check-skew": CommandEntry(
        "ppaux_cli.commands.check_skew",
        "check_skew",
        "Compare stages' sglang, transport capabilities, torch, NCCL, CUDA and environment.",
    ),
    "replay": CommandEntry(
        "ppaux_cli.commands.replay",
        "replay",
        "Rebuild each payload with torch and run sender, wire and pop as sglang does; compare "
        "the output that comes back bit for bit.",
    ),
    "tensorize": CommandEntry(
        "ppaux_cli.commands.tensorize",
        "tensorize",
        "Rewrite DUMP into FIXED with every non-tensor auxiliary value converted to a tensor; "
        "print each conversion and refusal. Exit 1, writing nothing, when a value cannot be "
        "converted; exit 0 with a note, writing nothing, when every auxiliary value is a "
        "tensor already.",
    ),
    "diff": CommandEntry(
        "ppaux_cli.commands.diff",
        "diff",
        "Compare two dumps: keys added and removed, kind, dtype, shape, stride and device "
        "changes, values (tensor bytes by digest), and which side pop fails on. Exit 1 when an "
        "auxiliary entry differs.",
    ),
    "check-observer": CommandEntry(
        "ppaux_cli.commands.check_observer",
        "check_observer",
        "Run a sampling observer's outputs through sglang's PP path and the single-stage path; "
        "report sglang's errors, every difference and reused buffers. TARGET's code runs.",
    ),
    "capture": CommandEntry(
        "ppaux_cli.commands.capture",
        "app",
        "Capture from a running sglang: check the plugin, list what it wrote.",
    ),
}


def load_command(name: str) -> Any:
    """The Click command ``name``, built from its module now."""
    entry = COMMANDS[name]
    target = getattr(importlib.import_module(entry.module), entry.attribute)
    if isinstance(target, typer.Typer):
        return typer.main.get_group(target)
    from typer.models import CommandInfo

    return typer.main.get_command_from_info(
        CommandInfo(name=name, callback=target, context_settings=CONTEXT_SETTINGS, cls=PlainUsage),
        pretty_exceptions_short=True,
        rich_markup_mode=None,
    )


class _PpauxGroup(HelpOnBare):
    """The root group: lazy commands, and usage errors as one 'ppaux: error: ...' line."""

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, name: str) -> Command | None:
        return load_command(name) if name in COMMANDS else None

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        name = args[0] if args else ""
        if name in COMMANDS or name.startswith("-") or ctx.resilient_parsing:
            return super().resolve_command(ctx, args)
        from ppaux_cli.closest import did_you_mean

        ctx.fail(f"{name!r} is not a ppaux command{did_you_mean(name, COMMANDS)}")

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        # From the table, so that --help imports no command module.
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, _shorten(entry.summary, limit)) for name, entry in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        # Typer's --show-completion and --install-completion guess the shell and take no value,
        # so 'ppaux --show-completion zsh' printed the script of the shell it runs in; a shell
        # named after either flag is the one its script is for.
        if len(args) == 2 and args[0] in _COMPLETION_FLAGS and args[1].lower() in _SHELLS:
            from typer import completion

            callback: Any = completion.show_callback
            if args[0] == "--install-completion":
                callback = completion.install_callback
            callback(ctx, None, args[1].lower())
        if len(args) == 2 and args[0] in _COMPLETION_FLAGS and not args[1].startswith("-"):
            from ppaux_cli.closest import not_one_of

            ctx.fail(f"{args[0]}: {not_one_of(args[1], _SHELLS)}")
        return super().parse_args(ctx, args)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: object,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        _standalone(
            super().main,
            args,
            prog_name,
            complete_var,
            windows_expand_args=windows_expand_args,
            **extra,
        )


#: The flags Typer adds for shell completion, and the shells it writes scripts for.
_COMPLETION_FLAGS = ("--show-completion", "--install-completion")
_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def _shorten(text: str, limit: int) -> str:
    first = text.split(". ")[0].rstrip(".")
    if len(first) <= limit:
        return first + "."
    return first[: max(limit - 3, 10)].rsplit(" ", 1)[0].rstrip(",;:") + "..."


class _UsageError(Protocol):
    """A Click usage error, as ppaux reads it (Typer's own Click or another's)."""

    exit_code: int

    def format_message(self) -> str: ...


def _usage_message(exc: _UsageError) -> str:
    """ppaux's wording of a Click usage error: the option, then what is wrong with its value."""
    param = getattr(exc, "param", None)
    message = getattr(exc, "message", "")
    if param is not None and message and type(exc).__name__ == "BadParameter":
        longs = [o for o in getattr(param, "opts", []) if o.startswith("--")]
        name = longs[0] if longs else (param.human_readable_name or param.name)
        return f"{name}: {_range_message(param, _choice_message(param, message))}"
    return " ".join(exc.format_message().split())


def _choice_message(param: Parameter, message: str) -> str:
    """Typer's "'jsn' is not one of 'text', 'json'." in the words of ppaux's other bad values:
    the values as the help lists them, and the closest one ("did you mean 'json'?"); any other
    message as Typer wrote it."""
    choices = getattr(param.type, "choices", None)
    value, found, _ = message.partition(" is not one of ")
    if not found or choices is None:
        return message
    import ast

    try:
        given = ast.literal_eval(value)  # the value, as Typer wrote it: its repr
    except (ValueError, SyntaxError):
        return message
    from ppaux_cli.closest import not_one_of

    return not_one_of(str(given), [str(choice) for choice in choices])


def _range_message(param: Parameter, message: str) -> str:
    """Click's 'V is not in the range x>=1.' (or "'x' is not a valid int range.") in the words
    of ppaux's other bad values: 'must be 1 or more, not V' (or 'from A to B'; 'must be a
    whole number, 1 or more, not 'x''); any other message as Click wrote it."""
    low, high = getattr(param.type, "min", None), getattr(param.type, "max", None)
    value, found, _ = message.partition(" is not in the range ")
    invalid, no_int, kind = message.partition(" is not a valid ")
    whole = bool(no_int) and kind.startswith(("int", "integer"))
    if not (found or whole):
        return message
    if high is None:
        bound = None if low is None else f"{low} or more"
    else:
        bound = f"{high} or less" if low is None else f"from {low} to {high}"
    if whole:
        return f"must be a whole number{f', {bound}' if bound else ''}, not {invalid}"
    return message if bound is None else f"must be {bound}, not {value}"


def _standalone(call: Callable[..., object], *args: object, **kwargs: object) -> None:
    try:
        code = call(*args, standalone_mode=False, **kwargs)
    except typer.Abort:
        sys.stderr.write("ppaux: aborted\n")
        sys.exit(130)
    except Exception as exc:  # click's usage errors, duck-typed: Typer vendors Click privately
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            sys.stderr.write(f"ppaux: error: {_usage_message(cast('_UsageError', exc))}\n")
            sys.exit(exc.exit_code)
        _internal_error(exc)
    sys.exit(code if isinstance(code, int) else 0)


def _internal_error(exc: BaseException) -> None:
    """Last resort: anything unexpected (a bug, RecursionError, MemoryError) is one line, exit 2."""
    text = " ".join(str(exc).split())
    text = text if len(text) <= 300 else f"{text[:300]}..."
    from ppaux.text import shown

    try:
        sys.stderr.write(
            f"ppaux: error: internal error: {type(exc).__name__}: {shown(text, None) or '-'} "
            "(a bug in ppaux; please report it)\n"
        )
        sys.stderr.flush()
    except OSError:  # a stderr that cannot take the line (a full disk) still gets exit 2
        pass
    sys.exit(2)


app = typer.Typer(
    name="ppaux",
    cls=_PpauxGroup,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Plain help: rendering it with rich costs more than the whole start-up budget.
    rich_markup_mode=None,
    context_settings=CONTEXT_SETTINGS,
    help=(
        "Find the root of an sglang pipeline-parallel failure (start with 'ppaux triage LOG'), "
        "then inspect, compare, replay and fix the payloads, and check observers and stages."
    ),
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ppaux {ppaux.__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Print reports and errors only (as -q on a command)."),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Say which configuration applied (as -v on a command)."
        ),
    ] = False,
) -> None:
    """Find the root of an sglang pipeline-parallel failure (start with 'ppaux triage LOG'),
    then inspect, compare, replay and fix the payloads, and check observers and stages."""
    from ppaux_cli.report_options import ROOT_VERBOSITY

    ROOT_VERBOSITY.update(quiet=quiet, verbose=verbose)


def _without_startup_entry() -> None:
    """Take off the import path the entry Python put first for how ppaux was started: the
    current directory for ``python -m ppaux_cli``, the command's own folder for the installed
    ``ppaux``. Neither is the user's import path, and ``check-observer`` hands this process's
    path to the check's child: without it the child's path is the same either way (a module
    that only sits in the current directory needs ``pip install -e .`` or the file form)."""
    import os

    if sys.flags.safe_path or sys.flags.isolated or not sys.path:
        return  # -P or -I: Python put nothing there
    first = sys.path[0]
    script = os.path.dirname(sys.argv[0]) if sys.argv and sys.argv[0] else None
    started_here = {"", os.getcwd()}
    if script is not None:
        started_here.update({script, os.path.dirname(os.path.realpath(sys.argv[0]))})
    if first in started_here:
        del sys.path[0]


def main() -> None:
    """Console-script entry point."""
    _without_startup_entry()
    if sys.stdin is None or sys.stdout is None or sys.stderr is None:
        from ppaux_cli.output import stand_in_for_closed_stdio

        stand_in_for_closed_stdio()
    from ppaux.torch_probe import freeze_after_torch_import

    # The process is ppaux's own: a command that imports torch freezes the heap after it, so
    # that no later collection scans torch's modules again.
    freeze_after_torch_import()
    try:
        app(prog_name="ppaux")
    finally:
        # The process ends here: its heap (torch's modules, and sglang's for check-observer
        # --transport sglang: over half a million objects) is freed without the garbage
        # collections of the interpreter's teardown scanning it again (0.5 - 2 s at exit).
        import gc

        gc.freeze()
