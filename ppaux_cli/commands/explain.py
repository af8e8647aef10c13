"""``ppaux explain CODE|NAME|MESSAGE``: print one catalogue rule, or the error page of one of
sglang's nine messages pasted from a log; ``ppaux explain -`` reads the message (a log line, a
whole traceback) from stdin."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from ppaux.report import RulesFormat
from ppaux.sglang import ADD_DUPLICATE
from ppaux_cli.choices import choice_option
from ppaux_cli.exits import fail
from ppaux_cli.options import OutputOption
from ppaux_cli.output import STDIO, text_width, waiting_on_stdin, write_text
from ppaux_cli.report_options import complete_codes

if TYPE_CHECKING:
    from ppaux.triage import PastedHint

__all__ = ["STDIN_LIMIT", "explain"]

#: The most that ``explain -`` reads from stdin: a traceback, or many, fits; a whole server log
#: is for ``ppaux triage -``.
STDIN_LIMIT = 4 * 1024 * 1024


def explain(
    code: Annotated[
        str,
        typer.Argument(
            metavar="CODE|NAME|MESSAGE|-",
            autocompletion=complete_codes,
            help="A rule code such as PP101 (any case), a rule name such as aux-non-tensor, or "
            "one of sglang's messages as pasted from a log, quotes and name included: "
            f"{ADD_DUPLICATE.format('scores')!r}; - reads the message, a log line or a "
            "whole traceback from stdin (at most 4 MiB).",
        ),
    ],
    format: Annotated[
        RulesFormat,
        choice_option(
            RulesFormat,
            "--format",
            "-f",
            "--output-format",
            default="text",
            help="text, json (one rule or page object) or markdown (renders on GitHub).",
        ),
    ] = RulesFormat.TEXT,
    output: OutputOption = None,
) -> None:
    """Explain one finding code, or one of sglang's PP messages: what it means, where sglang
    raises it, likely causes, the fix and the ppaux rules that predict it."""
    from ppaux.report import RULES, UnknownRuleError, get_rule
    from ppaux.sglang import search_pasted

    if code == STDIO:
        wanted = _read_stdin(output)
        if "\n" in wanted:
            found = search_pasted(wanted)
            if found is None:
                _refuse(_other_type(wanted, "-: ") or _nothing_in_stdin(wanted))
            write_text(_page(found.message.id, found.name, format), output, "the page")
            return
    else:
        wanted = code.strip()
    rule = None
    try:
        rule = get_rule(wanted)
    except UnknownRuleError:
        rule = next((r for r in RULES.values() if r.name == wanted.lower()), None)
    if rule is None:
        found = search_pasted(wanted)
        if found is None:
            _refuse(_other_type(wanted) or _unknown(wanted))
        write_text(_page(found.message.id, found.name, format), output, "the page")
        return
    if format == RulesFormat.JSON:
        import json

        from ppaux.report import rule_json

        text = json.dumps(rule_json(rule), indent=2, ensure_ascii=False) + "\n"
    elif format == RulesFormat.MARKDOWN:
        from ppaux.report import rule_markdown

        # No attr_list anchor: GitHub, an issue or a pull request would show it as text.
        text = rule_markdown(rule, anchor=False)
    else:
        from ppaux.report import render_rule

        text = render_rule(rule, text_width())
    write_text(text, output, "the rule")


def _page(message_id: str, name: str | None, format: RulesFormat) -> str:
    from ppaux.report import page_for

    page = page_for(message_id)
    if format == RulesFormat.JSON:
        import json

        from ppaux.report import error_page_json

        return json.dumps(error_page_json(page, name), indent=2, ensure_ascii=False) + "\n"
    if format == RulesFormat.MARKDOWN:
        from ppaux.report import error_page_markdown

        return error_page_markdown(page, site=False)
    from ppaux.report import error_page_text

    return error_page_text(page, name, text_width())


def _read_stdin(output: str | None) -> str:
    """What stdin holds, at most :data:`STDIN_LIMIT` bytes, decoded as UTF-8 (a byte that is
    not is replaced), stripped; fails on nothing or on more than the limit, and when
    ``output`` is the input (the file behind stdin, or the one a pipe was filled from)."""
    from ppaux_cli.output_paths import check_output_path, refuse_stdin_copy, stdin_reader

    check_output_path(output, [STDIO])
    waiting_on_stdin("a message or a traceback", "ppaux explain - < traceback.txt")
    stream, reader = stdin_reader(output)
    try:
        data = stream.read(STDIN_LIMIT + 1)
    except OSError as exc:
        fail(f"-: cannot read stdin: {exc.strerror or exc}")
    refuse_stdin_copy(reader, output)
    from ppaux.triage import looks_binary

    if looks_binary(data[:4096]):
        fail("-: stdin holds binary data, not a message or a traceback")
    if len(data) > STDIN_LIMIT:
        fail(
            f"-: stdin holds more than {STDIN_LIMIT // (1024 * 1024)} MiB; explain reads one "
            "message or traceback: pipe the traceback alone, or give the whole log to "
            "'ppaux triage -'"
        )
    text = data.decode("utf-8", errors="replace").strip()
    if not text:
        fail(
            "-: stdin is empty; pipe a message or a traceback in, as in "
            "'ppaux explain - < traceback.txt'"
        )
    return text


#: The headline's length, 'ppaux: error: ' included: the pointer to triage always ends it; the
#: kind's words are cut first (to :data:`_FEWEST_WORDS`), then where to look first gives way,
#: then the kind's words again.
_HEADLINE = 200
_FEWEST_WORDS = 32
#: The headline of a pasted line that is none of the nine: the line itself is not quoted
#: again (its reader pasted it), the kind and where to look follow.
_NONE_OF_THEM = "none of sglang's nine PP messages"


def _cut(words: str, most: int) -> str:
    """``words`` in at most ``most`` characters, cut between words."""
    if len(words) <= most:
        return words
    return words[: most - 3].rsplit(" ", 1)[0] + "..."


#: How every headline that has a kind ends (the full reading stands under it).
_TO_TRIAGE = "; 'ppaux triage' on the whole log names the root"


#: A refusal: its one line, then the lines under it.
_Said = tuple[str, tuple[str, ...]]


def _refuse(said: _Said) -> NoReturn:
    """Exit 2 with the refusal's line and the lines under it: the first wrapped between words
    at the width text is written at, as a page's text is (continuations two spaces further in
    than the margin :func:`~ppaux_cli.exits.fail` gives them), then the commands, one a line."""
    from ppaux.report import shell_lines, wrap

    width = text_width() - len(_MARGIN)
    reading, *steps = said[1] or ("",)
    # The commands under the reading, one a line; one too long is broken with ' \', as a
    # page's commands are, so that each still pastes as it is.
    commands = [part for step in steps for part in shell_lines(step, width)]
    lines = [*wrap(reading, width, "", _MARGIN), *commands] if said[1] else []
    fail(said[0], details=lines)


#: The margin :func:`~ppaux_cli.exits.fail` puts before each line under the error.
_MARGIN = "  "


def _pasted_hint(text: str) -> PastedHint | None:
    from ppaux.triage import pasted_hint

    return pasted_hint(text)


def _headline(head: str, hint: PastedHint) -> _Said:
    """One headline of at most :data:`_HEADLINE` characters (``head``, the kind, where to look
    first, the pointer to triage), with triage's whole reading under it, every command it
    gives included."""
    look = f"; {hint.look}" if hint.look else ""
    fixed = len("ppaux: error: ") + len(head) + 2 + len(_TO_TRIAGE)
    kind = hint.brief
    # Past the bound, the pointer to triage stays: the kind's words are cut, between words,
    # and where to look first gives way only where the kind would be cut shorter than
    # :data:`_FEWEST_WORDS`; where even those do not fit (a long head), the kind is cut to
    # what does, or left wholly to the lines under the headline, which give both whole.
    if fixed + len(kind) + len(look) > _HEADLINE:
        room = _HEADLINE - fixed - len(look)
        if room < min(len(kind), _FEWEST_WORDS):
            look, room = "", _HEADLINE - fixed
        kind = _cut(kind, room) if room >= _FEWEST_WORDS // 2 else ""
    said = f"{head}: {kind}" if kind else head
    return f"{said}{look}{_TO_TRIAGE}", (*hint.full.split("\n"),)


def _other_type(text: str, where: str = "") -> _Said | None:
    """Fails for the words of one of the nine messages raised as another exception type
    than sglang's RuntimeError (as triage reads it in a log: not sglang's); None where the
    text is none of those."""
    from ppaux.sglang import raised_otherwise

    other = raised_otherwise(text)
    if other is None:
        return None
    raiser, found = other
    head = (
        f"{where}{_short_type(raiser)!r} raised the words of {found.message.id!r}, "
        "sglang's RuntimeError: none of its nine PP messages"
    )
    hint = _pasted_hint(text)
    if hint is None:
        return f"{head}; 'ppaux triage' on the whole log names the root", ()
    return _headline(head, hint)


def _short_type(name: str) -> str:
    """An exception type's name for a headline: its last part where the dotted whole is long
    (``torch.distributed.DistBackendError`` is ``DistBackendError``)."""
    if len(name) <= _FEWEST_WORDS:
        return name
    return _cut(name.rsplit(".", 1)[-1], _FEWEST_WORDS)


def _nothing_in_stdin(text: str) -> _Said:
    """The refusal of several lines from stdin that hold none of the nine messages."""
    lines = text.count("\n") + 1
    head = f"-: none of sglang's nine PP messages is in the {lines} lines read from stdin"
    hint = _pasted_hint(text)
    if hint is not None:
        return _headline(head, hint)
    return f"{head}; 'ppaux triage -' reads a whole log", ()


#: A value read as a rule code mistyped: letters then a digit (PP101, pp10, PP1O1), or PP and
#: a few more letters or digits.
_CODE_SHAPE = re.compile(r"[A-Za-z]{1,4}[0-9][0-9A-Za-z]{0,5}|[Pp][Pp][0-9A-Za-z]{0,6}")
#: A value read as a rule name mistyped: lower-case words joined by '-' (aux-non-tensor).
_NAME_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+")


def _unknown(wanted: str) -> _Said:
    """The refusal of a value that is no code, name or message, with the closest of them."""
    from ppaux.report import RULES, UnknownRuleError
    from ppaux.sglang import MESSAGES, message_shape
    from ppaux_cli.closest import did_you_mean

    shown = wanted if len(wanted) <= 80 else wanted[:77] + "..."
    if " " in wanted or wanted.endswith(":") or wanted.lstrip("(").startswith("["):
        # A sentence: a message misspelled or cut. The name inside quotes is not compared.
        bare = message_shape(wanted)
        templates = [m.template for m in MESSAGES]
        hint = did_you_mean(_prefix(bare, templates), templates)
        kind = _pasted_hint(wanted)
        if kind is not None and not hint:
            return _headline(_NONE_OF_THEM, kind)
        return (
            f"{shown!r} is none of sglang's nine PP messages; 'ppaux rules' lists the rules "
            f"that predict them{hint}"
        ), ()
    if _NAME_SHAPE.fullmatch(wanted):
        names = [r.name for r in RULES.values()]
        hint = did_you_mean(_prefix(wanted, names), names)
        return f"unknown rule name {shown!r}; 'ppaux rules' lists them{hint}", ()
    hint = did_you_mean(_prefix(wanted.upper(), RULES), RULES)
    if _CODE_SHAPE.fullmatch(wanted) or hint:
        return f"{UnknownRuleError(shown)}{hint}", ()
    # a caret line, a bracket, a word of code: text of a log, not a code mistyped
    kind = _pasted_hint(wanted)
    if kind is not None:
        return _headline(_NONE_OF_THEM, kind)
    return (
        f"{shown!r} is none of sglang's nine PP messages, nor a rule code or name; 'ppaux "
        "rules' lists the rules; 'ppaux triage' on the whole log names the root"
    ), ()


def _prefix(value: str, choices: Iterable[str]) -> str:
    """The part of ``value`` compared with the choices: no longer than the longest choice and
    a few characters more, so that the comparison's cost does not grow with the argument (a
    value far longer than every choice is close to none of them in any case)."""
    longest = max((len(choice) for choice in choices), default=0)
    return value[: longest + 8]
