"""Gate settings read from ``ppaux.toml`` or the ``[tool.ppaux]`` table of ``pyproject.toml``.

The search starts in the working directory and goes up to the filesystem root. In each
directory a ``ppaux.toml`` (settings at its top level) wins over a ``pyproject.toml``; a
``pyproject.toml`` counts only when it has a ``[tool.ppaux]`` table, otherwise the search goes
on upward. The first file found is the only one read. Command-line flags override it setting by
setting (:func:`resolve_gate`). Keys::

    fail-on = "warning"          # error | warning | info | never
    select = ["PP1", "PP201"]    # rule codes or code prefixes to report (default: all)
    ignore = ["PP112"]           # rule codes or code prefixes never to report
    strict = true                # "could not check" findings fail the gate

Anything else (an unknown key, a wrong type, an unknown code, a file that is not TOML) raises
:class:`ConfigError` naming the file and the key.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ppaux.errors import PpauxError
from ppaux.files import InputFileError, read_regular
from ppaux.report.document import FailOn
from ppaux.report.gate import Gate
from ppaux.report.selection import Selection, UnknownCodeError, parse_codes

__all__ = [
    "CONFIG_FILES",
    "KEYS",
    "Config",
    "ConfigError",
    "discover_config",
    "find_config",
    "load_config",
    "resolve_gate",
]

#: File names searched for, in order of preference within one directory.
CONFIG_FILES = ("ppaux.toml", "pyproject.toml")

#: Every key the configuration accepts.
KEYS = ("fail-on", "select", "ignore", "strict")


#: A configuration is a few lines; anything past this is not one (a device, a runaway file).
MAX_CONFIG_BYTES = 1024 * 1024


class ConfigError(PpauxError, ValueError):
    """An unusable configuration: ``str()`` is '<file>: <key>: <what is wrong>'."""

    def __init__(self, path: str, key: str | None, reason: str) -> None:
        super().__init__(f"{path}: {key}: {reason}" if key else f"{path}: {reason}")
        self.path = path
        self.key = key
        self.reason = reason


@dataclass(frozen=True)
class Config:
    """Settings from one file; ``None`` means the file does not set it. ``path`` is None if none."""

    path: str | None = None
    fail_on: FailOn | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    strict: bool | None = None


def _mentions_ppaux(path: str) -> bool:
    # A pyproject.toml that never names ppaux cannot configure it; skipping it without parsing
    # keeps an unrelated broken pyproject.toml higher up from breaking every run.
    try:
        return b"ppaux" in read_regular(path, MAX_CONFIG_BYTES, "configuration")
    except InputFileError:
        return False


def _has_table(path: str) -> bool:
    table = _parse(path).get("tool", {})
    return isinstance(table, dict) and "ppaux" in table


def find_config(start: str | None = None) -> str | None:
    """The configuration file that applies in ``start`` (default: the working directory)."""
    folder = os.path.abspath(start if start is not None else os.getcwd())
    while True:
        candidate = os.path.join(folder, CONFIG_FILES[0])
        if os.path.isfile(candidate):
            return candidate
        candidate = os.path.join(folder, CONFIG_FILES[1])
        if os.path.isfile(candidate) and _mentions_ppaux(candidate) and _has_table(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _parse(path: str) -> dict[str, Any]:
    try:
        data = read_regular(path, MAX_CONFIG_BYTES, "configuration")
    except InputFileError as exc:
        raise ConfigError(path, None, exc.reason) from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, None, f"not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(path, None, "not valid TOML: the file is not UTF-8") from None
    except RecursionError:
        raise ConfigError(path, None, "not a usable configuration: it nests too deeply") from None
    except ValueError as exc:  # an int too long to convert, for one
        raise ConfigError(path, None, f"not a usable configuration: {exc}") from None


def _table(path: str) -> tuple[dict[str, Any], str]:
    """The settings table of ``path`` and the prefix that names its keys in messages."""
    document = _parse(path)
    if os.path.basename(path) != CONFIG_FILES[1]:
        return document, ""
    table = document.get("tool", {})
    table = table.get("ppaux", {}) if isinstance(table, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(path, "tool.ppaux", "must be a table")
    return table, "tool.ppaux."


def _codes(path: str, key: str, value: object, known: Iterable[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(path, key, f"must be a list of rule codes, not {_toml_type(value)}")
    try:
        return parse_codes(value, known)
    except UnknownCodeError as exc:
        raise ConfigError(path, key, str(exc)) from None


def _toml_type(value: object) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, list):
        return "a list holding something other than strings" if value else "an empty list"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"


def load_config(path: str) -> Config:
    """Read and check the settings of ``path`` (a ``ppaux.toml`` or a ``pyproject.toml``)."""
    from ppaux.report.catalogue import RULES

    table, prefix = _table(path)
    values: dict[str, Any] = {}
    for key, value in table.items():
        name = prefix + key
        if key not in KEYS:
            spelled = key.strip().lower().replace("_", "-")  # TOML keys as Python names
            hint = f"; did you mean {spelled!r}?" if spelled in KEYS else ""
            raise ConfigError(path, name, f"unknown key; known keys: {', '.join(KEYS)}{hint}")
        if key == "fail-on":
            choices = [m.value for m in FailOn]
            if not isinstance(value, str) or value not in choices:
                raise ConfigError(
                    path, name, f"must be one of {', '.join(choices)}, not {_toml_type(value)}"
                )
            values["fail_on"] = FailOn(value)
        elif key == "strict":
            if not isinstance(value, bool):
                raise ConfigError(path, name, f"must be true or false, not {_toml_type(value)}")
            values["strict"] = value
        else:
            values[key] = _codes(path, name, value, RULES)
    return Config(path=path, **values)


def discover_config(start: str | None = None) -> Config:
    """The checked settings that apply in ``start``; an empty :class:`Config` if no file does."""
    path = find_config(start)
    return load_config(path) if path is not None else Config()


def resolve_gate(
    config: Config,
    *,
    fail_on: FailOn | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    strict: bool | None = None,
    extend_select: Iterable[str] = (),
    extend_ignore: Iterable[str] = (),
) -> Gate:
    """The gate for one run: each flag given (not None) replaces that setting of ``config``.

    ``extend_select`` and ``extend_ignore`` add patterns to the select and ignore lists (the
    configuration's, or the flags' when those are given) instead of replacing them. Flag
    patterns are checked like the file's; a bad one raises :class:`UnknownCodeError`.
    """
    from ppaux.report.catalogue import RULES

    chosen_select = parse_codes(select, RULES) if select is not None else config.select or ()
    chosen_ignore = parse_codes(ignore, RULES) if ignore is not None else config.ignore or ()
    more_ignore = parse_codes(extend_ignore, RULES)
    chosen_ignore += tuple(p for p in more_ignore if p not in chosen_ignore)
    return Gate(
        # FailOn(...): a caller may hand over the value rather than the member.
        fail_on=FailOn(fail_on) if fail_on is not None else config.fail_on or FailOn.ERROR,
        selection=Selection(chosen_select, chosen_ignore, parse_codes(extend_select, RULES)),
        strict=strict if strict is not None else bool(config.strict),
    )
