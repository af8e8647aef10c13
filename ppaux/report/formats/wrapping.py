"""Lines of the text views wrapped at the terminal's width: prose between words, shell commands
between their words with `` \\`` continuations.

Every text view (the reports of every command, ``ppaux rules``, ``ppaux explain``) wraps
through these two functions, so they keep one promise (docs/formats.md, "Text"):

- prose is broken only between words, continuation lines under a hanging indent; a single word
  longer than the room (a long path, a key) is never broken: it stays whole, and copyable, on
  a line of its own, the one kind of line that may run past the width;
- a shell command is broken only between its words, each line but the last ending in `` \\``,
  so that a shell (and :func:`shlex.split`, once the continuations are joined) reads the same
  argument vector; its trailing comment, where the whole does not fit, goes on the lines above
  it, each a ``#`` line.
"""

from __future__ import annotations

import shlex
import textwrap

__all__ = ["MIN_WIDTH", "shell_lines", "shell_words", "wrap"]

#: The narrowest width wrapped at; a narrower terminal gets lines of this width.
MIN_WIDTH = 40

#: What a continued shell line ends with.
CONTINUATION = " \\"


def wrap(text: str, width: int, indent: str = "", hanging: str | None = None) -> list[str]:
    """``text`` as lines of at most ``width`` columns (where its words allow): the first after
    ``indent``, the others after ``hanging`` (as many spaces as ``indent`` and four more,
    unless given). Each
    line of a text holding newlines is wrapped on its own; an empty text is one line,
    ``indent`` alone (trailing blanks removed)."""
    width = max(width, MIN_WIDTH)
    hanging = " " * (len(indent) + 4) if hanging is None else hanging
    lines: list[str] = []
    for part in text.split("\n"):
        wrapper = textwrap.TextWrapper(
            width=max(width, len(indent) + 1, len(hanging) + 1),
            initial_indent=indent,
            subsequent_indent=hanging,
            break_long_words=False,
            break_on_hyphens=False,
            replace_whitespace=False,
            expand_tabs=False,
        )
        lines += wrapper.wrap(part) or [indent.rstrip()]
    return lines


def shell_words(command: str) -> list[str]:
    """The words of a shell command as written (quotes kept): the runs of text between
    whitespace outside quotes, a backslash escaping the next character."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    escaped = False
    for char in command:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\" and quote != "'":
            current.append(char)
            escaped = True
        elif quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in "'\"":
            current.append(char)
            quote = char
        elif char.isspace():
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def _split_comment(line: str) -> tuple[str, str]:
    """(the command, its comment) of ``command  # comment``: the first ``  # `` outside
    quotes, found where the text before it is whole words and ends the command as the shell
    reads it. No comment gives ''."""
    start = 0
    while True:
        at = line.find("  # ", start)
        if at < 0:
            return line, ""
        head = line[:at]
        try:
            if shlex.split(head) == shlex.split(line, comments=True):
                return head, line[at + 4 :]
        except ValueError:  # inside a quote: not a comment
            pass
        start = at + 1


def shell_lines(line: str, width: int, indent: str = "") -> list[str]:
    """A line of shell (a command, a command and its ``  # comment``, or a ``#`` comment) at
    ``width``, after ``indent``: a comment wrapped as ``#`` lines; a command that does not fit
    with its comment has the comment on the lines above it, and is itself broken between its
    words, with `` \\`` at the end of each line but the last and the following lines four
    spaces further in."""
    width = max(width, MIN_WIDTH)
    if len(indent) + len(line) <= width:
        return [indent + line]
    if line.startswith("#"):
        return wrap(line[1:].strip(), width, indent + "# ", indent + "#   ")
    command, comment = _split_comment(line)
    lines = wrap(comment, width, indent + "# ", indent + "#   ") if comment else []
    if not command.strip():
        return lines
    if len(indent) + len(command) <= width:
        return [*lines, indent + command]
    words = shell_words(command)
    rows: list[list[str]] = [[words[0]]]
    for position, word in enumerate(words[1:], 2):
        room = width - (len(CONTINUATION) if position < len(words) else 0)
        lead = len(indent) + (4 if len(rows) > 1 else 0)
        if lead + len(" ".join([*rows[-1], word])) <= room:
            rows[-1].append(word)
            continue
        # An option goes down with the value that follows it ('-e NAME=VALUE' on one line).
        row = rows[-1]
        option = row[-1]
        if (
            len(row) > 1
            and option.startswith("-")
            and len(indent) + 4 + len(f"{option} {word}") <= room
        ):
            rows.append([row.pop(), word])
        else:
            rows.append([word])
    return [
        *lines,
        *(
            (indent if number == 0 else indent + "    ")
            + " ".join(row)
            + (CONTINUATION if number < len(rows) - 1 else "")
            for number, row in enumerate(rows)
        ),
    ]
