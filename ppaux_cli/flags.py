"""The command line's words for what the library names in its own: a setting, named by the
keyword argument that takes it (``sglang_path``, ``transport="sglang"``), becomes its flag
(``--sglang-path``, ``--transport sglang``), and a limit that stopped a read gets how to raise it
here (``--limit NAME=N``).

The library never spells a flag (a library user has none to pass); it writes settings with
:func:`ppaux.errors.setting` and limits with :func:`ppaux.errors.limit_note`, and this module
finds them again (:data:`ppaux.errors.SETTING`, :data:`ppaux.errors.LIMIT_NOTE`) in every line the
command line prints and in the report it writes, and adds the flags they stand for. It only adds:
a message may quote a key, a path or a log line, where a rewrite could change the user's text
(an auxiliary key named ``batch_sizes`` is not the setting).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ppaux.errors import LIMIT_NOTE, SETTING, SETTING_NAME

if TYPE_CHECKING:
    from ppaux.errors import SettingError
    from ppaux.report import Report

__all__ = ["FLAGS", "SETTING_COMMANDS", "flag", "hint", "setting_line", "spelled", "spelled_report"]

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


def flag(setting: str) -> str:
    """The flag of ``setting`` (a keyword argument's name): ``--sglang-path`` for
    ``sglang_path``; a name the table lacks is written the way the command line writes names."""
    return FLAGS.get(setting, "--" + setting.replace("_", "-"))


#: The commands whose findings and notes name settings (replay's 'replay with
#: sender="legacy"'); the others' quote files and logs, where 'device="cuda"' is not ppaux's.
SETTING_COMMANDS = frozenset({"replay", "check-observer", "check-skew"})


def setting_line(error: SettingError) -> str:
    """The error line of a setting that cannot be used, as the command line says it:
    '--sglang-path x: only used with ...' (the flag, the value given, the reason)."""
    return f"{flag(error.option)} {error.value}: {error.reason}"


def _found(message: str, *, settings: bool) -> tuple[list[str], list[str]]:
    """The limits and the settings (as flags with their values) that ``message`` names."""
    limits = list(dict.fromkeys(match["name"] for match in LIMIT_NOTE.finditer(message)))
    if not settings:
        return limits, []
    spelled_settings = [
        f"{FLAGS[match['name']]} {match['value']}"
        for match in SETTING.finditer(message)
        if match["name"] in FLAGS
    ]
    spelled_settings += [
        flag(match["name"]) for match in SETTING_NAME.finditer(message) if match["name"] in FLAGS
    ]
    return limits, list(dict.fromkeys(spelled_settings))


def hint(message: str, *, settings: bool = True) -> str:
    """What the command line adds to ``message`` so that its user knows the flags the library's
    words stand for: 'raise it with --limit max_depth=N' for '(limit max_depth=100 reached)'
    and, unless ``settings`` is False, 'on the command line: --transport sglang' for
    'transport="sglang"'; '' when the message names neither."""
    limits, flags = _found(message, settings=settings)
    parts = [f"raise it with --limit {name}=N" for name in limits]
    if flags:
        parts.append("on the command line: " + ", ".join(flags))
    return "; ".join(parts)


def spelled(message: str, *, settings: bool = True) -> str:
    """``message`` followed by its :func:`hint` ('...; raise it with --limit max_depth=N').

    The message itself is never changed: it may quote a key, a path or a log line, and a
    rewrite could not tell the library's words from the user's.
    """
    added = hint(message, settings=settings)
    return f"{message}; {added}" if added else message


def spelled_report(report: Report) -> Report:
    """``report`` with one note per flag its findings, problems and notes stand for (limits in
    every report, settings in the reports of :data:`SETTING_COMMANDS` only); the findings and
    problems themselves are left as the library wrote them."""
    settings = report.command in SETTING_COMMANDS
    texts = [item.message for item in report.findings]
    texts += [item.message for item in report.problems]
    texts += list(report.notes)
    limits: list[str] = []
    flags: list[str] = []
    for text in texts:
        found_limits, found_flags = _found(text, settings=settings)
        limits += found_limits
        flags += found_flags
    added = [
        f"a limit stopped the work (limit {name}): raise it with --limit {name}=N"
        for name in dict.fromkeys(limits)
    ]
    if flags:
        added.append(
            "the settings named above are the library's keyword arguments; on the command "
            "line: " + ", ".join(dict.fromkeys(flags))
        )
    if not added:
        return report
    return dataclasses.replace(report, notes=[*report.notes, *added])
