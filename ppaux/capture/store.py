"""A capture directory on disk: its layout, its usage against the bounds, and what it holds.

One directory may receive captures from many threads and processes (every scheduler of a
server). Its layout::

    capture-<UTC time>-<host>-<pid>-<seq>-<add|pop>.pt   one finished capture each
    .ppaux-tmp-*                                        a capture being written (renamed when done)
    .ppaux-capture.lock                                 serialises the bound checks across processes
    .ppaux-capture.skipped                              how many captures the bounds refused

Only finished captures count against ``max_files`` and ``max_bytes``. This module never imports
torch: it lists files and reads each capture's metadata with the safe reader
(:mod:`ppaux.dump.dumpfile`), and it builds the reports of ``ppaux capture status`` (is the sglang
plugin installed, would it activate, what the directory holds) and ``ppaux capture list``.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppaux.capture.hops import hop_availability
from ppaux.capture.settings import ENV_DIR, MAX_COUNTER_BYTES, config_from_env
from ppaux.errors import PathError
from ppaux.report import Report, Table, finding
from ppaux.sglang import (
    ENTRY_POINT,
    HOOK_REGISTRY_FILE,
    PLUGIN_GROUP,
    PLUGIN_NAME,
    TRANSPORT_FILE,
)

__all__ = [
    "CAPTURE_GLOB",
    "LOCK_NAME",
    "SKIPPED_NAME",
    "TEMP_PREFIX",
    "CaptureDirError",
    "CaptureEntry",
    "PluginState",
    "Usage",
    "capture_name",
    "capture_paths",
    "list_captures",
    "list_report",
    "plugin_state",
    "read_skipped",
    "status_report",
    "usage",
]

CAPTURE_GLOB = "capture-*.pt"
LOCK_NAME = ".ppaux-capture.lock"
SKIPPED_NAME = ".ppaux-capture.skipped"
TEMP_PREFIX = ".ppaux-tmp-"

_CAPTURE_RE = re.compile(r"^capture-[^/]+\.pt$")
# Host names become part of a file name: keep letters, digits, '.', '_' and '-' only.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class CaptureDirError(PathError, ValueError):
    """A capture directory that cannot be used: ``str()`` is '<path>: <reason>'."""


@dataclass(frozen=True)
class Usage:
    """What the finished captures of a directory take: how many files and how many bytes."""

    files: int
    bytes: int


@dataclass(frozen=True)
class CaptureEntry:
    """One capture file: its size and metadata, or why its metadata could not be read."""

    path: Path
    size: int
    meta: dict[str, Any] | None
    problem: str | None = None
    #: The hops the message passed, when a checkpoint took the capture.
    trail: list[dict[str, Any]] | None = None
    #: The code between the last clean and the first dirty hop, when one was resolved.
    culprit: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as a JSON object (``meta`` as recorded, ``problem`` when unreadable,
        ``trail`` and ``culprit`` when a checkpoint took it)."""
        return {
            "path": str(self.path),
            "size": self.size,
            "meta": self.meta,
            "problem": self.problem,
            "trail": self.trail,
            "culprit": self.culprit,
        }


def capture_name(time: str, host: str, pid: int, seq: int, function: str) -> str:
    """The file name of a capture; unique per host, process and call, sortable by time.

    ``time`` is a compact UTC stamp such as ``20261202T100000Z``; ``function`` is the full
    function name, shortened to ``add`` or ``pop``. ``seq`` counts the captures of one process
    (zero-padded, so that names of one process and second sort in order).
    """
    short = "add" if function.startswith("add") else "pop" if function.startswith("pop") else "call"
    safe_host = _UNSAFE.sub("_", host)[:64] or "host"
    return f"capture-{time}-{safe_host}-{pid}-{seq:04d}-{short}.pt"


def capture_paths(directory: str | os.PathLike[str]) -> list[Path]:
    """The finished captures in ``directory``, oldest name first; [] when it does not exist.

    Raises :class:`OSError` when the directory exists but cannot be listed.
    """
    base = Path(directory)
    try:
        names = os.listdir(base)
    except FileNotFoundError:
        return []
    return [base / n for n in sorted(names) if _CAPTURE_RE.match(n)]


