"""Phrases a message quotes as the value it names, not as its failure.

``ValueError: bad config value 'device-side assert triggered' for key 'on_error'`` names a
value that holds a kernel's words; the failure is the bad value. A quoted phrase after words
that carry an error (``Cuda failure 'out of memory'``, ``failed with error 'CUDA error:
...'``, ``what(): '...'``) is that error's text and stays. :func:`unquoted_values` blanks the
others, so that the words of a kind are read in the message's own words only.
"""

from __future__ import annotations

import re

from ppaux.patterns import lazy

__all__ = ["unquoted_values"]

#: A phrase in quotes: a quote after a blank, a bracket or the line's start, a letter first,
#: the same quote closing it on the line (an apostrophe inside a word opens nothing).
_PHRASE = lazy(
    r"(?:^|(?<=[\s(\[{=,]))(?P<q>['\"\u2018\u201c])"
    r"(?P<body>[A-Za-z][^'\"\u2018\u2019\u201c\u201d\n]{0,400})"
    r"(?:(?P=q)|[\u2019\u201d])"
)
#: Words before a quote that say it holds an error's text (NCCL's ``Cuda failure 1 '...'``,
#: a relay's ``with error '...'``, a C++ ``what(): '...'``, a status ``error: '...'``).
_CARRIER = lazy(
    r"(?:error|failure|failed|exception|what\(\)|reason|status|message)\s*(?:\d{1,4}\s*)?:?\s*$",
    re.IGNORECASE,
)
#: Characters before a quote looked at for a carrier's words.
_SEEN = 40


def unquoted_values(text: str) -> str:
    """``text`` with each quoted phrase that no error's words lead blanked (its length
    kept): the message's own words, without the values it names."""
    pieces: list[str] = []
    last = 0
    for found in _PHRASE.finditer(text):
        start, end = found.span("body")
        if _CARRIER.search(text, max(0, found.start() - _SEEN), found.start()):
            continue
        pieces += [text[last:start], " " * (end - start)]
        last = end
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)
