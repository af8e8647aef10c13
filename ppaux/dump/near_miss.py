"""Keys that look like sglang's auxiliary prefix to a reader but are not it.

A key spelled with a fullwidth letter, a Cyrillic look-alike, a zero-width space or an extra
separator reads as the prefix and is ignored by pop, its output lost. :func:`looks_like_prefix`
folds what a reader does not see and compares.
"""

from __future__ import annotations

import re
import unicodedata

from ppaux.sglang import OUTPUT_PREFIX

__all__ = ["looks_like_prefix", "squashed"]

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


def looks_like_prefix(key: str) -> bool:
    """True when ``key``, as a reader sees it, starts with the auxiliary prefix."""
    return squashed(key).startswith(_SQUASHED_PREFIX)