def usage(directory: str | os.PathLike[str]) -> Usage:
    """Files and bytes of the finished captures in ``directory`` (what the bounds count).

    A file that disappears while it is counted (deleted by a user) is simply not counted.
    """
    files = 0
    total = 0
    for path in capture_paths(directory):
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISREG(info.st_mode):
            files += 1
            total += info.st_size
    return Usage(files, total)


def read_skipped(directory: str | os.PathLike[str]) -> int:
    """How many captures the bounds of ``directory`` refused so far (0 when none recorded)."""
    try:
        with open(Path(directory) / SKIPPED_NAME, "rb") as handle:
            text = handle.read(MAX_COUNTER_BYTES + 1)
    except FileNotFoundError:
        return 0
    if len(text) > MAX_COUNTER_BYTES:
        return 0
    try:
        value = int(text.decode("ascii").strip() or "0")
    except (UnicodeDecodeError, ValueError):
        return 0
    return max(value, 0)


def _candidates(directory: str | os.PathLike[str]) -> list[tuple[Path, bool]]:
    """The files of ``directory`` that may be captures, sorted by name, each with whether its
    name is a capture's: a capture renamed or copied in under another name is found by its
    content, so every dump file (``*.pt``, ``*.pkl``, ...) is a candidate too."""
    from ppaux.dump import DUMP_SUFFIXES

    base = Path(directory)
    try:
        names = os.listdir(base)
    except FileNotFoundError:
        return []
    found = []
    for name in sorted(names):
        named = bool(_CAPTURE_RE.match(name))
        if named or (not name.startswith(".") and name.lower().endswith(DUMP_SUFFIXES)):
            found.append((base / name, named))
    return found


def list_captures(directory: str | os.PathLike[str]) -> list[CaptureEntry]:
    """Every finished capture in ``directory`` with its metadata, read without torch.

    Captures are found by their content: a file named like a capture, and any other dump file
    that holds a ppaux capture record. A file named like a capture that is not a readable ppaux
    capture is listed with ``meta`` None and the reason in ``problem``; another file that is not
    a capture is passed over. Nothing in a file is ever executed.
    """
    from ppaux.dump import read_culprit, read_dump, read_trail
    from ppaux.errors import DumpError

    entries = []
    for path, named in _candidates(directory):
        try:
            size = path.lstat().st_size
        except FileNotFoundError:
            continue
        try:
            record = read_dump(path).capture
        except DumpError as exc:
            if named:
                entries.append(CaptureEntry(path, size, None, exc.reason))
            continue
        if record is None:
            if named:
                entries.append(CaptureEntry(path, size, None, "not a ppaux capture file"))
            continue
        meta = {k: _plain(v) for k, v in record["meta"].items() if isinstance(k, str)}
        entries.append(
            CaptureEntry(path, size, meta, trail=read_trail(record), culprit=read_culprit(record))
        )
    return entries


def _plain(value: Any) -> Any:
    # Metadata is plain data when ppaux wrote it; anything else is shown, never trusted.
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


# ----------------------------------------------------------------------------------------------
# The sglang plugin in this environment

_PLUGIN_GROUP = PLUGIN_GROUP
_PLUGIN_NAME = PLUGIN_NAME
_ENTRY_POINT = ENTRY_POINT
_FRAMEWORK = HOOK_REGISTRY_FILE
_TRANSPORT = TRANSPORT_FILE


