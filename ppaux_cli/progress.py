"""A progress bar on stderr for long walks, shown only when stderr is a terminal."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

__all__ = ["progress_reporter"]

#: Fewer files than this finish too fast for a bar to help.
_MIN_FILES = 20


@contextlib.contextmanager
def progress_reporter(stream, label: str) -> Iterator[Callable[[int, int], None] | None]:
    """Yield a ``progress(done, total)`` callback drawing a rich bar on ``stream``, or None."""
    isatty = getattr(stream, "isatty", None)
    if not (isatty and isatty()):
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress

    state: dict = {}
    with Progress(console=Console(file=stream), transient=True) as bar:

        def update(done: int, total: int) -> None:
            if total < _MIN_FILES:
                return
            if "task" not in state:
                state["task"] = bar.add_task(label, total=total)
            bar.update(state["task"], completed=done)

        yield update
