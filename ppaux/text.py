"""Text taken from a file and shown to a person: escaped so that it stays on its line.

:func:`shown` is the one way ppaux shows a string it did not write itself (a key, a record
name, a dtype spec, a device, a class name, a fingerprint field, an exception message): every
command and every report format goes through it, so a hostile dump cannot forge output lines,
recolour a terminal, reorder text with bidi marks or make an encoder fail.

A character is kept when Python calls it printable (:meth:`str.isprintable`) and escaped as
Python's ``repr`` writes it otherwise (``\\x1b``, ``\\u202e``, ``\\ud800``, ``\\U000e0001``).
Unprintable means every control character (C0, DEL, C1), every format character (bidi
embeddings, overrides, isolates and marks, zero-width joiners, tag characters), line and
paragraph separators, spaces other than the ASCII space, private-use and unassigned code
points, and lone surrogates (undecodable file names), so what is shown is printable text that
any encoder writes. Printable text comes back unchanged, so showing shown text again changes
nothing.
"""

from __future__ import annotations

__all__ = ["MAX_SHOWN", "byte_size", "counted", "cut", "shown", "with_article"]

#: Characters of a string from a file that a report keeps unless the caller says otherwise. A
#: string repeated in many entries or findings would otherwise multiply a report's size.
MAX_SHOWN = 200


def _escaped(char: str) -> str:
    return char if char.isprintable() else repr(char)[1:-1]


def cut(text: object, limit: int | None = MAX_SHOWN) -> str:
    """``text`` cut past ``limit`` characters, not escaped: a bound on what a message holds of a
    string from a file, for a message built before it is rendered (every format and the
    library's ``str()`` escape it then, with :func:`shown`).

    ``limit=None`` keeps the whole text. Otherwise a longer ``text`` becomes its first ``limit``
    characters, then ``'... (N characters)'``. A value that is not a string (a wrong type in a
    file's field) is its type's name in angle brackets rather than failing.
    """
    if not isinstance(text, str):
        return f"<{type(text).__name__}>"
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def shown(text: object, limit: int | None = MAX_SHOWN) -> str:
    """``text`` with every unprintable character escaped; cut past ``limit`` characters.

    ``limit=None`` keeps the whole text (a path the user gave, a name that must stay exact).
    Otherwise a longer ``text`` is cut as :func:`cut` cuts it, before the escaping, so a huge
    string costs no more than a short one. A value that is not a string (a wrong type in a
    file's field) is shown as its type's name in angle brackets rather than failing.
    """
    text = cut(text, limit)
    return text if text.isprintable() else "".join(map(_escaped, text))


def with_article(noun: str) -> str:
    """``noun`` after 'a' or 'an', as it is read: 'an int', 'an os.system', 'a uint8', 'a list'."""
    head = noun[:1].lower()
    vowel = head in "aeio" or (head == "u" and not noun.lower().startswith(("uint", "uni", "us")))
    return f"{'an' if vowel else 'a'} {noun}"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """'1 key', '3 keys' (``plural`` when adding an s will not do)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def byte_size(count: int) -> str:
    """A number of bytes as a person reads it: '64 MiB' for a whole number of mebibytes, else
    '1000 bytes'."""
    return f"{count >> 20} MiB" if count and count % (1 << 20) == 0 else f"{count} bytes"
