"""The command line's words for what the library names in its own: a setting, named by the
keyword argument that takes it (``sglang_path``, ``transport="sglang"``), becomes its flag
(``--sglang-path``, ``--transport sglang``), and a limit that stopped a read gets how to raise it
here (``--limit NAME=N``).

The library never spells a flag (a library user has none to pass); it writes settings with
:func:`ppaux.errors.setting` and limits with :func:`ppaux.errors.limit_note`, and this module
finds them again (:data:`ppaux.errors.SETTING`, :data:`ppaux.errors.LIMIT_NOTE`) in every line the
command line prints and in the report it writes.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from ppaux.errors import LIMIT_NOTE, SETTING

if TYPE_CHECKING:
    from ppaux.report import Report

__all__ = ["FLAGS", "SETTING_COMMANDS", "flag", "spelled", "spelled_report"]

#: The flag of each setting a library message may name, by the keyword argument that holds it
#: (a field of ``ReplayOptions`` or ``ObserverOptions``, a parameter of ``ppaux.skew.collect``).
FLAGS = {
    "all_gather": "--all-gather",
    "batch_sizes": "--batch-size",
    "device": "--device",
    "impl": "--impl",
    "pp_rank": "--pp-rank",
    "pp_size": "--pp-size",
    "sender": "--sender",
    "sglang_path": "--sglang-path",
    "steps": "--steps",
    "timeout_s": "--timeout",
    "transport": "--transport",
    "vocab_size": "--vocab-size",
}

# A setting named without a value: only the names no word of prose can be (they hold an
# underscore), and not as part of a path or a longer name.
_BARE = re.compile(
    r"(?<![\w./-])(?P<name>"
    + "|".join(sorted((re.escape(name) for name in FLAGS if "_" in name), key=len, reverse=True))
    + r")(?![\w/-]|\.\w)"
)


def flag(setting: str) -> str:
    """The flag of ``setting`` (a keyword argument's name): ``--sglang-path`` for
    ``sglang_path``; a name the table lacks is written the way the command line writes names."""
    return FLAGS.get(setting, "--" + setting.replace("_", "-"))


#: The commands whose findings and notes name settings (replay's 'replay with
#: sender="legacy"'); the others' quote files and logs, where 'device="cuda"' is not ppaux's.
SETTING_COMMANDS = frozenset({"replay", "check-observer", "check-skew"})


def spelled(message: str, *, settings: bool = True) -> str:
    """``message`` in the command line's words: '(limit max_depth=100 reached)' becomes
    '(limit max_depth=100; raise it with --limit max_depth=N)' and, unless ``settings`` is
    False, 'transport="sglang"' becomes '--transport sglang' and 'sglang_path' '--sglang-path';
    the rest is left as it is."""
    message = LIMIT_NOTE.sub(_limit, message)
    if not settings:
        return message
    message = SETTING.sub(_setting, message)
    return _BARE.sub(lambda match: flag(match["name"]), message)


def _limit(match: re.Match[str]) -> str:
    name, value = match["name"], match["value"]
    limit = name if value is None else f"{name}={value}"
    return f"(limit {limit}; raise it with --limit {name}=N)"


def _setting(match: re.Match[str]) -> str:
    name = match["name"]
    if name not in FLAGS:
        return match[0]
    return f"{FLAGS[name]} {match['value']}"


def spelled_report(report: Report) -> Report:
    """A copy of ``report`` whose findings, problems and notes are :func:`spelled`: limits in
    every report, settings in the reports of :data:`SETTING_COMMANDS` only."""
    settings = report.command in SETTING_COMMANDS
    return dataclasses.replace(
        report,
        findings=[
            dataclasses.replace(item, message=spelled(item.message, settings=settings))
            for item in report.findings
        ],
        problems=[
            dataclasses.replace(item, message=spelled(item.message, settings=settings))
            for item in report.problems
        ],
        notes=[spelled(note, settings=settings) for note in report.notes],
    )
