"""The reports of ``ppaux capture status`` (the plugin's state and the directory's usage) and
``ppaux capture list`` (every capture in a directory with the error it recorded)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ppaux.capture.directory import (
    CaptureDirError,
    CaptureEntry,
    Usage,
    list_captures,
    read_skipped,
)
from ppaux.capture.environment import PluginState, plugin_state
from ppaux.report import Finding, Report, ReportBuilder, Table, finding
from ppaux.sglang import PLUGIN_NAME
from ppaux.suggestions import Setting, Wording, library_words

__all__ = ["list_report", "status_report"]


def _writable_problem(directory: Path) -> str | None:
    """Why captures could not be written in ``directory``, or None when they could."""
    if directory.exists():
        if not directory.is_dir():
            return "not a directory"
        if not os.access(directory, os.W_OK | os.X_OK):
            return "permission denied: the directory is not writable"
        return None
    parent = directory.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot be created: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot be created: {parent} is not writable"
    # Permission bits do not tell everything (root passes them; a read-only or virtual file
    # system refuses anyway): make and remove an empty directory where the plugin would.
    import tempfile

    try:
        probe = tempfile.mkdtemp(prefix=".ppaux-probe-", dir=parent)
    except OSError as exc:
        return f"cannot be created in {parent}: {exc.strerror or exc}"
    os.rmdir(probe)
    return None


def status_report(
    directory: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    words: Wording = library_words,
) -> Report:
    """``ppaux capture status``: the plugin's state and what ``directory`` holds.

    ``directory`` defaults to ``PPAUX_CAPTURE_DIR`` from ``environ``; where neither is set, the
    table says how to give one, ``directory`` in ``words`` (a front end's name for it). Raises
    :class:`CaptureDirError` when the directory exists but cannot be listed.
    """
    state = plugin_state(environ)
    report = ReportBuilder(command="capture status")
    where = directory if directory is not None else state.capture_dir
    rows = _plugin_rows(state)
    if state.setting_error is not None:
        report.findings.append(finding("PP504", PLUGIN_NAME, state.setting_error))
    if state.reasons:
        report.findings.append(finding("PP502", PLUGIN_NAME, "; ".join(state.reasons)))
    data: dict[str, Any] = {"plugin": state.to_json(), "directory": None}
    if where is not None:
        data["directory"], more_rows, found = _directory_status(Path(where))
        rows += more_rows
        report.findings += found
    else:
        give = words((Setting("directory"),))
        rows.append(("directory", f"not set ({give} or set PPAUX_CAPTURE_DIR)"))
    report.data = data
    report.tables.append(Table("ppaux capture", ("", "value"), tuple(rows)))
    return report.build()


def _plugin_rows(state: PluginState) -> list[tuple[str, str]]:
    """The status table's rows about the plugin: its entry point, sglang, whether it would
    activate, its checkpoints and its settings."""
    rows = [
        ("plugin entry point", state.entry_point or "not installed"),
        (
            "sglang",
            f"{state.sglang_version or 'unknown version'} at {state.sglang_location}"
            if state.sglang_location
            else "not installed",
        ),
        ("would activate", "yes" if state.would_activate else "no"),
    ]
    if state.hops is not None:
        missing = [f"{hop} ({why})" for hop, why in state.hops.items() if why is not None]
        rows.append(
            ("checkpoints", "every hop" if not missing else "skipped: " + "; ".join(missing))
        )
    if state.settings is not None:
        rows.append(
            (
                "settings",
                ", ".join(f"{k}={v}" for k, v in state.settings.items() if k != "directory"),
            )
        )
    return rows


def _directory_status(
    path: Path,
) -> tuple[dict[str, Any], list[tuple[str, str]], list[Finding]]:
    """What the capture directory ``path`` holds: its data, its table rows and its findings."""
    try:
        # The captures `capture list` lists (one definition: list_captures); the writer's bounds
        # count only the files named like a capture (directory.usage).
        found_captures = list_captures(path)
        current = Usage(len(found_captures), sum(entry.size for entry in found_captures))
        skipped = read_skipped(path)
    except NotADirectoryError:
        current, skipped = Usage(0, 0), 0
    except OSError as exc:
        raise CaptureDirError(str(path), f"cannot list: {exc.strerror or exc}") from None
    problem = _writable_problem(path)
    data = {
        "path": str(path),
        "exists": path.is_dir(),
        "writable": problem is None,
        "captures": current.files,
        "bytes": current.bytes,
        "skipped": skipped,
    }
    state = (
        "" if path.is_dir() else " (not created yet)" if problem is None else " (cannot be created)"
    )
    rows = [
        ("directory", str(path) + state),
        ("captures", str(current.files)),
        ("bytes", str(current.bytes)),
        ("skipped", str(skipped)),
    ]
    found = []
    if problem is not None:
        found.append(finding("PP503", str(path), problem))
    if skipped:
        found.append(
            finding(
                "PP501",
                str(path),
                f"{skipped} capture(s) were skipped because the directory reached its bounds",
            )
        )
    return data, rows, found


def list_report(directory: str | os.PathLike[str]) -> Report:
    """``ppaux capture list``: every capture in ``directory`` with its error message.

    Raises :class:`CaptureDirError` when ``directory`` is missing or cannot be listed.
    """
    path = Path(directory)
    if not path.exists():
        raise CaptureDirError(str(path), "no such directory")
    if not path.is_dir():
        raise CaptureDirError(str(path), "not a directory")
    passed_over: list[CaptureEntry] = []
    try:
        entries = list_captures(path, passed_over)
    except OSError as exc:
        raise CaptureDirError(str(path), f"cannot list: {exc.strerror or exc}") from None
    from ppaux.dump import culprit_text, trail_text

    report = ReportBuilder(command="capture list")
    skipped = read_skipped(path)
    # One note per capture (the text view wraps it at the terminal's width, between words); the
    # file name already tells the time, host, pid and function, and JSON has every field.
    for entry in entries:
        meta = entry.meta or {}
        if entry.problem is not None:
            report.findings.append(finding("PP505/unreadable", str(entry.path), entry.problem))
            error = f"(unreadable: {entry.problem})"
        elif meta.get("rewritten_by") is not None:
            # A capture rewritten by ppaux tensorize: no longer what sglang had; the trail and
            # the error were the original's.
            source = Path(str(meta.get("rewritten_from"))).name
            was = meta.get("original_exception_type")
            error = f"(rewritten by {meta.get('rewritten_by')} from {source}" + (
                f", which failed with {was}: {meta.get('original_exception_message')})"
                if was is not None
                else ")"
            )
        elif meta.get("exception_type") is not None:
            error = f"{meta.get('exception_type')}: {meta.get('exception_message')}"
        elif entry.trail is not None:
            error = "(no error yet: taken at a checkpoint)"
        else:
            error = f"(no error: recorded with when={meta.get('when')})"
        report.notes.append(f"{entry.path.name}: {error}")
        if entry.trail is not None:
            before = "the original's trail" if meta.get("rewritten_by") is not None else "trail"
            report.notes.append(f"    {before}: {trail_text(entry.trail)}")
        if entry.culprit is not None:
            report.notes.append(f"    culprit: {culprit_text(entry.culprit)}")
    for other in passed_over:
        # A dump file under another name is a capture when it holds one: one that cannot be
        # read, or holds something else, is left out of the list, and said.
        report.findings.append(
            finding(
                "PP505/left-out",
                str(other.path),
                f"{other.problem}; left out of the list (not named like a capture, and no "
                "readable capture inside)",
            )
        )
    report.notes.append(f"{len(entries)} capture(s) in {path}, {skipped} skipped")
    report.data = {
        "directory": str(path),
        "captures": [e.to_json() for e in entries],
        "skipped": skipped,
    }
    return report.build()
