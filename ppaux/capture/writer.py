"""Writing one capture: atomically, within the directory's bounds, never into the host.

A capture is written with ``torch.save`` to a temporary file in the capture directory and
renamed into place under the directory lock (a lock file and ``flock``), after the bounds were
checked on the finished files; a capture the bounds refuse is counted in the directory's skipped
counter. A failure of the writer is logged once per process on the ``ppaux.capture`` logger and
swallowed.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import logging
import os
import pickle
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from ppaux.capture import directory as capture_store
from ppaux.capture.host import capture_meta
from ppaux.capture.settings import LOCK_TIMEOUT_S, CaptureConfig
from ppaux.capture.state import STATE
from ppaux.dump import make_capture

__all__ = ["logger", "note_failure", "record"]

logger = logging.getLogger("ppaux.capture")


def record(
    function: str,
    config: CaptureConfig,
    exc: BaseException | None,
    tensors: object,
    output: object,
    extra: dict[str, Any] | None = None,
) -> Path | None:
    """Write one capture; count it; log the first failure and swallow every one.

    ``extra`` adds top-level fields to the capture (the trail and culprit of a checkpoint).
    Returns the capture's path, or None when none was written.
    """
    try:
        path = _write(function, config, exc, tensors, output, extra)
    except Exception as error:
        with STATE.lock:
            STATE.failed += 1
        note_failure(f"could not write a capture to {config.directory}", error)
        return None
    with STATE.lock:
        if path is None:
            STATE.skipped += 1
        else:
            STATE.written += 1
            STATE.last_path = str(path)
        first_skip = path is None and "full" not in STATE.warned
        if first_skip:
            STATE.warned.add("full")
    if first_skip:
        logger.warning(
            "ppaux capture: %s is full (max_files=%d, max_bytes=%d); further captures are "
            "skipped and counted",
            config.directory,
            config.max_files,
            config.max_bytes,
        )
    return path


def note_failure(what: str, error: BaseException) -> None:
    """Log the first failure of the capture in this process as a warning, later ones as debug."""
    # One warning per process: a broken capture must not flood the host's logs.
    with STATE.lock:
        first = "failure" not in STATE.warned
        STATE.warned.add("failure")
    if not first:
        logger.debug("ppaux capture: %s: %s", what, error)
        return
    logger.warning(
        "ppaux capture: %s: %s: %s (the host's own error is unchanged; later "
        "capture failures are not logged)",
        what,
        type(error).__name__,
        error,
    )


def _write(
    function: str,
    config: CaptureConfig,
    exc: BaseException | None,
    tensors: object,
    output: object,
    extra: dict[str, Any] | None,
) -> Path | None:
    """Write the capture atomically; return its path, or None when the bounds refused it."""
    import torch

    directory = config.directory
    directory.mkdir(parents=True, exist_ok=True)
    if _full(capture_store.usage(directory), config, 0):
        _count_skip(directory)
        return None
    meta = capture_meta(function, exc, config, torch)
    payload = make_capture(meta, tensors, output, **(extra or {}))
    seq = next(STATE.seq)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    final = directory / capture_store.capture_name(now, meta["host"], meta["pid"], seq, function)
    temp = directory / f"{capture_store.TEMP_PREFIX}{final.stem}"
    placed = False
    try:
        _save(torch, payload, temp)
        size = temp.stat().st_size
        with _DirectoryLock(directory):
            if _full(capture_store.usage(directory), config, size):
                _add_skipped(directory)
                return None
            # Every ppaux writer renames under this lock, so a name checked free stays free
            # (a recycled pid could otherwise meet a name from an earlier process).
            while final.exists():
                final = directory / capture_store.capture_name(
                    now, meta["host"], meta["pid"], next(STATE.seq), function
                )
            # rename within one directory is atomic: readers see the whole file or none of it
            os.rename(temp, final)
            placed = True
    finally:
        if not placed:
            with contextlib.suppress(OSError):
                os.unlink(temp)
    return final


def _full(current: capture_store.Usage, config: CaptureConfig, size: int) -> bool:
    return current.files + 1 > config.max_files or current.bytes + size > config.max_bytes


def _count_skip(directory: Path) -> None:
    with _DirectoryLock(directory):
        _add_skipped(directory)


def _add_skipped(directory: Path) -> None:
    # Caller holds the directory lock; replace() keeps the counter whole for readers.
    count = capture_store.read_skipped(directory) + 1
    temp = directory / f"{capture_store.TEMP_PREFIX}skipped-{os.getpid()}"
    temp.write_text(f"{count}\n", encoding="ascii")
    os.replace(temp, directory / capture_store.SKIPPED_NAME)


def _save(torch: ModuleType, payload: dict[str, Any], temp: Path) -> None:
    """torch.save to a new file; values that cannot be pickled are saved as their repr."""
    # A file object (not a path): the zip's record folder is then always 'archive', whatever
    # the temporary file was called.
    try:
        with open(temp, "xb") as handle:
            torch.save(payload, handle)
        return
    except (pickle.PicklingError, TypeError, AttributeError):
        os.unlink(temp)
    payload = dict(
        payload, tensors=_picklable(payload["tensors"]), output=_picklable(payload["output"])
    )
    with open(temp, "xb") as handle:
        torch.save(payload, handle)


def _picklable(value: object) -> Any:
    """``value`` with every top-level entry that cannot be pickled replaced by its repr."""
    if not isinstance(value, dict):
        return value if _can_pickle(value) else _placeholder(value)
    import torch

    return {
        k: v if torch.is_tensor(v) or _can_pickle(v) else _placeholder(v) for k, v in value.items()
    }


def _can_pickle(value: object) -> bool:
    try:
        pickle.dump(value, io.BytesIO(), protocol=2)
    except Exception:
        return False
    return True


def _placeholder(value: object) -> str:
    try:
        text = repr(value)
    except Exception:
        text = object.__repr__(value)
    return f"<not picklable {type(value).__qualname__}: {text[:200]}>"


class _DirectoryLock:
    """Exclusive use of one capture directory across threads and processes, with a time limit.

    A lock file and ``flock`` where the platform has it (Linux, macOS); threads of one process
    also queue on a lock of their own. Raises :class:`TimeoutError` rather than wait for long.
    """

    def __init__(self, directory: Path) -> None:
        self._path = directory / capture_store.LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> _DirectoryLock:
        if not STATE.io_lock.acquire(timeout=LOCK_TIMEOUT_S):
            raise TimeoutError(f"{self._path}: busy for more than {LOCK_TIMEOUT_S} s")
        try:
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
            _flock(self._fd, self._path)
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
        STATE.io_lock.release()


def _flock(fd: int, path: Path) -> None:
    try:
        import fcntl
    except ImportError:  # no flock on this platform: threads of one process are still serialised
        return
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{path}: locked by another process for more than {LOCK_TIMEOUT_S} s"
                ) from None
            time.sleep(0.001)
        except OSError:
            # A file system without flock (some network mounts): capture anyway; only the
            # bounds may then be overrun by processes racing each other.
            return
