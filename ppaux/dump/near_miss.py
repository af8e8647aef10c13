"""Keys that look like sglang's auxiliary prefix to a reader but are not it.

A key spelled with a fullwidth letter, a Cyrillic look-alike, a zero-width space, an extra
separator or a typo (a letter swapped, dropped, doubled or wrong) reads as the prefix and is
ignored by pop, its output lost. :func:`looks_like_prefix` folds what a reader does not see and
compares, allowing a few typing slips.
"""

from __future__ import annotations

import re
import unicodedata

from ppaux.sglang import OUTPUT_PREFIX

__all__ = ["TYPO_EDITS", "looks_like_prefix", "squashed"]

_NEAR_MISS = re.compile(r"[\s_.\-]")
#: Letters of other scripts drawn like the Latin ones of the prefix (Cyrillic, Greek, IPA), which
#: NFKC leaves alone: a key spelled with one looks right and is ignored by pop.
_LOOK_ALIKES = str.maketrans(
    {
        "а": "a",
        "е": "e",
        "о": "o",
        "р": "p",
        "с": "c",
        "у": "y",
        "х": "x",
        "і": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ɡ": "g",
        "ӏ": "l",
        "ո": "n",
        "ս": "u",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "ι": "i",
        "κ": "k",
        "α": "a",
        "ε": "e",
        "ɩ": "i",
        "ʋ": "v",
        "ᴠ": "v",
        "ⅰ": "i",
        "ⅼ": "l",
        "ɑ": "a",
        "ɪ": "i",
        "ʀ": "r",
        "ꜱ": "s",
        "ᴏ": "o",
        "ᴜ": "u",
        "ᴛ": "t",
    }
)
#: Characters of a key looked at for a near miss: the prefix is 29; separators may pad it.
_NEAR_MISS_SPAN = 256


def squashed(key: str) -> str:
    """``key``'s first characters as a reader sees them: compatibility forms folded (fullwidth,
    ligatures), case and look-alike letters folded, invisible format characters (zero-width
    space, joiners) and separators dropped."""
    head = key[:_NEAR_MISS_SPAN]
    if head.isascii():
        # ASCII is its own NFKC form, casefolds as lower() does, has no look-alike of the table
        # and no format character: the same answer, without a look at each character.
        return _NEAR_MISS.sub("", head.lower())
    text = unicodedata.normalize("NFKC", head).casefold().translate(_LOOK_ALIKES)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return _NEAR_MISS.sub("", text)


#: The auxiliary prefix as a reader sees it ('samplingobserveroutput').
_SQUASHED_PREFIX = squashed(OUTPUT_PREFIX)


#: Typing slips (a letter inserted, dropped, replaced, or two neighbours swapped) within which a
#: key's start still counts as the prefix; 22 letters two slips apart share no ordinary word.
TYPO_EDITS = 2


def _prefix_edits(text: str, limit: int) -> int:
    """The fewest slips that turn some start of ``text`` into the squashed prefix (optimal string
    alignment: insert, delete, replace, swap neighbours), or ``limit + 1`` when more than
    ``limit``."""
    target = _SQUASHED_PREFIX
    text = text[: len(target) + limit]
    # rows[i][j]: slips between target[:i] and text[:j].
    before: list[int] | None = None
    row = list(range(len(text) + 1))
    for i in range(1, len(target) + 1):
        current = [i] + [0] * len(text)
        for j in range(1, len(text) + 1):
            same = target[i - 1] == text[j - 1]
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (0 if same else 1))
            if (
                before is not None  # i > 1: two letters of the target to swap
                and j > 1
                and target[i - 1] == text[j - 2]
                and target[i - 2] == text[j - 1]
            ):
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return min(min(row), limit + 1)


def looks_like_prefix(key: str) -> bool:
    """True when ``key``, as a reader sees it, starts with the auxiliary prefix or with a spelling
    of it at most :data:`TYPO_EDITS` slips away."""
    text = squashed(key)
    if text.startswith(_SQUASHED_PREFIX):
        return True
    return _prefix_edits(text, TYPO_EDITS) <= TYPO_EDITS
