"""The command line's words for what the library gives as data: a suggested setting, named by
the keyword argument that takes it (``Setting("sender", "legacy")``), is said as its flag
(``--sender legacy``), and a limit to raise (``RaiseLimit("max_depth")``) as ``--limit
max_depth=N``.

The library's findings, problems and errors carry their suggestions as data
(:class:`ppaux.suggestions.Setting`, :class:`ppaux.suggestions.RaiseLimit`) and never spell a
flag; every report and error line this command line prints is worded with :func:`cli_words`.
Nothing here reads a message back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ppaux.suggestions import say

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ppaux.errors import SettingError
    from ppaux.suggestions import Suggestion

__all__ = ["FLAGS", "cli_words", "flag", "setting_line"]

#: The flag of each setting the library may suggest or refuse, by the keyword argument that
#: holds it (a field of ``ReplayOptions`` or ``ObserverOptions``, a parameter of
#: ``ppaux.skew.collect``, ``ppaux.triage.triage_paths``, ``ppaux.capture.status_report`` or
#: the distributed gather).
FLAGS = {
    "all_gather": "--all-gather",
    "batch_sizes": "--batch-size",
    "device": "--device",
    "directory": "--dir",
    "impl": "--impl",
    "init_method": "--init-method",
    "local_zone": "--local-zone",
    "output": "--output",
    "pp_rank": "--pp-rank",
    "pp_size": "--pp-size",
    "rank": "--rank",
    "sender": "--sender",
    "sglang_path": "--sglang-path",
    "steps": "--steps",
    "timeout": "--timeout",
    "timeout_s": "--timeout",
    "transport": "--transport",
    "vocab_size": "--vocab-size",
    "world_size": "--world-size",
}


def flag(setting: str) -> str:
    """The flag of ``setting`` (a keyword argument's name): ``--sglang-path`` for
    ``sglang_path``; a name the table lacks is written the way the command line writes names."""
    return FLAGS.get(setting, "--" + setting.replace("_", "-"))


def cli_words(suggestions: Sequence[Suggestion]) -> str:
    """``suggestions`` as this command line says them: 'try --impl sglang or --impl both',
    'give --sglang-path an unpacked tree or a wheel', 'raise it with --limit max_depth=N'."""
    return say(
        suggestions,
        lambda s: f"{flag(s.name)} {s.value}",
        lambda s: flag(s.name),
        lambda s: f"--limit {s.name}=N",
    )


def setting_line(error: SettingError) -> str:
    """The error line of a setting that cannot be used, as the command line says it:
    '--sglang-path x: only used with ...; try --impl sglang' (the flag, the value given, the
    reason, then what would work)."""
    said = cli_words(error.suggestions)
    line = f"{flag(error.option)} {error.value}: {error.reason}"
    return f"{line}; {said}" if said else line
