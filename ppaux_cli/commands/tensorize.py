"""``ppaux tensorize DUMP -o FIXED``: rewrite a dump with its non-tensor auxiliary values made
tensors, so that rank 0 pops it cleanly.

``-o -`` writes the rewritten dump to stdout (binary; refused when stdout is a terminal), and the
lines that say what was converted go to stderr instead. ``-`` as DUMP is refused with the reason:
the rewrite reads tensor bytes back from the file.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import TYPE_CHECKING, Annotated

import typer

from ppaux_cli.exits import fail
from ppaux_cli.options import LimitOption, limits_from
from ppaux_cli.output import STDIO, is_terminal, text_width, write_stdout
from ppaux_cli.output_paths import is_null_device, output_error

if TYPE_CHECKING:
    from collections.abc import Callable

    from ppaux.fix import TensorizeResult
    from ppaux.limits import Limits

__all__ = ["tensorize"]


def tensorize(
    path: Annotated[
        str,
        typer.Argument(
            metavar="DUMP", help="A dump file (torch.save, pickle or ppaux capture); never changed."
        ),
    ],
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            metavar="FIXED",
            help="Where to write the rewritten dump: a new or regular file, never the input "
            "itself nor a link; - writes it to stdout (not a terminal); /dev/null discards it.",
        ),
    ],
    limit: LimitOption = None,
) -> None:
    """Rewrite DUMP into FIXED with every non-tensor auxiliary value converted to a tensor;
    print each conversion and refusal. Exit 1, writing nothing, when a value cannot be converted;
    exit 0 with a note, writing nothing, when every auxiliary value is a tensor already."""
    # torch warns on import when numpy is absent; tensorize never needs numpy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    from ppaux.errors import PpauxError
    from ppaux.files import OutputPathError
    from ppaux.report import wrap
    from ppaux.text import shown

    if path == STDIO:
        fail(
            "-: tensorize reads tensor bytes back from the file, so it cannot read stdin; "
            "save the dump to a file and give its path"
        )
    to_stdout = output == STDIO
    if to_stdout and is_terminal(sys.stdout):
        fail("-o -: stdout is a terminal; the rewritten dump is binary: redirect it to a file")
    limits = limits_from(limit)
    try:
        # The library says an unreadable dump first, then torch missing, then an output it
        # will not write (the rule every --output follows), before any work.
        result = _rewrite(path, output, limits)
    except OutputPathError as exc:
        # An empty path has nothing to show: the option is named alone.
        fail(f"--output {exc}" if exc.path else f"--output: {exc.reason}")
    except PpauxError as exc:
        fail(exc)
    if result.nothing_to_convert:
        # Not a failure: the file is already what tensorize would write.
        # Exit 0 and no file: say which -o was not made, for a step that expects the file.
        where = "nothing written to stdout (-o -)" if to_stdout else f"-o {output} not written"
        stream = sys.stderr if to_stdout else sys.stdout
        note = f"note: {path}: {result.refusals[0].reason}; {where}"
        # the path and reason shown escaped, wrapped at the text's width as the other lines
        stream.write("".join(f"{part}\n" for part in wrap(shown(note, None), text_width())))
        raise typer.Exit(0)
    lines = []
    for item in result.conversions:
        lines.append(f"converted {item.locator}[{item.key!r}]: {item.before} -> {item.after}")
    for refusal in result.refusals:
        where = f"{refusal.locator}[{refusal.key!r}]" if refusal.key is not None else path
        lines.append(f"refused {where}: {refusal.reason}")
    where = "stdout" if to_stdout else output
    if result.written:
        count = len(result.conversions)
        lines.append(f"wrote {where} ({count} value{'s' if count != 1 else ''} converted)")
    else:
        lines.append(f"nothing written to {where}")
    # With -o - the dump is on stdout, so what was done goes to stderr. Each line is shown
    # escaped here, where it is rendered: a key or class name from the file may hold anything.
    stream = sys.stderr if to_stdout else sys.stdout
    width = text_width()
    stream.write("".join(f"{part}\n" for line in lines for part in wrap(shown(line, None), width)))
    raise typer.Exit(0 if result.written else 1)


def _rewrite(path: str, output: str, limits: Limits) -> TensorizeResult:
    """Rewrite ``path`` into ``output``: a file (a new one renamed into place), stdout (``-``)
    or the null device, written to directly (a rename would replace the device)."""
    from ppaux.fix import tensorize_dump

    if output == STDIO:
        return _tensorize_into(path, limits, lambda chunk: write_stdout(chunk, _DUMP))
    if is_null_device(output):
        return _tensorize_to_device(path, output, limits)
    return tensorize_dump(path, output, limits)


#: What ``-o -`` and the null device are sent.
_DUMP = "the rewritten dump"


def _tensorize_to_device(path: str, output: str, limits: Limits) -> TensorizeResult:
    """Rewrite, then write the dump to the device ``output`` itself (the null device: a new
    file renamed into place would replace it); one line and exit 2 where it cannot be opened."""
    try:
        device = open(output, "wb")  # closed below, after the rewrite
    except OSError as exc:
        fail(output_error(output, exc))
    with device:
        return _tensorize_into(path, limits, device.write)


def _tensorize_into(path: str, limits: Limits, write: Callable[[bytes], object]) -> TensorizeResult:
    """Rewrite into a private temporary folder, then hand the dump to ``write`` a chunk at a
    time (stdout's binary stream, or the null device)."""
    import tempfile

    from ppaux.fix import tensorize_dump

    with tempfile.TemporaryDirectory(prefix="ppaux-tensorize-") as folder:
        temporary = os.path.join(folder, "fixed.pt")
        result = tensorize_dump(path, temporary, limits)
        if result.written:
            with open(temporary, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    write(chunk)
    return result
