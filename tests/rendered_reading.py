"""Each report format read back as its own reader reads it: the strings a reader of the format
is shown, and the format's skeleton (the markup, commands, elements and table cells the format
itself writes), which no text in a report may change.

A property over hostile text compares the skeleton of a report holding that text with the
skeleton of the same report holding plain letters in its place, and asks that every string a
reader is shown be printable (line by line, where a format keeps a line break).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

__all__ = [
    "github_read",
    "html_read",
    "json_strings",
    "markdown_skeleton",
    "read_json",
    "xml_strings",
]


def json_strings(value: Any) -> Iterator[str]:
    """Every string of a decoded JSON document, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_strings(item)


def read_json(out: str) -> list[str]:
    return list(json_strings(json.loads(out)))


def xml_strings(out: str) -> tuple[list[str], list[tuple[str, tuple[str, ...]]]]:
    """The text, tails and attribute values of a JUnit document, and its elements in order
    (tag, attribute names)."""
    root = ET.fromstring(out.encode("utf-8"))
    strings: list[str] = []
    skeleton: list[tuple[str, tuple[str, ...]]] = []
    for element in root.iter():
        skeleton.append((element.tag, tuple(sorted(element.attrib))))
        strings += [element.text or "", element.tail or "", *element.attrib.values()]
    return strings, skeleton


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.strings: list[str] = []
        self.skeleton: list[tuple[str, ...]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.skeleton.append(("<", tag, *(name for name, _ in attrs)))
        self.strings += [value or "" for _, value in attrs]

    def handle_endtag(self, tag: str) -> None:
        self.skeleton.append(("</", tag))

    def handle_data(self, data: str) -> None:
        self.strings.append(data)

    def unknown_decl(self, data: str) -> None:
        self.skeleton.append(("decl", data))

    def handle_comment(self, data: str) -> None:
        self.skeleton.append(("comment",))

    def handle_pi(self, data: str) -> None:
        self.skeleton.append(("pi",))


def html_read(out: str) -> tuple[list[str], list[tuple[str, ...]]]:
    """The text and attribute values a browser shows of a page, and its elements in order."""
    page = _Page()
    page.feed(out)
    page.close()
    return page.strings, page.skeleton


_FENCE = re.compile(r"^(`{3,})$")
_TAG = re.compile(r"<[^>]*>")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def markdown_skeleton(out: str) -> list[tuple[Any, ...]]:
    """Per line of a Markdown document: 'fence' for a code fence, 'code' inside one (the fence
    is closed only by a run of backquotes at least as long as the one that opened it), else the
    line's unescaped table pipes and its raw HTML tags."""
    skeleton: list[tuple[Any, ...]] = []
    opened = 0
    for line in out.split("\n"):
        fence = _FENCE.match(line)
        if opened:
            if fence and len(line) >= opened:
                opened = 0
                skeleton.append(("fence",))
            else:
                skeleton.append(("code",))
            continue
        if fence:
            opened = len(line)
            skeleton.append(("fence",))
            continue
        pipes = len(_UNESCAPED_PIPE.findall(line)) if line.startswith("|") else 0
        skeleton.append(("line", pipes, tuple(_TAG.findall(line))))
    return skeleton


_COMMAND = re.compile(r"^::(error|warning|notice) ([^:]*)::(.*)$")
_DATA_ESCAPES = re.compile(r"%(?!25|0A|0D)")


def _github_unescaped(text: str) -> str:
    return (
        text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
    )


def github_read(out: str) -> tuple[list[str], list[tuple[str, ...]]]:
    """What the Actions runner reads of workflow-command output: each command's level and
    property names (properties end at ',' and the list at '::') and the lines of its message,
    the property values and message it decodes, and every other line as a log line."""
    strings: list[str] = []
    skeleton: list[tuple[str, ...]] = []
    for line in out.split("\n"):
        command = _COMMAND.match(line)
        if not line.startswith("::"):
            skeleton.append(("log", line.split(" ", 1)[0]))
            strings.append(line)
            continue
        assert command, line  # a line the runner reads as a command, in ppaux's own form
        level, properties, data = command.groups()
        assert not _DATA_ESCAPES.search(data), line  # a '%' the runner would decode
        names = []
        for item in properties.split(","):
            name, _, value = item.partition("=")
            names.append(name)
            strings.append(_github_unescaped(value))
        message = _github_unescaped(data).split("\n")
        skeleton.append((level, *names, f"{len(message)} lines"))
        strings += message
    return strings, skeleton
