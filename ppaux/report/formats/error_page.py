"""An error page (:class:`~ppaux.report.error_page.ErrorPage`) as text, JSON and Markdown:
``ppaux explain`` with a message pasted from a log, and the docs pages in ``docs/errors/``.

Pure functions of the page and the rule catalogue. The text wraps at the width it is given (80
columns unless told) without cutting a word, a message or a file name; a shell command too long
for a line is broken between its words with a backslash continuation (:mod:`wrapping`), Python
code is printed as it is.
"""

from __future__ import annotations

import re
from typing import Any

from ppaux.report.error_page import ErrorPage, Fix
from ppaux.report.error_pages import ERROR_PAGES
from ppaux.report.formats.wrapping import shell_lines, wrap
from ppaux.sglang.messages import ADD_DUPLICATE
from ppaux.text import shown

__all__ = [
    "error_index_markdown",
    "error_page_json",
    "error_page_markdown",
    "error_page_text",
    "page_file",
]

#: The width the text page wraps at: a CI log's, and a terminal's narrowest common width.
WIDTH = 80


def page_file(page: ErrorPage) -> str:
    """The docs page's file name, relative to ``docs/errors/``."""
    return f"{page.message_id}.md"


def _rule(code: str) -> Any:
    from ppaux.report.catalogue import get_rule

    return get_rule(code)


def error_page_json(page: ErrorPage, name: str | None = None) -> dict[str, Any]:
    """One page as a JSON object; ``name`` is the tensor name of a pasted message, if any."""
    return {
        "message_id": page.message_id,
        "message": page.text,
        # Escaped as text shows it: a bidi override pasted with the message stays visible.
        "name": None if name is None else shown(name, None),
        "exception": "RuntimeError",
        "function": page.function,
        "stage": page.stage,
        "meaning": page.meaning,
        "raised_at": [
            {
                "release": release,
                "file": file,
                "line": line,
                "called_from": caller,
                "call_line": call,
            }
            for release, file, line, caller, call in page.locations()
        ],
        "when": page.when,
        "causes": list(page.causes),
        "fixes": [
            {
                "text": fix.text,
                "command": fix.command or None,
                "see": [
                    {
                        "page": f"docs/{doc.partition('#')[0]}",
                        "section": doc.partition("#")[2] or None,
                        "about": about,
                    }
                    for doc, about in fix.see
                ],
            }
            for fix in page.fixes
        ],
        "example": {"raises": page.example.raises, "fixed": page.example.fixed},
        "related": list(page.related),
        "rules": list(page.rules),
    }


def _wrap(text: str, indent: str = "  ", width: int = WIDTH) -> list[str]:
    return wrap(text, width, indent, indent)


def _bullet(text: str, width: int = WIDTH) -> list[str]:
    return wrap(text, width, "  - ", "    ")


def _see_text(fix: Fix) -> str:
    """'See docs/a.md (what it holds) and docs/b.md (...).', or '' when the fix names none."""
    parts = [f"docs/{doc.partition('#')[0]} ({about})" for doc, about in fix.see]
    return f"See {' and '.join(parts)}." if parts else ""


def _more(page: ErrorPage) -> str:
    """The code ``explain`` points at last: a rule the catalogue links to the message first."""
    return (page.predicted_by or page.rules)[0]


def _numbered(number: int, text: str, width: int = WIDTH) -> list[str]:
    return wrap(text, width, f"  {number}. ", "     ")


#: How Python code among a fix's commands begins; it is printed as it is, never broken.
_PYTHON = ("def ", "class ", "return", "from ", "import ")


def _command_lines(command: str, width: int) -> list[str]:
    """A fix's command block at ``width``: shell lines broken between words with backslash
    continuations, Python code (and the lines of a block that holds any) as it is."""
    rows = command.splitlines()
    if any(row.lstrip().startswith(_PYTHON) for row in rows):
        return [f"       {row}" if row else "" for row in rows]
    lines: list[str] = []
    for row in rows:
        lines += shell_lines(row, width, "       ") if row else [""]
    return lines


#: Where a whole observer is checked before and after its fix.
#: How to read an example's two snippets: what each defines, and where sglang takes it.
_EXAMPLE_READING = (
    "Each snippet is the code of a stage, with torch imported (import torch), and defines what "
    "sglang's transport is handed there: on the last stage, output (the auxiliary output that "
    "add sends, with tensors where the message is already built); on rank 0, message (what "
    "arrived) and observer (rank 0's observer, which pop uses to rebuild the output). "
    "Run through add and pop (ppaux's reference transport, as the tests do), the first raises "
    "the message and the second does not."
)
_WORKED_PAGE = "observers.md#a-worked-example"
_WORKED = "A whole sampling observer, checked by ppaux check-observer before and after its fix:"


