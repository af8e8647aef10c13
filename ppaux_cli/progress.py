"""A progress bar on stderr for long walks: by default only when stderr is a terminal."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TextIO

__all__ = ["progress_reporter"]

#: Fewer files than this finish too fast for a bar to help (unless --progress asks for one).
_MIN_FILES = 20


@contextlib.contextmanager
def progress_reporter(
    stream: TextIO, label: str, wanted: bool | None = None
) -> Iterator[Callable[[int, int], None] | None]:
    """Yield a ``progress(done, total)`` callback drawing a rich bar on ``stream``, or None.

    ``wanted`` is ``--progress`` (True: always draw, even when ``stream`` is not a terminal),
    ``--no-progress`` (False: never) or neither (None: on a terminal that can redraw, for runs
    of at least 20 files).
    """
    from ppaux_cli.output import is_terminal

    if wanted is False or (wanted is None and not is_terminal(stream)):
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress

    smallest = 0 if wanted else _MIN_FILES
    state: dict[str, Any] = {}
    console = Console(file=stream, force_terminal=True if wanted else None)
    with Progress(console=console, transient=True) as bar:

        def update(done: int, total: int) -> None:
            if total < smallest:
                return
            if "task" not in state:
                state["task"] = bar.add_task(label, total=total)
            bar.update(state["task"], completed=done)

        yield update
