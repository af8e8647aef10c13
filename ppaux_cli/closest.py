"""The value a user most likely meant: "did you mean 'json'?" after a bad choice, a rule code
or a command name."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["did_you_mean", "not_one_of"]


def _closest(value: str, choices: Iterable[str]) -> str | None:
    """The choice ``value`` most likely meant: one it begins, or one it extends by a suffix
    after a separator, else the closest by
    difflib's similarity ratio (above 0.6, as
    :func:`difflib.get_close_matches` takes it), the first listed on a tie.

    A value much longer than every choice is no typo of one: it is not compared, so a pasted
    100 KB argument costs nothing."""
    import difflib

    wanted = value.strip().lower()
    options = list(choices)
    if not wanted or not options:
        return None
    for choice in options:
        if choice.lower().startswith(wanted):
            return choice
    # A choice with a suffix of its own ('0.5.23.post1', 'json-v2'): that choice, the longest.
    extended = [
        choice
        for choice in options
        if wanted.startswith(choice.lower()) and wanted[len(choice) : len(choice) + 1] in ".+-_"
    ]
    if extended:
        return max(extended, key=len)
    if len(wanted) > 2 * max(len(choice) for choice in options) + 2:
        return None
    best, found = 0.6, None  # difflib.get_close_matches' cutoff; the first listed on a tie
    matcher = difflib.SequenceMatcher(b=wanted)
    for choice in options:
        matcher.set_seq1(choice.lower())
        if matcher.real_quick_ratio() > best and matcher.quick_ratio() > best:
            score = matcher.ratio()
            if score > best:
                best, found = score, choice
    return found


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """ "; did you mean 'json'?" for the choice closest to ``value``; "" if none is close."""
    guess = _closest(value, list(choices))
    return f"; did you mean {guess!r}?" if guess else ""


def not_one_of(value: str, choices: Iterable[str]) -> str:
    """ "'jsn' is not one of text, json, ...; did you mean 'json'?" (a hint only if one is
    close)."""
    choices = list(choices)
    return f"{value!r} is not one of {', '.join(choices)}{did_you_mean(value, choices)}"