def _code(code: str) -> list[str]:
    """Python code as it is, four spaces in (never broken)."""
    return [f"    {row}" if row else "" for row in code.rstrip("\n").splitlines()]


def error_page_text(page: ErrorPage, name: str | None = None, width: int = WIDTH) -> str:
    """The page for a terminal or a CI log: at most ``width`` columns where words allow."""
    from ppaux.sglang.messages import message_by_id

    message = message_by_id(page.message_id)
    shown = message.format(name) if name is not None and message.takes_name else page.text
    lines = [*_wrap(f"RuntimeError: {shown}", "", width), ""]
    lines += _wrap(f"Raised by {page.function}() on {page.stage}; sglang 0.5.19-0.5.23.", "", width)
    lines += ["", "What it means:", *_wrap(page.meaning, width=width), "", "Where it is raised:"]
    locations = page.locations()
    spans: list[tuple[list[str], str]] = []
    for release, file, line, _, _ in locations:
        if spans and spans[-1][1] == f"{file}:{line}":
            spans[-1][0].append(release)
        else:
            spans.append(([release], f"{file}:{line}"))
    for releases, where in spans:
        span = releases[0] if len(releases) == 1 else f"{releases[0]}-{releases[-1]}"
        lines += _wrap(f"{where} in {span}", "  ", width)
    file, _, method = locations[0][3].partition(":")
    calls = ", ".join(f"{call} in {release}" for release, _, _, _, call in locations)
    lines += _wrap(f"called from {method}() in {file}, line {calls}", "  ", width)
    lines += ["", "When it happens:", *_wrap(page.when, width=width), "", "Likely causes:"]
    for cause in page.causes:
        lines += _bullet(cause, width)
    lines += ["", "Fixes:"]
    for number, fix in enumerate(page.fixes, 1):
        lines += _numbered(number, fix.text, width)
        lines += _command_lines(fix.command, width)
        if fix.see:
            lines += _wrap(_see_text(fix), "     ", width)
    lines += ["", "Example: this raises it", *_code(page.example.raises)]
    lines += ["", "Fixed:", *_code(page.example.fixed), ""]
    lines += _wrap(
        f"{_WORKED} docs/{_WORKED_PAGE.partition('#')[0]} (a worked example).", "", width
    )
    lines += ["", "Related messages:"]
    for other in page.related:
        lines += _bullet(readable_template(message_by_id(other).template), width)
    lines += ["", "ppaux rules that predict it:"]
    for code in page.rules:
        rule = _rule(code)
        lines += _bullet(f"{rule.code} {rule.name}: {rule.summary}", width)
    lines += [""]
    lines += _wrap(
        f"More: ppaux explain {_more(page)}, and docs/errors/{page_file(page)}.", "", width
    )
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    from ppaux.report.formats.rules import markdown_text

    return markdown_text(text)