@dataclass(frozen=True)
class PluginState:
    """What decides whether the sglang plugin captures in this environment.

    ``reasons`` says why it would not (empty when it would); ``setting_error`` names an invalid
    ``PPAUX_CAPTURE_*`` value.
    """

    entry_point: str | None
    sglang_version: str | None
    sglang_location: str | None
    has_framework: bool
    has_transport: bool
    capture_dir: str | None
    sglang_plugins: str | None
    setting_error: str | None
    settings: dict[str, Any] | None
    reasons: tuple[str, ...]
    #: Each checkpoint hop: None when this sglang has its target, else why it is skipped.
    hops: dict[str, str | None] | None = None

    @property
    def would_activate(self) -> bool:
        """True when sglang started from this environment would capture."""
        return not self.reasons

    def to_json(self) -> dict[str, Any]:
        """The state as a JSON object."""
        return {
            "entry_point": self.entry_point,
            "installed": self.entry_point == _ENTRY_POINT,
            "would_activate": self.would_activate,
            "reasons": list(self.reasons),
            "sglang_version": self.sglang_version,
            "sglang_location": self.sglang_location,
            "sglang_has_plugin_framework": self.has_framework,
            "sglang_has_transport": self.has_transport,
            "PPAUX_CAPTURE_DIR": self.capture_dir,
            "SGLANG_PLUGINS": self.sglang_plugins,
            "setting_error": self.setting_error,
            "settings": self.settings,
            "hops": self.hops,
        }


def _entry_point() -> str | None:
    try:
        found = importlib.metadata.entry_points(group=_PLUGIN_GROUP)
    except Exception:  # broken metadata of some other distribution
        return None
    for entry in found:
        if entry.name == _PLUGIN_NAME:
            return entry.value
    return None


def plugin_state(environ: Mapping[str, str] | None = None) -> PluginState:
    """Whether sglang, started with ``environ`` from this Python environment, would capture.

    Reads entry-point metadata and sglang's files as text; imports neither sglang nor torch.
    """
    from ppaux import sglang as sglang_module

    env = os.environ if environ is None else environ
    reasons = []
    entry = _entry_point()
    if entry is None:
        reasons.append(f"the {_PLUGIN_NAME!r} entry point is not installed in this environment")
    elif entry != _ENTRY_POINT:
        reasons.append(
            f"the {_PLUGIN_NAME!r} entry point points at {entry!r}, not {_ENTRY_POINT!r}"
        )
    root = sglang_module.find_sglang_root()
    try:
        version = sglang_module.sglang_version(root) if root is not None else None
    except (OSError, ValueError, LookupError):  # an unreadable _version.py says nothing
        version = None
    package = root / "sglang" if root is not None else None
    has_framework = package is not None and (package / _FRAMEWORK).is_file()
    has_transport = package is not None and (package / _TRANSPORT).is_file()
    if root is None:
        reasons.append("sglang is not installed in this environment")
    else:
        if not has_framework:
            reasons.append(
                f"sglang {version or '(unknown version)'} has no plugin framework "
                "(sglang.srt.plugins); use ppaux.capture.install()"
            )
        if not has_transport:
            reasons.append(
                f"sglang {version or '(unknown version)'} has no PP auxiliary "
                "transport (added in 0.5.19)"
            )
    directory = env.get(ENV_DIR, "").strip() or None
    if directory is None:
        reasons.append(f"{ENV_DIR} is not set")
    allowed = env.get("SGLANG_PLUGINS", "").strip() or None
    if allowed is not None and _PLUGIN_NAME not in {x.strip() for x in allowed.split(",")}:
        reasons.append(f"SGLANG_PLUGINS={allowed!r} does not list {_PLUGIN_NAME!r}")
    setting_error = None
    settings = None
    try:
        config = config_from_env(env)
    except ValueError as exc:
        setting_error = str(exc)
        reasons.append(f"invalid setting: {exc}")
    else:
        if config is not None:
            settings = {
                "directory": str(config.directory),
                "when": config.when,
                "max_files": config.max_files,
                "max_bytes": config.max_bytes,
                "sample_every": config.sample_every,
            }
            if config.strict:  # shown only when on, the default stays as it was
                settings["strict"] = True
    return PluginState(
        entry_point=entry,
        sglang_version=version,
        sglang_location=str(package) if package is not None else None,
        has_framework=has_framework,
        has_transport=has_transport,
        capture_dir=directory,
        sglang_plugins=allowed,
        setting_error=setting_error,
        settings=settings,
        reasons=tuple(reasons),
        hops=hop_availability(package) if package is not None and has_transport else None,
    )


