"""The ``ppaux`` Typer application: registers the commands and turns usage errors into one line."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

import ppaux
from ppaux_cli.commands import capture as _capture
from ppaux_cli.commands import check_skew as _check_skew
from ppaux_cli.commands import diff as _diff
from ppaux_cli.commands import explain as _explain
from ppaux_cli.commands import fingerprint as _fingerprint
from ppaux_cli.commands import inspect as _inspect
from ppaux_cli.commands import replay as _replay
from ppaux_cli.commands import rules as _rules
from ppaux_cli.commands import tensorize as _tensorize

__all__ = ["app", "main"]


class _OneLineErrors(TyperGroup):
    """A group whose usage errors print as one 'ppaux: error: ...' line with exit code 2."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        _standalone(super().main, *args, **kwargs)


def _standalone(call: Any, *args: Any, **kwargs: Any) -> None:
    try:
        code = call(*args, standalone_mode=False, **kwargs)
    except typer.Abort:
        sys.stderr.write("ppaux: aborted\n")
        sys.exit(130)
    except Exception as exc:  # click's usage errors, duck-typed: Typer vendors Click privately
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            message = " ".join(exc.format_message().split())
            sys.stderr.write(f"ppaux: error: {message}\n")
            sys.exit(exc.exit_code)
        _internal_error(exc)
    sys.exit(code if isinstance(code, int) else 0)


def _internal_error(exc: BaseException) -> None:
    """Last resort: anything unexpected (a bug, RecursionError, MemoryError) is one line, exit 2."""
    text = " ".join(str(exc).split())
    text = text if len(text) <= 300 else f"{text[:300]}..."
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    sys.stderr.write(f"ppaux: error: internal error: {type(exc).__name__}: {shown or '-'} "
                     "(a bug in ppaux; please report it)\n")
    sys.exit(2)


app = typer.Typer(
    name="ppaux",
    cls=_OneLineErrors,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Plain help: rendering it with rich costs more than the whole 0.15 s start-up budget.
    rich_markup_mode=None,
    help="Inspect, compare and replay sglang pipeline-parallel auxiliary-output payloads.",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ppaux {ppaux.__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Inspect, compare and replay sglang pipeline-parallel auxiliary-output payloads."""


app.command("inspect")(_inspect.inspect)
app.command("explain")(_explain.explain)
app.command("rules")(_rules.rules)
app.command("fingerprint")(_fingerprint.fingerprint)
app.command("check-skew")(_check_skew.check_skew)
app.command("replay")(_replay.replay)
app.command("tensorize")(_tensorize.tensorize)
app.command("diff")(_diff.diff)
app.add_typer(_capture.app, name="capture")


def main() -> None:
    """Console-script entry point."""
    app(prog_name="ppaux")