def error_page_markdown(page: ErrorPage, *, site: bool = True) -> str:
    """The page in Markdown. With ``site`` (the docs pages) related messages and rules link to
    their pages; without it (``explain -f markdown``) nothing refers to another file, so the
    text renders the same on GitHub, in an issue or a pull request."""
    from ppaux.report.formats.rules import markdown_code
    from ppaux.sglang.messages import message_by_id

    lines = [f"# {markdown_code(page.text)}", ""]
    lines += [
        f"`RuntimeError`, raised by {markdown_code(page.function + '()')} on {page.stage}, in "
        "every sglang release from 0.5.19 to 0.5.23.",
        "",
        "## What it means",
        "",
        _md(page.meaning),
        "",
        "## Where it is raised",
        "",
        "| release | raised at | called from |",
        "|---|---|---|",
    ]
    for release, file, line, caller, call in page.locations():
        scheduler, _, method = caller.partition(":")
        lines.append(
            f"| {release} | {markdown_code(f'{file}:{line}')} | "
            f"{markdown_code(method + '()')} at {markdown_code(f'{scheduler}:{call}')} |"
        )
    lines += ["", "## When it happens", "", _md(page.when), "", "## Likely causes", ""]
    lines += [f"- {_md(cause)}" for cause in page.causes]
    lines += ["", "## Fixes", ""]
    for number, fix in enumerate(page.fixes, 1):
        lines.append(f"{number}. {_md(fix.text)}")
        if fix.command:
            python = ("def ", "class ", "return", "from ", "import ")
            language = "python" if fix.command.startswith(python) else "sh"
            lines += ["", f"    ```{language}"]
            lines += [f"    {row}" if row else "" for row in fix.command.splitlines()]
            lines += ["    ```"]
        if fix.see:
            links = [
                f"[{_md(about)}](../{doc})"
                if site
                else f"{_md(about)} ({markdown_code('docs/' + doc.partition('#')[0])})"
                for doc, about in fix.see
            ]
            lines += ["", f"    See {' and '.join(links)}."]
        lines.append("")
    lines += ["## Example", "", _md(_EXAMPLE_READING), "", "This raises it:", "", "```python"]
    lines += [page.example.raises.rstrip("\n"), "```", "", "Fixed:", "", "```python"]
    lines += [page.example.fixed.rstrip("\n"), "```", ""]
    worked = (
        f"[a worked example](../{_WORKED_PAGE})"
        if site
        else f"a worked example ({markdown_code('docs/' + _WORKED_PAGE.partition('#')[0])})"
    )
    lines += [f"{_md(_WORKED)} {worked}.", ""]
    lines += ["## Related messages", ""]
    for other in page.related:
        text = markdown_code(message_by_id(other).template)
        lines.append(f"- [{text}]({other}.md)" if site else f"- {text}")
    lines += ["", "## ppaux rules that predict it", ""]
    for code in page.rules:
        rule = _rule(code)
        label = f"{rule.code} {rule.name}"
        if site:
            label = f"[{label}](../catalogue.md#{rule.code.lower()})"
        lines.append(f"- {label}: {_md(rule.summary)}")
    lines.append("")
    return "\n".join(lines)


def error_index_markdown() -> str:
    """docs/errors/index.md: the nine messages, which side raises each, and their pages."""
    from ppaux.report.formats.rules import markdown_code

    lines = [
        "<!-- Generated from ppaux/report/error_pages.py by scripts/generate_docs.py; "
        "do not edit. -->",
        "",
        "# sglang's pipeline-parallel messages",
        "",
        "sglang 0.5.19-0.5.23 raise nine `RuntimeError`s on the pipeline-parallel path of "
        "auxiliary (sampling-observer) output: five on the last stage, in "
        "`add_auxiliary_output_to_pp_tensors`, before the message leaves, and four on rank "
        "0, in `pop_auxiliary_output_from_pp_tensors`, after it arrives. Each has a page: what "
        "it means, where it is raised in each release, when it happens, likely causes, fixes "
        "and the ppaux rules that predict it. `ppaux explain` prints the same page for a "
        "message pasted from a log:",
        "",
        "```",
        # sglang's message holds no character that double quotes leave special
        f'ppaux explain "RuntimeError: {ADD_DUPLICATE.format("scores")}"',
        "```",
        "",
        "A traceback, or the lines of a log around it, can be piped in: `ppaux explain - < "
        "traceback.txt`. Each page's fixes are in the order that a user holding only the "
        "traceback can follow them: the log first (`ppaux triage`, see [triage](../triage.md) "
        "and [from the error to the fix](../walkthrough.md)), a capture made before any step "
        "reads one. The pages of the messages that a sampling observer's own methods cause "
        "lead to `ppaux check-observer` and `assert_pp_safe` ([Make your sampling observer "
        "PP-safe](../observers.md)). Each page lists the rules that predict its message: every "
        "rule the catalogue links to it, read from the catalogue itself, and the rules whose "
        "predicted message depends on the finding (PP115, PP402 and others).",
        "",
        "| message | raised by | page |",
        "|---|---|---|",
    ]
    for page in ERROR_PAGES:
        side = "last stage (add)" if page.side == "add" else "rank 0 (pop)"
        lines.append(
            f"| {markdown_code(page.text)} | {side} | [{page.message_id}]({page_file(page)}) |"
        )
    lines.append("")
    return "\n".join(lines)


_PLACEHOLDER = re.compile(r"\{(\w+)(?:!([rs]))?\}")


def readable_template(template: str) -> str:
    """A message template as a reader sees it: ``{name!r}`` reads ``'<name>'``, ``{name}``
    reads ``<name>``."""
    return _PLACEHOLDER.sub(
        lambda m: f"'<{m.group(1)}>'" if m.group(2) == "r" else f"<{m.group(1)}>", template
    )