# ----------------------------------------------------------------------------------------------
# Reports


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
    directory: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Report:
    """``ppaux capture status``: the plugin's state and what ``directory`` holds.

    ``directory`` defaults to ``PPAUX_CAPTURE_DIR`` from ``environ``. Raises
    :class:`CaptureDirError` when the directory exists but cannot be listed.
    """
    state = plugin_state(environ)
    report = Report(command="capture status")
    where = directory if directory is not None else state.capture_dir
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
    if state.setting_error is not None:
        report.findings.append(finding("PP504", _PLUGIN_NAME, state.setting_error))
    if state.reasons:
        report.findings.append(finding("PP502", _PLUGIN_NAME, "; ".join(state.reasons)))
    data: dict[str, Any] = {"plugin": state.to_json(), "directory": None}
    if where is not None:
        path = Path(where)
        try:
            current = usage(path)
            skipped = read_skipped(path)
        except NotADirectoryError:
            current, skipped = Usage(0, 0), 0
        except OSError as exc:
            raise CaptureDirError(str(path), f"cannot list: {exc.strerror or exc}") from None
        problem = _writable_problem(path)
        data["directory"] = {
            "path": str(path),
            "exists": path.is_dir(),
            "writable": problem is None,
            "captures": current.files,
            "bytes": current.bytes,
            "skipped": skipped,
        }
        rows += [
            (
                "directory",
                str(path)
                + (
                    ""
                    if path.is_dir()
                    else " (not created yet)"
                    if problem is None
                    else " (cannot be created)"
                ),
            ),
            ("captures", str(current.files)),
            ("bytes", str(current.bytes)),
            ("skipped", str(skipped)),
        ]
        if problem is not None:
            report.findings.append(finding("PP503", str(path), problem))
        if skipped:
            report.findings.append(
                finding(
                    "PP501",
                    str(path),
                    f"{skipped} capture(s) were skipped because the directory reached its bounds",
                )
            )
    else:
        rows.append(("directory", "not set (pass --dir or set PPAUX_CAPTURE_DIR)"))
    report.data = data
    report.tables.append(Table("ppaux capture", ("", "value"), tuple(rows)))
    return report


def list_report(directory: str | os.PathLike[str]) -> Report:
    """``ppaux capture list``: every capture in ``directory`` with its error message.

    Raises :class:`CaptureDirError` when ``directory`` is missing or cannot be listed.
    """
    path = Path(directory)
    if not path.exists():
        raise CaptureDirError(str(path), "no such directory")
    if not path.is_dir():
        raise CaptureDirError(str(path), "not a directory")
    try:
        entries = list_captures(path)
    except OSError as exc:
        raise CaptureDirError(str(path), f"cannot list: {exc.strerror or exc}") from None
    from ppaux.dump import culprit_text, trail_text

    report = Report(command="capture list")
    skipped = read_skipped(path)
    # One line per capture, never wrapped, so that names and messages stay greppable; the file
    # name already tells the time, host, pid and function, and JSON has every field.
    for entry in entries:
        meta = entry.meta or {}
        if entry.problem is not None:
            report.findings.append(finding("PP505", str(entry.path), entry.problem))
            error = f"(unreadable: {entry.problem})"
        elif meta.get("exception_type") is not None:
            error = f"{meta.get('exception_type')}: {meta.get('exception_message')}"
        elif entry.trail is not None:
            error = "(no error yet: taken at a checkpoint)"
        else:
            error = f"(no error: recorded with when={meta.get('when')})"
        report.notes.append(f"{entry.path.name}: {error}")
        if entry.trail is not None:
            report.notes.append(f"    trail: {trail_text(entry.trail)}")
        if entry.culprit is not None:
            report.notes.append(f"    culprit: {culprit_text(entry.culprit)}")
    report.notes.append(f"{len(entries)} capture(s) in {path}, {skipped} skipped")
    report.data = {
        "directory": str(path),
        "captures": [e.to_json() for e in entries],
        "skipped": skipped,
    }
    return report
