"""What every fuzzer of ppaux's dump reader checks, for one input.

:func:`check_input` writes the bytes to a file, runs the whole ``ppaux inspect`` pipeline on it
(:func:`ppaux.dump.inspection.inspect_paths`, then the JSON and, optionally, the text report) and
checks the reader's promises:

- the only exception is none at all, and no warning either (it would be an error under
  ``-W error``): an unusable file becomes a problem of the report, whose text is one line;
- nothing runs: an audit hook (:func:`sys.addaudithook`) fails the input on any attempt to run
  a command, execute or compile code, unmarshal code, or import a module not already imported;
- the report encodes as strict UTF-8 (what a UTF-8 terminal accepts);
- the file is unchanged.

Used by ``tests/test_fuzz_reader.py`` (hypothesis) and ``fuzz/atheris_reader.py`` (atheris).
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from pathlib import Path

from ppaux.dump.inspection import inspect_paths
from ppaux.limits import Limits
from ppaux.report.formats import Format, render

__all__ = ["ReaderBroke", "check_input", "warm_up", "watch"]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

#: Audit events that mean a file got to run something.
_FORBIDDEN = (
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.startfile",
    "subprocess.Popen",
    "exec",
    "compile",
    "marshal.loads",
    "pickle.find_class",
    "ctypes.",
    "builtins.input",
    "shutil.",
    "os.remove",
    "os.rename",
    "socket.",
)


class ReaderBroke(AssertionError):
    """The reader broke one of its promises on an input."""


class _Watch:
    """Collects forbidden audit events while ``active`` (the hook itself can never be removed)."""

    def __init__(self) -> None:
        self.active = False
        self.events: list[str] = []
        self.modules: set[str] = set()

    def __call__(self, event: str, args: tuple) -> None:
        if not self.active:
            return
        if event == "import":
            name = args[0] if args else ""
            if isinstance(name, str) and name not in self.modules and name not in sys.modules:
                self.events.append(f"import {name}")
        elif event.startswith(_FORBIDDEN):
            self.events.append(event)


_watch: _Watch | None = None


def watch() -> _Watch:
    """The process's one audit hook, installed on first use."""
    global _watch
    if _watch is None:
        _watch = _Watch()
        sys.addaudithook(_watch)
    return _watch


_warm = False


def warm_up() -> None:
    """Inspect the small fixtures once, unwatched: the reader and the report formats import some
    modules on first use (nested legacy streams, rich for the text view), and a first import
    looks like code running to the audit hook."""
    global _warm
    if _warm:
        return
    files = [
        p
        for p in sorted(FIXTURES.glob("*/*"))
        if p.suffix in (".pt", ".pkl") and p.stat().st_size <= 16_384
    ]
    report = inspect_paths([os.fspath(path) for path in files])
    render(report, Format.JSON)
    render(report, Format.TEXT)
    _warm = True


def check_input(
    data: bytes,
    workdir: Path,
    *,
    limits: Limits | None = None,
    suffix: str = ".pt",
    text: bool = False,
) -> str:
    """Run inspect on ``data``; return the JSON report, or raise :class:`ReaderBroke`."""
    limits = limits if limits is not None else Limits()
    warm_up()
    path = workdir / f"input{suffix}"
    path.write_bytes(data)
    digest = hashlib.sha256(data).digest()
    hook = watch()
    hook.modules = set(sys.modules)
    hook.events = []
    hook.active = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            report = inspect_paths([os.fspath(path)], limits)
            document = render(report, Format.JSON)
            view = render(report, Format.TEXT) if text else ""
    except Exception as exc:  # anything escaping is a bug: report it with the input
        raise ReaderBroke(f"{type(exc).__name__}: {exc}") from exc
    finally:
        hook.active = False
    if hook.events:
        raise ReaderBroke(f"the input got to run something: {hook.events}")
    for problem in report.problems:
        if "\n" in str(problem) or "\r" in str(problem):
            raise ReaderBroke(f"a problem is not one line: {str(problem)!r}")
    try:
        document.encode("utf-8")
        view.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ReaderBroke(f"the report is not UTF-8: {exc}") from exc
    if hashlib.sha256(path.read_bytes()).digest() != digest:
        raise ReaderBroke("the input file changed")
    return document
