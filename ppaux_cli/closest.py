"""The value a user most likely meant: "did you mean 'json'?" after a bad choice, a rule code
or a command name."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["did_you_mean", "not_one_of"]


def _distance(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap two neighbours) that turn ``a`` into ``b``."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1]


def _closest(value: str, choices: Iterable[str]) -> str | None:
    """The choice ``value`` most likely meant: one it begins, else the fewest edits away (at
    most a third of its length, and at least one), the first listed on a tie."""
    wanted = value.strip().lower()
    if not wanted:
        return None
    options = list(choices)
    for choice in options:
        if choice.lower().startswith(wanted):
            return choice
    scored = [(_distance(wanted, choice.lower()), index) for index, choice in enumerate(options)]
    if not scored:
        return None
    best, index = min(scored)
    return options[index] if best <= max(1, len(wanted) // 3) else None


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """ "; did you mean 'json'?" for the choice closest to ``value``; "" if none is close."""
    guess = _closest(value, list(choices))
    return f"; did you mean {guess!r}?" if guess else ""


def not_one_of(value: str, choices: Iterable[str]) -> str:
    """ "'jsn' is not one of text, json, ...; did you mean 'json'?" (a hint only if one is
    close)."""
    choices = list(choices)
    return f"{value!r} is not one of {', '.join(choices)}{did_you_mean(value, choices)}"
